"""Workspace download links on the deployed stack: a CloudFront distribution in front of the workspace bucket that
takes only signed requests, its key group's key made at deploy time with the private half in a secret, the bucket
reachable only through the distribution's origin access control, and the secret readable only by what signs."""

from __future__ import annotations

import json
from typing import Any

import pytest

CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"  # CloudFront's managed CachingDisabled policy


def _one(synthesis: Any, kind: str, stack: str = "Stateful") -> tuple[str, dict[str, Any]]:
    found = synthesis.resources(stack, kind)
    assert len(found) == 1, (kind, list(found))
    return next(iter(found.items()))


def _workspace_bucket(synthesis: Any) -> str:
    buckets = synthesis.resources("Stateful", "AWS::S3::Bucket")
    (logical_id,) = [k for k, v in buckets.items() if "CorsConfiguration" in v["Properties"]]
    return logical_id


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def _statements(synthesis: Any, stack: str, kind: str = "AWS::IAM::Policy") -> list[tuple[str, dict[str, Any]]]:
    return [
        (logical_id, statement)
        for logical_id, policy in synthesis.resources(stack, kind).items()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


@pytest.mark.parametrize("install", ["synthesis", "small_synthesis"])
def test_the_distribution_serves_the_workspace_bucket_through_origin_access_control(
    request: pytest.FixtureRequest, install: str
) -> None:
    synthesis = request.getfixturevalue(install)
    # Given the stateful stack (a small install has the links too), Then one distribution has one S3 origin,
    # the workspace bucket, reached with an origin access control that signs every request with SigV4
    distribution_id, distribution = _one(synthesis, "AWS::CloudFront::Distribution")
    control_id, control = _one(synthesis, "AWS::CloudFront::OriginAccessControl")
    config = distribution["Properties"]["DistributionConfig"]
    (origin,) = config["Origins"]
    assert origin["DomainName"] == {"Fn::GetAtt": [_workspace_bucket(synthesis), "RegionalDomainName"]}
    assert origin["OriginAccessControlId"] == {"Fn::GetAtt": [control_id, "Id"]}
    assert origin["S3OriginConfig"]["OriginAccessIdentity"] == ""  # no legacy identity beside it
    assert control["Properties"]["OriginAccessControlConfig"] | {"Name": None} == {
        "Name": None, "OriginAccessControlOriginType": "s3", "SigningBehavior": "always", "SigningProtocol": "sigv4",
    }
    # and its one behaviour takes only signed GET and HEAD over HTTPS, from the key group, caching nothing
    behaviour = config["DefaultCacheBehavior"]
    assert not config.get("CacheBehaviors")
    key_group_id, _ = _one(synthesis, "AWS::CloudFront::KeyGroup")
    assert behaviour["TrustedKeyGroups"] == [{"Ref": key_group_id}]
    assert behaviour["ViewerProtocolPolicy"] == "https-only"
    assert behaviour["AllowedMethods"] == ["GET", "HEAD"]
    assert behaviour["CachePolicyId"] == CACHING_DISABLED
    # and S3 gets the file name and type a link asks for (and Origin, for CORS), nothing else of the request
    policy_id, policy = _one(synthesis, "AWS::CloudFront::OriginRequestPolicy")
    assert behaviour["OriginRequestPolicyId"] == {"Ref": policy_id}
    forwarded = policy["Properties"]["OriginRequestPolicyConfig"]
    assert forwarded["QueryStringsConfig"] == {
        "QueryStringBehavior": "whitelist",
        "QueryStrings": ["response-content-disposition", "response-content-type"],
    }
    assert forwarded["HeadersConfig"] == {"HeaderBehavior": "whitelist", "Headers": ["Origin"]}
    assert forwarded["CookiesConfig"] == {"CookieBehavior": "none"}
    assert distribution_id


def test_the_workspace_bucket_lets_only_the_distribution_read_through_its_policy(synthesis: Any) -> None:
    # Given the bucket policies of the stateful stack
    workspace = _workspace_bucket(synthesis)
    distribution_id, _ = _one(synthesis, "AWS::CloudFront::Distribution")
    policies = synthesis.resources("Stateful", "AWS::S3::BucketPolicy")
    allowed: dict[str, list[dict[str, Any]]] = {}
    for policy in policies.values():
        bucket = policy["Properties"]["Bucket"]["Ref"]
        allowed[bucket] = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    # Then the workspace bucket's policy allows one thing: CloudFront reading objects for this distribution only
    (statement,) = allowed[workspace]
    assert statement["Principal"] == {"Service": "cloudfront.amazonaws.com"}
    assert _actions(statement) == ["s3:GetObject"]
    assert statement["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [workspace, "Arn"]}, "/*"]]}
    source = json.dumps(statement["Condition"]["StringEquals"]["AWS:SourceArn"])
    assert f'"Ref": "{distribution_id}"' in source and ":distribution/" in source
    # and no other bucket lets CloudFront in (the access-log bucket lets S3's logging service write, as before)
    others = [s for bucket, statements in allowed.items() if bucket != workspace for s in statements]
    assert all(s["Principal"] == {"Service": "logging.s3.amazonaws.com"} for s in others), others
    # and public access stays blocked on the workspace bucket
    props = synthesis.resources("Stateful", "AWS::S3::Bucket")[workspace]["Properties"]
    assert all(props["PublicAccessBlockConfiguration"].values())


def test_the_key_group_key_is_made_at_deploy_time_and_its_private_half_kept_in_a_secret(synthesis: Any) -> None:
    # Given the key group, Then it trusts one public key, whose PEM is what the key-pair custom resource answers
    _, group = _one(synthesis, "AWS::CloudFront::KeyGroup")
    key_id, key = _one(synthesis, "AWS::CloudFront::PublicKey")
    assert group["Properties"]["KeyGroupConfig"]["Items"] == [{"Ref": key_id}]
    (custom_id, custom), = synthesis.resources("Stateful", "Custom::AgentmemDownloadKeyPair").items()
    assert key["Properties"]["PublicKeyConfig"]["EncodedKey"] == {"Fn::GetAtt": [custom_id, "PublicKeyPem"]}
    # and the custom resource is the stateful stack's key-pair function, writing the stack's one secret
    secret_id, secret = _one(synthesis, "AWS::SecretsManager::Secret")
    function_id, function = _one(synthesis, "AWS::Lambda::Function")
    assert custom["Properties"]["ServiceToken"] == {"Fn::GetAtt": [function_id, "Arn"]}
    assert custom["Properties"]["SecretArn"] == {"Ref": secret_id}
    assert custom["Properties"]["ServiceTimeout"] == "300"  # a failed call never holds a deploy for an hour
    assert custom["DeletionPolicy"] == "Delete" and secret["DeletionPolicy"] == "Delete"
    assert function["Properties"]["Handler"] == "handler.lambda_handler"
    # and it runs after its role may write the secret (the policy is in place before CloudFormation calls it)
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    policy_ids = [k for k, p in synthesis.resources("Stateful", "AWS::IAM::Policy").items()
                  if {"Ref": role} in p["Properties"]["Roles"]]
    assert policy_ids and set(policy_ids) <= set(custom["DependsOn"])


def test_only_the_key_pair_function_and_the_api_function_can_reach_the_secret(synthesis: Any) -> None:
    secret_id, _ = _one(synthesis, "AWS::SecretsManager::Secret")
    # Given every IAM statement of both stacks, Then in the stateful stack only the key-pair function's role
    # touches the secret (read, and write its key), and in the stateless only the API function's role (read)
    stateful = [(pid, s) for pid, s in _statements(synthesis, "Stateful")
                if any(a.startswith("secretsmanager:") for a in _actions(s))]
    (policy_id, statement), = stateful
    assert sorted(_actions(statement)) == ["secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"]
    assert statement["Resource"] == {"Ref": secret_id}
    assert policy_id.startswith("DownloadLinksKeyPairRole")
    stateless = [(pid, s) for pid, s in _statements(synthesis, "Stateless")
                 if any(a.startswith("secretsmanager:") for a in _actions(s))]
    (policy_id, statement), = stateless
    assert _actions(statement) == ["secretsmanager:GetSecretValue"]
    assert statement["Resource"] == {"Fn::ImportValue": "agentmem:download-key-secret-arn"}
    assert policy_id.startswith("ApiRole")


def test_only_the_api_function_is_told_the_distribution(synthesis: Any) -> None:
    # the API alone makes workspace links; a function that is told the key but not granted it would fail a link
    told = {
        logical_id
        for logical_id, function in synthesis.resources("Stateless", "AWS::Lambda::Function").items()
        if "AGENTMEM_DOWNLOAD_DOMAIN" in function["Properties"].get("Environment", {}).get("Variables", {})
    }
    assert len(told) == 1 and next(iter(told)).startswith("ApiFunction"), told
    variables = synthesis.function("api")["Properties"]["Environment"]["Variables"]
    assert {variables[k]["Fn::ImportValue"] for k in variables if k.startswith("AGENTMEM_DOWNLOAD_")} == {
        "agentmem:download-domain", "agentmem:download-key-pair-id", "agentmem:download-key-secret-arn",
    }
