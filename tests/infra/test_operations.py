"""Operations: every alarm notifies one SNS topic (an email subscription when asked for), the compaction
schedule's target has a dead-letter queue that is alarmed on, and each function's reserved concurrency is a
setting (unset: unreserved)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import FUNCTIONS, ROOT, DeploymentConfig, InfraConfigError


def _one(synthesis: Any, kind: str) -> tuple[str, dict[str, Any]]:
    (found,) = synthesis.resources("Stateless", kind).items()
    return found


def _functions(synthesis: Any) -> dict[str, dict[str, Any]]:
    properties: dict[str, dict[str, Any]] = {name: synthesis.function(name)["Properties"] for name in FUNCTIONS}
    return properties


def test_every_alarm_notifies_the_topic_when_it_fires_and_when_it_clears(each_synthesis: Any) -> None:
    topic_id, _topic = _one(each_synthesis, "AWS::SNS::Topic")
    alarms = each_synthesis.resources("Stateless", "AWS::CloudWatch::Alarm")
    assert len(alarms) >= 14
    for logical_id, alarm in alarms.items():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}], logical_id
        assert alarm["Properties"]["OKActions"] == [{"Ref": topic_id}], logical_id
    # and the deployer finds the topic to subscribe to among the stack's outputs
    outputs = each_synthesis.templates["Stateless"]["Outputs"]
    assert outputs["AlarmTopicArn"]["Value"] == {"Ref": topic_id}
    # and the topic takes only TLS publishers (cdk-nag SNS3)
    policies = each_synthesis.resources("Stateless", "AWS::SNS::TopicPolicy").values()
    statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
    assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
               for s in statements)


def test_the_alarm_email_is_subscribed_only_when_given(synthesis: Any, small_synthesis: Any) -> None:
    assert synthesis.resources("Stateless", "AWS::SNS::Subscription") == {}
    topic_id, _ = _one(small_synthesis, "AWS::SNS::Topic")
    _, subscription = _one(small_synthesis, "AWS::SNS::Subscription")
    assert subscription["Properties"] == {
        "Protocol": "email", "Endpoint": "oncall@example.com", "TopicArn": {"Ref": topic_id},
    }


def test_the_compaction_schedule_has_a_dead_letter_queue_that_alarms(each_synthesis: Any) -> None:
    # Given the schedule's rule
    _, rule = _one(each_synthesis, "AWS::Events::Rule")
    (target,) = rule["Properties"]["Targets"]
    # Then its target retries, and puts what it could not deliver into a queue of the stack
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 600}
    queue_arn = target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"]
    assert queue_arn[1] == "Arn"
    queues = each_synthesis.resources("Stateless", "AWS::SQS::Queue")
    assert queue_arn[0] in queues and queue_arn[0].startswith("CompactionFailedSweeps")
    assert queues[queue_arn[0]]["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    # and EventBridge may send to it, from this rule only
    policies = each_synthesis.resources("Stateless", "AWS::SQS::QueuePolicy").values()
    allowed = [s for p in policies if {"Ref": queue_arn[0]} in p["Properties"]["Queues"]
               for s in p["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    assert [s["Principal"] for s in allowed] == [{"Service": "events.amazonaws.com"}]
    assert "aws:SourceArn" in allowed[0]["Condition"]["ArnEquals"]
    # and a message waiting there is an alarm
    alarms = each_synthesis.resources("Stateless", "AWS::CloudWatch::Alarm").values()
    watching = [a["Properties"] for a in alarms if a["Properties"].get("Namespace") == "AWS/SQS"
                and a["Properties"]["Dimensions"][0]["Value"] == {"Fn::GetAtt": [queue_arn[0], "QueueName"]}]
    assert len(watching) == 1 and watching[0]["Threshold"] == 1


def test_functions_are_unreserved_unless_configured(synthesis: Any, small_synthesis: Any) -> None:
    assert all("ReservedConcurrentExecutions" not in f for f in _functions(synthesis).values())
    reserved = {name: f.get("ReservedConcurrentExecutions") for name, f in _functions(small_synthesis).items()}
    assert reserved == {"api": 40, "mcp": None, "authorizer": 10, "indexer": None, "summarise": None,
                        "compaction": None}


def test_every_function_has_its_reserved_concurrency_setting() -> None:
    assert set(FUNCTIONS) == {path.parent.name for path in ROOT.glob("functions/*/handler.py")}
    for name in FUNCTIONS:
        config = DeploymentConfig.from_context({f"agentmem:{name}ReservedConcurrency": "5"}.get)
        assert config.reserved_concurrency(name) == 5
        assert all(config.reserved_concurrency(other) is None for other in FUNCTIONS if other != name)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("agentmem:apiReservedConcurrency", "0", "at least 1"),
    ("agentmem:mcpReservedConcurrency", "-3", "at least 1"),
    ("agentmem:indexerReservedConcurrency", "many", "not valid"),
    ("agentmem:alarmEmail", "not-an-address", "email address"),
    ("agentmem:searchCollection", "maybe", "true or false"),
])
def test_a_bad_operations_setting_stops_synthesis_with_its_name(key: str, value: str, message: str) -> None:
    with pytest.raises(InfraConfigError, match=message) as raised:
        DeploymentConfig.from_context({key: value}.get)
    assert key.removeprefix("agentmem:") in str(raised.value)
