"""Alarms: every function's errors and throttles, the API's 5xx, failed summary passes, stuck indexing.

The alarms have no actions: subscribe them where your team is paged (an SNS topic, a chat channel),
see docs/deploying.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

PERIOD = Duration.minutes(5)


class Monitoring(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.alarms: list[cloudwatch.Alarm] = []

    def _alarm(self, construct_id: str, metric: cloudwatch.IMetric, threshold: float, description: str) -> None:
        self.alarms.append(
            cloudwatch.Alarm(
                self, construct_id, metric=metric, threshold=threshold, evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING, alarm_description=description,
            )
        )

    def watch_functions(self, functions: Sequence[tuple[str, lambda_.Function, int]]) -> None:
        """(name, function, error threshold per 5 minutes) for each function."""
        for name, function, error_threshold in functions:
            self._alarm(
                f"{name}Errors", function.metric_errors(period=PERIOD, statistic="Sum"), error_threshold,
                f"agentmem {name}: at least {error_threshold} invocation error(s) in 5 minutes",
            )
            self._alarm(
                f"{name}Throttles", function.metric_throttles(period=PERIOD, statistic="Sum"), 1,
                f"agentmem {name}: invocations throttled (account or reserved concurrency exhausted)",
            )

    def watch_api(self, api: apigw.RestApi) -> None:
        self._alarm(
            "Api5xx", api.metric_server_error(period=PERIOD, statistic="Sum"), 1,
            "agentmem API: a 5xx answer (SPEC §10: never a 5xx for bad input; this is a fault)",
        )

    def watch_state_machine(self, machine: sfn.StateMachine) -> None:
        self._alarm(
            "SummaryPassesFailed", machine.metric_failed(period=PERIOD, statistic="Sum"), 1,
            "agentmem summary pass: an execution failed after its retries",
        )
        self._alarm(
            "SummaryPassesTimedOut", machine.metric_timed_out(period=PERIOD, statistic="Sum"), 1,
            "agentmem summary pass: an execution timed out",
        )

    def watch_indexing(self, indexer: lambda_.Function, failed_batches: sqs.Queue) -> None:
        self._alarm(
            "IndexerFailedBatches",
            failed_batches.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"), 1,
            "agentmem indexer: stream records failed every retry and wait in the failure queue",
        )
        self._alarm(
            "IndexerLag",
            indexer.metric("IteratorAge", period=PERIOD, statistic="Maximum"), Duration.minutes(5).to_milliseconds(),
            "agentmem indexer: the search index is more than 5 minutes behind the table",
        )
