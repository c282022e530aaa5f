"""Alarms: every function's errors and throttles, the API's 5xx, failed summary passes, stuck indexing.

Every alarm notifies one SNS topic when it goes off and when it is back to OK: subscribe it where your team is
paged (``agentmem:alarmEmail`` subscribes an address by email; a chat channel or a pager subscribes to the
topic's ARN, the ``AlarmTopicArn`` output), see docs/deploying.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..nag import acknowledge

PERIOD = Duration.minutes(5)


class Monitoring(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, email: str | None = None) -> None:
        super().__init__(scope, construct_id)
        self.alarms: list[cloudwatch.Alarm] = []
        self.topic = self._build_topic(email)
        self._action = actions.SnsAction(self.topic)

    def _build_topic(self, email: str | None) -> sns.Topic:
        topic = sns.Topic(self, "Topic", display_name="agentmem alarms", enforce_ssl=True)
        if email is not None:
            topic.add_subscription(subscriptions.EmailSubscription(email))
        acknowledge(
            topic, "AwsSolutions-SNS2",
            "The topic carries alarm notices (an alarm's name, state and metric), no stored data; CloudWatch "
            "cannot publish to a topic encrypted with the AWS-managed SNS key, and a customer key costs monthly.",
        )
        return topic

    def _alarm(self, construct_id: str, metric: cloudwatch.IMetric, threshold: float, description: str) -> None:
        alarm = cloudwatch.Alarm(
            self, construct_id, metric=metric, threshold=threshold, evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING, alarm_description=description,
        )
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
        self.alarms.append(alarm)

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

    def watch_queue(self, construct_id: str, queue: sqs.IQueue, description: str) -> None:
        """An alarm as soon as a message waits in a dead-letter queue."""
        self._alarm(
            construct_id, queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"), 1,
            description,
        )

    def watch_indexing(self, indexer: lambda_.Function, failed_batches: sqs.Queue) -> None:
        self.watch_queue(
            "IndexerFailedBatches", failed_batches,
            "agentmem indexer: stream records failed every retry and wait in the failure queue",
        )
        self._alarm(
            "IndexerLag",
            indexer.metric("IteratorAge", period=PERIOD, statistic="Maximum"), Duration.minutes(5).to_milliseconds(),
            "agentmem indexer: the search index is more than 5 minutes behind the table",
        )
