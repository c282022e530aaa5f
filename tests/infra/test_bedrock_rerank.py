"""Bedrock re-ranking on AWS (``agentmem:rerankModelId``): off by default; on, the API function is told to re-rank
deep journal searches with that model and its role may call the rerank API and invoke that model, no more, with
cdk-nag's findings acknowledged."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentmem.adapters.aws.bedrock_reranker import BedrockReranker
from agentmem.bootstrap import build_reranker
from agentmem.settings import Settings

from infra.config import DeploymentConfig, InfraConfigError
from tests.infra.conftest import Synthesis, synthesise

MODEL = "cohere.rerank-v3-5:0"


@pytest.fixture(scope="module")
def reranking(tmp_path_factory: pytest.TempPathFactory) -> Synthesis:
    return synthesise(tmp_path_factory, {"agentmem:rerankModelId": MODEL})


def _bedrock_statements(synthesis: Synthesis, name: str) -> list[dict[str, Any]]:
    role = synthesis.function(name)["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for policy in synthesis.resources("Stateless", "AWS::IAM::Policy").values()
        if any(r.get("Ref") == role for r in policy["Properties"].get("Roles", []))
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "bedrock:" in json.dumps(statement["Action"])
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return list(action) if isinstance(action, list) else [action]


def test_rerank_is_off_by_default(synthesis: Synthesis) -> None:
    api = synthesis.function("api")["Properties"]["Environment"]["Variables"]
    assert "AGENTMEM_RERANKER" not in api and "AGENTMEM_RERANK_MODEL_ID" not in api
    assert not any("bedrock:Rerank" in json.dumps(s["Action"]) for s in _bedrock_statements(synthesis, "api"))


def test_the_api_function_reranks_with_the_model_it_may_invoke(reranking: Synthesis) -> None:
    # Given the stack synthesised with Cohere Rerank 3.5
    env = reranking.function("api")["Properties"]["Environment"]["Variables"]
    # Then the API function is told to re-rank on Bedrock with it, and builds that reranker in the stack's region
    assert (env["AGENTMEM_RERANKER"], env["AGENTMEM_RERANK_MODEL_ID"]) == ("bedrock", MODEL)
    reranker = build_reranker(Settings(reranker=env["AGENTMEM_RERANKER"],
                                       rerank_model_id=env["AGENTMEM_RERANK_MODEL_ID"], region="eu-central-1"))
    assert isinstance(reranker, BedrockReranker)
    assert reranker.model_arn == f"arn:aws:bedrock:eu-central-1::foundation-model/{MODEL}"
    # and its role may call the rerank API (which takes no resource) and invoke that model in its region
    statements = _bedrock_statements(reranking, "api")
    on_anything = {a for s in statements if s["Resource"] == "*" for a in _actions(s) if a.startswith("bedrock:")}
    assert on_anything == {"bedrock:Rerank"}  # (CDK merges it into the tracing statement on *)
    invoked = json.dumps([s["Resource"] for s in statements if _actions(s) == ["bedrock:InvokeModel"]])
    assert f"::foundation-model/{MODEL}" in invoked and "AWS::Region" in invoked
    # and no other function re-ranks
    for name in ("mcp", "indexer", "authorizer", "summarise", "compaction"):
        assert "AGENTMEM_RERANKER" not in reranking.function(name)["Properties"]["Environment"]["Variables"]
        assert not any("bedrock:Rerank" in json.dumps(s["Action"]) for s in _bedrock_statements(reranking, name))
    # and cdk-nag's wildcard finding is acknowledged with the reason
    assert reranking.error is None, reranking.error
    assert any("bedrock:Rerank" in reason for reason in reranking.acknowledged.values())


def test_only_bedrocks_rerank_models_are_accepted() -> None:
    DeploymentConfig.from_context(lambda key: {"agentmem:rerankModelId": "amazon.rerank-v1:0"}.get(key))
    with pytest.raises(InfraConfigError, match="rerankModelId"):
        DeploymentConfig.from_context(lambda key: {"agentmem:rerankModelId": "amazon.titan-embed-text-v2:0"}.get(key))
