"""The Bedrock grant on its own: a foundation model in the stack's region, or a cross-region inference profile
and the model behind it (which Bedrock may run in any of the profile's regions) only through that profile."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from infra.constructs.grants import grant_bedrock_model, profiled_model


@dataclass
class RoleOnly:
    """What grant_bedrock_model uses of a function: its role."""

    role: iam.Role

    def grant(self, actions: list[str], resources: list[str]) -> None:
        self.role.add_to_principal_policy(iam.PolicyStatement(actions=list(actions), resources=list(resources)))


def _statements(model_id: str, tmp_path: Any) -> tuple[list[dict[str, Any]], list[str]]:
    app = App(outdir=str(tmp_path))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = Stack(app, "Grants")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    grant_bedrock_model(RoleOnly(role), model_id)  # type: ignore[arg-type]
    findings: list[str] = []
    try:
        app.synth()
    except RuntimeError as failure:  # cdk-nag's validation
        findings.append(str(failure))
    template = Template.from_stack(stack).to_json()
    policy = next(r for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy")
    return policy["Properties"]["PolicyDocument"]["Statement"], findings


@pytest.mark.parametrize(("model_id", "model"), [
    ("amazon.nova-micro-v1:0", None), ("amazon.titan-embed-text-v2:0", None),
    ("anthropic.claude-3-haiku-20240307-v1:0", None),
    ("eu.amazon.nova-micro-v1:0", "amazon.nova-micro-v1:0"), ("us.amazon.nova-micro-v1:0", "amazon.nova-micro-v1:0"),
    ("apac.anthropic.claude-3-haiku-20240307-v1:0", "anthropic.claude-3-haiku-20240307-v1:0"),
])
def test_an_inference_profile_id_is_told_from_a_model_id(model_id: str, model: str | None) -> None:
    assert profiled_model(model_id) == model


def test_a_foundation_model_is_granted_in_the_stacks_region_only(tmp_path: Any) -> None:
    statements, findings = _statements("amazon.nova-micro-v1:0", tmp_path)
    assert findings == []
    [statement] = statements
    assert statement["Action"] == "bedrock:InvokeModel"
    resource = json.dumps(statement["Resource"])
    assert "AWS::Region" in resource and "::foundation-model/amazon.nova-micro-v1:0" in resource


def test_an_inference_profile_is_granted_with_its_model_only_through_it(tmp_path: Any) -> None:
    # Given the summary model named by its EU cross-region inference profile
    statements, findings = _statements("eu.amazon.nova-micro-v1:0", tmp_path)
    # Then the role may invoke the profile, in this account and region
    profile, model = statements
    assert profile["Action"] == model["Action"] == "bedrock:InvokeModel"
    assert "AWS::AccountId" in json.dumps(profile["Resource"])
    assert ":inference-profile/eu.amazon.nova-micro-v1:0" in json.dumps(profile["Resource"])
    # and the model behind it in any region, but only when the request comes through that profile
    assert ":bedrock:*::foundation-model/amazon.nova-micro-v1:0" in json.dumps(model["Resource"])
    assert model["Condition"]["StringEquals"]["bedrock:InferenceProfileArn"] == profile["Resource"]
    # and cdk-nag's wildcard finding is acknowledged with its reason
    assert findings == []
