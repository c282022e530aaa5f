"""The stateful stack: the table, the buckets and the search collection keep data safely."""

from __future__ import annotations

import json
from typing import Any

from agentmem.adapters.aws.dynamodb.table import table_definition
from aws_cdk.assertions import Match

from infra.table_schema import PARTITION_KEY, SORT_KEY, TABLE_GSIS, TTL_ATTRIBUTE


def test_table_has_string_keys_ttl_stream_and_point_in_time_recovery(stateful: Any) -> None:
    # Given the synthesised stateful stack, Then the single table is on-demand, keyed PK/SK,
    # expires rows by `ttl`, streams both images to the indexer and can be restored to any second
    stateful.resource_count_is("AWS::DynamoDB::Table", 1)
    stateful.has_resource_properties("AWS::DynamoDB::Table", {
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": Match.array_with([
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SORT_KEY, "AttributeType": "S"},
        ]),
        "TimeToLiveSpecification": {"AttributeName": TTL_ATTRIBUTE, "Enabled": True},
        "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "DeletionProtectionEnabled": True,
    })


def test_table_is_retained_when_the_stack_goes(stateful: Any) -> None:
    stateful.has_resource("AWS::DynamoDB::Table", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})


def test_table_mirrors_the_adapter_table_definition(synthesis: Any) -> None:
    # Given the adapter's own CreateTable arguments (what local AWS mode creates), Then the CDK table
    # has the same keys, attribute types, indexes, projections and stream
    expected = table_definition("agentmem")
    (table,) = synthesis.resources("Stateful", "AWS::DynamoDB::Table").values()
    props = table["Properties"]
    assert props["KeySchema"] == expected["KeySchema"]
    assert sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == sorted(
        expected["AttributeDefinitions"], key=lambda a: a["AttributeName"]
    )
    assert props["StreamSpecification"]["StreamViewType"] == expected["StreamSpecification"]["StreamViewType"]
    assert props["BillingMode"] == expected["BillingMode"]

    def normalised(indexes: list[dict[str, Any]]) -> dict[str, Any]:
        found = {}
        for index in indexes:
            projection = dict(index["Projection"])
            if "NonKeyAttributes" in projection:
                projection["NonKeyAttributes"] = sorted(projection["NonKeyAttributes"])
            found[index["IndexName"]] = {"KeySchema": index["KeySchema"], "Projection": projection}
        return found

    assert normalised(props["GlobalSecondaryIndexes"]) == normalised(expected["GlobalSecondaryIndexes"])
    assert {index.name for index in TABLE_GSIS} == set(normalised(expected["GlobalSecondaryIndexes"]))


def _buckets(synthesis: Any) -> dict[str, dict[str, Any]]:
    return synthesis.resources("Stateful", "AWS::S3::Bucket")


def _data_buckets(synthesis: Any) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in _buckets(synthesis).items() if "LoggingConfiguration" in v["Properties"]}


def test_every_bucket_is_encrypted_private_and_retained(synthesis: Any) -> None:
    buckets = _buckets(synthesis)
    assert len(buckets) == 3  # journal, workspace, their access logs
    for name, bucket in buckets.items():
        props = bucket["Properties"]
        assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"][
            "SSEAlgorithm"
        ] in ("AES256", "aws:kms"), name
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True, "RestrictPublicBuckets": True,
        }, name
        assert bucket["DeletionPolicy"] == "Retain", name


def test_every_bucket_refuses_plain_http(synthesis: Any) -> None:
    buckets = _buckets(synthesis)
    policies = synthesis.resources("Stateful", "AWS::S3::BucketPolicy").values()
    guarded = set()
    for policy in policies:
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            insecure = statement.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
            if statement["Effect"] == "Deny" and insecure:
                guarded.add(policy["Properties"]["Bucket"]["Ref"])
    assert guarded == set(buckets)


def test_data_buckets_are_versioned_log_their_access_and_clean_up(synthesis: Any) -> None:
    data = _data_buckets(synthesis)
    assert len(data) == 2  # journal and workspace
    for name, bucket in data.items():
        props = bucket["Properties"]
        assert props["VersioningConfiguration"] == {"Status": "Enabled"}, name
        rules = props["LifecycleConfiguration"]["Rules"]
        assert any(r.get("AbortIncompleteMultipartUpload", {}).get("DaysAfterInitiation") == 1 for r in rules), name
        assert any("NoncurrentVersionExpiration" in r for r in rules), name
        assert props["LoggingConfiguration"]["DestinationBucketName"]["Ref"] in _buckets(synthesis)


def test_workspace_bucket_accepts_presigned_browser_uploads(stateful: Any) -> None:
    stateful.has_resource_properties("AWS::S3::Bucket", {
        "CorsConfiguration": {"CorsRules": Match.array_with([Match.object_like({
            "AllowedMethods": Match.array_with(["GET", "PUT"]),
        })])},
    })


def test_the_console_may_upload_to_the_workspace_bucket_from_the_apis_origin(synthesis: Any) -> None:
    # Given the workspace bucket (the one bucket with CORS)
    (bucket,) = [b for b in synthesis.resources("Stateful", "AWS::S3::Bucket").values()
                 if "CorsConfiguration" in b["Properties"]]
    rules = {rule.get("Id"): rule for rule in bucket["Properties"]["CorsConfiguration"]["CorsRules"]}
    # Then a rule of its own lets the console's page, on the REST API's origin in the stack's region, PUT (or
    # POST) a file with its type to an upload link, and read the ETag S3 answers
    console = rules["console-uploads"]
    assert sorted(console["AllowedMethods"]) == ["POST", "PUT"]
    assert console["AllowedHeaders"] == ["content-type"]
    assert console["ExposedHeaders"] == ["ETag"]
    (origin,) = console["AllowedOrigins"]
    assert origin == {"Fn::Join": ["", [
        "https://*.execute-api.", {"Ref": "AWS::Region"}, ".", {"Ref": "AWS::URLSuffix"},
    ]]}


def test_the_consoles_rule_stays_when_the_workspace_origins_are_narrowed() -> None:
    # Given a deployment that lets only its own site use workspace links from a browser
    from aws_cdk import App, Stack
    from aws_cdk.assertions import Template

    from infra.application import cdk_json_context
    from infra.config import DeploymentConfig
    from infra.constructs.storage import Storage

    stack = Stack(App(context=cdk_json_context()), "Narrow")  # the app's feature flags
    Storage(stack, "Storage", config=DeploymentConfig(workspace_cors_origins=("https://app.example",)))
    (bucket,) = [b for b in Template.from_stack(stack).find_resources("AWS::S3::Bucket").values()
                 if "CorsConfiguration" in b["Properties"]]
    origins = [rule["AllowedOrigins"] for rule in bucket["Properties"]["CorsConfiguration"]["CorsRules"]]
    # Then the console's origin is still allowed beside it
    assert ["https://app.example"] in origins
    assert any("execute-api" in str(o) for o in origins)


def test_collection_is_vectorsearch_with_encryption_and_network_policies(synthesis: Any, stateful: Any) -> None:
    stateful.has_resource_properties(
        "AWS::OpenSearchServerless::Collection", {"Type": "VECTORSEARCH", "Name": "agentmem"}
    )
    (collection,) = synthesis.resources("Stateful", "AWS::OpenSearchServerless::Collection").values()
    policies = synthesis.resources("Stateful", "AWS::OpenSearchServerless::SecurityPolicy")
    by_type = {p["Properties"]["Type"]: p for p in policies.values()}
    assert set(by_type) == {"encryption", "network"}
    # the collection is created after both (an encryption policy must exist first)
    assert set(collection["DependsOn"]) == set(policies)
    encryption = json.loads(by_type["encryption"]["Properties"]["Policy"])
    assert encryption["AWSOwnedKey"] is True
    assert encryption["Rules"][0]["Resource"] == ["collection/agentmem"]
    network = json.loads(by_type["network"]["Properties"]["Policy"])
    assert network[0]["Rules"][0]["Resource"] == ["collection/agentmem"]


def test_stateful_stack_exports_what_the_stateless_stack_imports(synthesis: Any) -> None:
    exported = {o["Export"]["Name"] for o in synthesis.templates["Stateful"]["Outputs"].values() if "Export" in o}
    imported = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "Fn::ImportValue" in node:
                imported.add(node["Fn::ImportValue"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(synthesis.templates["Stateless"])
    assert imported and imported <= exported
