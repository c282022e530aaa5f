"""Least-privilege grants, spelled out: each function gets named actions on named resources.

CDK's ``grant_read_write_data`` and friends hand out more than a function uses (Scan, DescribeTable,
every index); these helpers list the actions and the table's own indexes by name.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from ..nag import acknowledge
from ..table_schema import gsi_names
from .function import AgentmemFunction

TABLE_READ = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem")
TABLE_WRITE = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem")
TABLE_KEY_LOOKUP = ("dynamodb:GetItem",)
TABLE_COUNTER_UPDATE = ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem")

OBJECT_READ = ("s3:GetObject",)
OBJECT_WRITE = ("s3:PutObject",)
OBJECT_DELETE = ("s3:DeleteObject",)
BUCKET_LIST = ("s3:ListBucket",)

OBJECTS_REASON = (
    "Object keys are chosen at run time (journal/{account}/{agent}/..., workspace paths), so the object "
    "actions are granted on this one bucket's objects ({bucket}/*), never on other buckets."
)


def grant_table(fn: AgentmemFunction, table: dynamodb.ITable, actions: Sequence[str], *, indexes: bool = True) -> None:
    """``actions`` on the table and, with ``indexes``, on its global secondary indexes by name."""
    resources = [table.table_arn]
    if indexes:
        resources += [f"{table.table_arn}/index/{name}" for name in gsi_names()]
    fn.grant(actions, resources)


def grant_bucket(
    fn: AgentmemFunction, bucket: s3.IBucket, object_actions: Sequence[str], *, arn_label: str,
    list_objects: bool = False,
) -> None:
    """``object_actions`` on the bucket's objects; ``arn_label`` is how cdk-nag names the bucket's ARN."""
    fn.grant(object_actions, [bucket.arn_for_objects("*")])
    if list_objects:
        fn.grant(BUCKET_LIST, [bucket.bucket_arn])
    acknowledge(fn.role, f"AwsSolutions-IAM5[Resource::{arn_label}/*]", OBJECTS_REASON)


def grant_start_execution(fn: AgentmemFunction, state_machine_arn: str) -> None:
    fn.grant(["states:StartExecution"], [state_machine_arn])


# the geography prefixes of Bedrock's system-defined cross-region inference profiles ("eu.amazon.nova-micro-v1:0")
PROFILE_GEOGRAPHIES = frozenset({"us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"})
PROFILE_REASON = (
    "A cross-region inference profile sends each request to the model in one of the profile's destination "
    "regions, chosen by Bedrock at run time, so the foundation model is granted in every region; the "
    "condition allows it only through this one inference profile."
)


def profiled_model(model_id: str) -> str | None:
    """The foundation model behind a cross-region inference profile id (``eu.amazon.nova-micro-v1:0`` →
    ``amazon.nova-micro-v1:0``), or None when ``model_id`` names a foundation model itself."""
    geography, _, model = model_id.partition(".")
    return model if geography in PROFILE_GEOGRAPHIES and "." in model else None


def grant_bedrock_model(fn: AgentmemFunction, model_id: str) -> None:
    """``bedrock:InvokeModel`` (what Converse and InvokeModel both need) on exactly this model: its
    foundation-model ARN in the stack's region, or for an inference profile id the profile, and the model
    behind it in the profile's destination regions only through that profile."""
    model = profiled_model(model_id)
    if model is None:
        fn.grant(["bedrock:InvokeModel"], [f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{model_id}"])
        return
    profile = f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}:{Aws.ACCOUNT_ID}:inference-profile/{model_id}"
    fn.grant(["bedrock:InvokeModel"], [profile])
    fn.role.add_to_principal_policy(iam.PolicyStatement(
        actions=["bedrock:InvokeModel"], resources=[f"arn:{Aws.PARTITION}:bedrock:*::foundation-model/{model}"],
        conditions={"StringEquals": {"bedrock:InferenceProfileArn": profile}},
    ))
    acknowledge(fn.role, f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{model}]",
                PROFILE_REASON)


RERANK_REASON = (
    "bedrock:Rerank takes no resource (IAM has no resource type for it); the model it runs is granted by ARN "
    "with bedrock:InvokeModel."
)


def grant_bedrock_rerank(fn: AgentmemFunction, model_id: str) -> None:
    """Bedrock's rerank API with ``model_id``: ``bedrock:Rerank``, which IAM grants only on ``*``, and
    ``bedrock:InvokeModel`` on the model, which the API requires besides."""
    fn.grant(["bedrock:Rerank"], ["*"])
    fn.acknowledge_wildcard(RERANK_REASON)
    grant_bedrock_model(fn, model_id)
