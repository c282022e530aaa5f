"""Alarms: each function's errors and throttles, the API's 5xx, failed summary passes, indexing."""

from __future__ import annotations

from typing import Any

FUNCTION_PREFIXES = ("ApiFunction", "ApiMcpFunction", "ApiAuthorizerFunction", "IndexerFunction",
                     "SummariesSummariseFunction", "CompactionFunction")


def _alarms(synthesis: Any) -> list[dict[str, Any]]:
    return [a["Properties"] for a in synthesis.resources("Stateless", "AWS::CloudWatch::Alarm").values()]


def _function_of(alarm: dict[str, Any]) -> str:
    (dimension,) = alarm["Dimensions"]
    return str(dimension["Value"]["Ref"])


def test_every_function_alarms_on_errors_and_throttles(synthesis: Any) -> None:
    lambda_alarms = [a for a in _alarms(synthesis) if a.get("Namespace") == "AWS/Lambda"]
    for prefix in FUNCTION_PREFIXES:
        metrics = {a["MetricName"] for a in lambda_alarms if _function_of(a).startswith(prefix)}
        assert {"Errors", "Throttles"} <= metrics, prefix


def test_api_alarms_on_any_5xx(synthesis: Any) -> None:
    (api,) = [a for a in _alarms(synthesis) if a.get("Namespace") == "AWS/ApiGateway"]
    assert api["MetricName"] == "5XXError"
    assert api["Threshold"] == 1 and api["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_failed_summary_passes_and_stuck_indexing_alarm(synthesis: Any) -> None:
    metrics = {(a.get("Namespace"), a["MetricName"]) for a in _alarms(synthesis)}
    assert ("AWS/States", "ExecutionsFailed") in metrics
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible") in metrics
    assert ("AWS/Lambda", "IteratorAge") in metrics
