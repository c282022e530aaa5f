"""What runs in the background: the indexer on the stream, the summary state machine, the schedule."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Match

from infra.constructs.summary_state_machine import FAILED_STATE, STATE_NAMES, STEPS, summary_definition


def _definition(synthesis: Any) -> dict[str, Any]:
    """The deployed ASL, with the function ARN tokens replaced by a marker."""
    (machine,) = synthesis.resources("Stateless", "AWS::StepFunctions::StateMachine").values()
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    return json.loads("".join(p if isinstance(p, str) else "FUNCTION_ARN" for p in parts))


def test_deployed_state_machine_is_the_exported_definition(synthesis: Any) -> None:
    # Given the ASL the tests' moto harness builds, Then the CDK deploys exactly that document
    assert _definition(synthesis) == summary_definition("FUNCTION_ARN", task_timeout_seconds=300)


def test_summary_pass_runs_flush_summarise_checkpoint_in_order(synthesis: Any) -> None:
    definition = _definition(synthesis)
    order, state = [], definition["States"][definition["StartAt"]]["Next"]
    while definition["States"][state]["Type"] == "Task":
        order.append(state)
        state = definition["States"][state]["Next"]
    assert order == [STATE_NAMES[s] for s in STEPS]
    assert definition["States"][state]["Type"] == "Succeed"


def test_each_step_is_a_retried_lambda_task_with_a_catch(synthesis: Any) -> None:
    definition = _definition(synthesis)
    for step in STEPS:
        task = definition["States"][STATE_NAMES[step]]
        assert task["Resource"] == "FUNCTION_ARN"
        assert task["Parameters"]["step"] == step
        retried = {error for retry in task["Retry"] for error in retry["ErrorEquals"]}
        assert {"Lambda.ServiceException", "Lambda.TooManyRequestsException", "States.TaskFailed"} <= retried
        assert all(retry["MaxAttempts"] >= 2 and retry["BackoffRate"] > 1 for retry in task["Retry"])
        assert task["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": FAILED_STATE}]
    assert definition["States"][FAILED_STATE]["Type"] == "Fail"


def test_state_machine_is_standard_logged_traced_and_may_invoke_only_its_task(synthesis: Any, stateless: Any) -> None:
    stateless.has_resource_properties("AWS::StepFunctions::StateMachine", {
        "StateMachineType": "STANDARD",
        "TracingConfiguration": {"Enabled": True},
        "LoggingConfiguration": Match.object_like({"Level": "ALL", "IncludeExecutionData": False}),
    })
    invokes = [
        statement for policy in synthesis.resources("Stateless", "AWS::IAM::Policy").values()
        if policy["Properties"]["Roles"][0]["Ref"].startswith("SummariesStateMachineRole")
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "lambda:InvokeFunction"
    ]
    assert invokes == [{
        "Action": "lambda:InvokeFunction", "Effect": "Allow",
        "Resource": {"Fn::GetAtt": [Match_prefix(synthesis, "SummariesSummariseFunction"), "Arn"]},
    }]


def Match_prefix(synthesis: Any, prefix: str) -> str:
    (logical_id,) = [k for k in synthesis.resources("Stateless", "AWS::Lambda::Function") if k.startswith(prefix)]
    return logical_id


def test_compaction_runs_every_15_minutes(stateless: Any) -> None:
    stateless.has_resource_properties("AWS::Events::Rule", {
        "ScheduleExpression": "rate(15 minutes)",
        "State": "ENABLED",
        "Targets": [Match.object_like({
            "Arn": {"Fn::GetAtt": [Match.string_like_regexp("^CompactionFunction"), "Arn"]},
            "RetryPolicy": Match.object_like({"MaximumRetryAttempts": 2}),
        })],
    })


def test_indexer_reads_the_table_stream_with_bisecting_retries_and_a_failure_queue(stateless: Any) -> None:
    stateless.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": {"Fn::ImportValue": "agentmem:table-stream-arn"},
        "FunctionName": {"Ref": Match.string_like_regexp("^IndexerFunction")},
        "StartingPosition": "TRIM_HORIZON",
        "BisectBatchOnFunctionError": True,
        "MaximumRetryAttempts": 5,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "DestinationConfig": {
            "OnFailure": {"Destination": {"Fn::GetAtt": [Match.string_like_regexp("FailedBatches"), "Arn"]}}
        },
    })


def test_collection_data_access_policy_grants_the_api_and_indexer_roles(synthesis: Any) -> None:
    (policy,) = synthesis.resources("Stateless", "AWS::OpenSearchServerless::AccessPolicy").values()
    assert policy["Properties"]["Type"] == "data"
    parts = policy["Properties"]["Policy"]["Fn::Join"][1]
    document = json.loads("".join(p if isinstance(p, str) else p["Fn::GetAtt"][0] for p in parts))
    by_rule = {rule["Description"]: rule for rule in document}
    readers = sorted(by_rule["read"]["Principal"])
    (writer,) = by_rule["index"]["Principal"]
    # the API and the MCP function recall (read); only the indexer writes
    assert len(readers) == 2 and readers[0].startswith("ApiMcpRole") and readers[1].startswith("ApiRole")
    assert writer.startswith("IndexerRole")
    index_rules = [r for r in by_rule["index"]["Rules"] if r["ResourceType"] == "index"]
    assert "aoss:WriteDocument" in index_rules[0]["Permission"]
    read_rules = [r for r in by_rule["read"]["Rules"] if r["ResourceType"] == "index"]
    assert "aoss:WriteDocument" not in read_rules[0]["Permission"]


def test_both_roles_may_set_up_the_collections_indexes(synthesis: Any) -> None:
    # Given the data-access policy: nothing creates the index by hand, the first caller that finds it missing
    # (the indexer before its first write, the API on a query) creates it or adds the fields it lacks
    (policy,) = synthesis.resources("Stateless", "AWS::OpenSearchServerless::AccessPolicy").values()
    parts = policy["Properties"]["Policy"]["Fn::Join"][1]
    document = json.loads("".join(p if isinstance(p, str) else p["Fn::GetAtt"][0] for p in parts))
    setup = {"aoss:CreateIndex", "aoss:DescribeIndex", "aoss:UpdateIndex"}
    for rule in document:
        (index_rule,) = [r for r in rule["Rules"] if r["ResourceType"] == "index"]
        # Then each role may create, describe and update the indexes of this collection, and no other's
        assert setup <= set(index_rule["Permission"]), rule["Description"]
        assert index_rule["Resource"] == ["index/agentmem/*"]
        assert "aoss:DeleteIndex" not in index_rule["Permission"]


def test_moto_creates_the_same_state_machine_from_the_exported_definition() -> None:
    # Given the definition the test harness uses, When it is created on moto, Then moto keeps it as is
    import boto3
    from moto import mock_aws

    arn = "arn:aws:lambda:us-east-1:123456789012:function:agentmem-summarise"
    with mock_aws():
        client = boto3.client("stepfunctions", region_name="us-east-1")
        created = client.create_state_machine(
            name="agentmem-summary", definition=json.dumps(summary_definition(arn)),
            roleArn="arn:aws:iam::123456789012:role/agentmem-summary",
        )
        described = client.describe_state_machine(stateMachineArn=created["stateMachineArn"])
    assert json.loads(described["definition"]) == summary_definition(arn)
