"""A small install (``agentmem:searchCollection=false``): no OpenSearch Serverless collection and nothing wired to
one, no embedding model granted, and the stream consumer kept for the TTL removals it counts."""

from __future__ import annotations

import json
from typing import Any

from infra.config import FUNCTIONS


def _policies_of(synthesis: Any, function: str) -> list[dict[str, Any]]:
    role = synthesis.function(function)["Properties"]["Role"]["Fn::GetAtt"][0]
    return [s for p in synthesis.resources("Stateless", "AWS::IAM::Policy").values()
            if any(r.get("Ref") == role for r in p["Properties"].get("Roles", []))
            for s in p["Properties"]["PolicyDocument"]["Statement"]]


def _kinds(template: dict[str, Any]) -> set[str]:
    return {r["Type"] for r in template["Resources"].values()}


def test_the_default_install_has_the_collection_and_its_wiring(synthesis: Any) -> None:
    # the comparison that makes the small install's absences mean something
    assert {"AWS::OpenSearchServerless::Collection", "AWS::OpenSearchServerless::SecurityPolicy"} <= _kinds(
        synthesis.templates["Stateful"])
    assert "AWS::OpenSearchServerless::AccessPolicy" in _kinds(synthesis.templates["Stateless"])
    assert {"CollectionArn", "CollectionEndpoint"} <= set(synthesis.templates["Stateful"]["Outputs"])
    assert "aoss:APIAccessAll" in json.dumps(_policies_of(synthesis, "api"))
    assert "AGENTMEM_OPENSEARCH_ENDPOINT" in synthesis.function("indexer")["Properties"]["Environment"]["Variables"]


def test_a_small_install_has_no_collection_and_nothing_wired_to_one(small_synthesis: Any) -> None:
    stateful, stateless = small_synthesis.templates["Stateful"], small_synthesis.templates["Stateless"]
    # Then neither stack holds an OpenSearch Serverless resource, and no collection is exported or imported
    for template in (stateful, stateless):
        assert not {k for k in _kinds(template) if k.startswith("AWS::OpenSearchServerless::")}
    assert not {o for o in stateful["Outputs"] if o.startswith("Collection")}
    assert ":collection-" not in json.dumps(stateless)  # no import of its exports (agentmem:collection-arn)
    # and no function reaches a collection, embeds, or may invoke the embedding model
    for name in FUNCTIONS:
        variables = small_synthesis.function(name)["Properties"]["Environment"]["Variables"]
        assert "AGENTMEM_OPENSEARCH_ENDPOINT" not in variables, name
        assert variables["AGENTMEM_EMBEDDER"] == "none", name
        assert not {k for k in variables if k.startswith("AGENTMEM_EMBEDDING_")}, name
        statements = json.dumps(_policies_of(small_synthesis, name))
        assert "aoss:" not in statements and "titan-embed" not in statements, name


def test_a_small_install_keeps_the_stream_consumer_for_ttl_removals_only(small_synthesis: Any) -> None:
    # Given the indexer's stream subscription
    (mapping,) = small_synthesis.resources("Stateless", "AWS::Lambda::EventSourceMapping").values()
    # Then only the removals DynamoDB's TTL made invoke it
    (pattern,) = mapping["Properties"]["FilterCriteria"]["Filters"]
    assert json.loads(pattern["Pattern"]) == {
        "eventName": ["REMOVE"], "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
    }
    # and it still counts them out of the layer counters (its one table grant), with its failure queue
    statements = _policies_of(small_synthesis, "indexer")
    assert any("dynamodb:UpdateItem" in json.dumps(s["Action"]) for s in statements)
    assert mapping["Properties"]["DestinationConfig"]["OnFailure"]["Destination"]


def test_the_default_install_indexes_every_record(synthesis: Any) -> None:
    (mapping,) = synthesis.resources("Stateless", "AWS::Lambda::EventSourceMapping").values()
    assert "FilterCriteria" not in mapping["Properties"]
