"""The AWS WAF web ACL on the API stage: per API key and per source address, answering 429 in the error shape;
left out by ``agentmem:rateLimitWaf=false`` (the small install), with cdk-nag's finding acknowledged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.config import DeploymentConfig, InfraConfigError


def _web_acl(synthesis: Any) -> dict[str, Any]:
    (web_acl,) = synthesis.resources("Stateless", "AWS::WAFv2::WebACL").values()
    props: dict[str, Any] = web_acl["Properties"]
    return props


def _rules(synthesis: Any) -> dict[str, dict[str, Any]]:
    return {rule["Name"]: rule for rule in _web_acl(synthesis)["Rules"]}


def test_the_web_acl_is_regional_allows_by_default_and_keeps_no_sampled_requests(synthesis: Any) -> None:
    props = _web_acl(synthesis)
    assert props["Scope"] == "REGIONAL"
    assert props["DefaultAction"] == {"Allow": {}}
    # metrics under clear names; no sampled requests, which would keep the Authorization header (a secret)
    visibilities = [props["VisibilityConfig"]] + [rule["VisibilityConfig"] for rule in props["Rules"]]
    names = [v["MetricName"] for v in visibilities]
    assert names == ["agentmem-api", "agentmem-api-per-key", "agentmem-api-per-source"]
    assert all(v["CloudWatchMetricsEnabled"] and not v["SampledRequestsEnabled"] for v in visibilities)


def test_one_rule_limits_each_api_key_over_a_minute_above_what_its_account_is_served(synthesis: Any) -> None:
    config = DeploymentConfig()
    rule = _rules(synthesis)["per-key"]
    statement = rule["Statement"]["RateBasedStatement"]
    assert statement["AggregateKeyType"] == "CUSTOM_KEYS"
    assert statement["CustomKeys"] == [
        {"Header": {"Name": "authorization", "TextTransformations": [{"Priority": 0, "Type": "NONE"}]}}
    ]
    assert statement["EvaluationWindowSec"] == 60
    assert statement["Limit"] == config.waf_key_limit == 6000
    # a key at its account's full rate for a minute is never cut: only one far past it
    assert statement["Limit"] >= 2 * 60 * config.account_throttle_rate
    assert "ScopeDownStatement" not in statement  # a request without Authorization has no key and is not counted


def test_one_rule_limits_each_source_address_over_5_minutes_above_one_account_at_its_limit(synthesis: Any) -> None:
    config = DeploymentConfig()
    statement = _rules(synthesis)["per-source"]["Statement"]["RateBasedStatement"]
    assert statement["AggregateKeyType"] == "IP"
    assert "CustomKeys" not in statement and "ForwardedIPConfig" not in statement
    assert statement["EvaluationWindowSec"] == 300
    assert statement["Limit"] == config.waf_source_limit == 30000
    # a backend at its account's limit from one NAT address is not cut (the limit is twice what it can send)
    assert statement["Limit"] >= 2 * 300 * config.account_throttle_rate
    # and a source guessing keys as fast as the probe did (398 a second) is
    assert statement["Limit"] < 398 * 300


@pytest.mark.parametrize(
    ("rule", "retry_after", "says"), [("per-key", "60", "API key"), ("per-source", "300", "address")]
)
def test_a_blocked_request_is_a_429_with_retry_after_and_a_body_in_the_error_shape(
    synthesis: Any, rule: str, retry_after: str, says: str
) -> None:
    props = _web_acl(synthesis)
    block = _rules(synthesis)[rule]["Action"]["Block"]["CustomResponse"]
    assert block["ResponseCode"] == 429
    assert block["ResponseHeaders"] == [{"Name": "Retry-After", "Value": retry_after}]
    body = props["CustomResponseBodies"][block["CustomResponseBodyKey"]]
    assert body["ContentType"] == "APPLICATION_JSON"
    error = json.loads(body["Content"])
    assert list(error) == ["error"] and set(error["error"]) == {"code", "message"}
    assert error["error"]["code"] == "rate_limited"  # the code of API Gateway's own 429s
    assert says in error["error"]["message"] and "Retry-After" in error["error"]["message"]


def test_the_web_acl_is_associated_with_the_api_stage(synthesis: Any) -> None:
    (association,) = synthesis.resources("Stateless", "AWS::WAFv2::WebACLAssociation").values()
    (web_acl_id,) = synthesis.resources("Stateless", "AWS::WAFv2::WebACL")
    (stage_id,) = synthesis.resources("Stateless", "AWS::ApiGateway::Stage")
    (api_id,) = synthesis.resources("Stateless", "AWS::ApiGateway::RestApi")
    props = association["Properties"]
    assert props["WebACLArn"] == {"Fn::GetAtt": [web_acl_id, "Arn"]}
    # arn:<partition>:apigateway:<region>::/restapis/<api id>/stages/<stage name>
    parts = props["ResourceArn"]["Fn::Join"][1]
    assert parts[2] == ":apigateway:" and parts[4] == "::/restapis/"
    assert parts[5:] == [{"Ref": api_id}, "/stages/", {"Ref": stage_id}]


def test_with_the_web_acl_cdk_nag_needs_no_acknowledgement_for_it(synthesis: Any) -> None:
    assert not [rule for (_, rule) in synthesis.acknowledged if rule == "AwsSolutions-APIG3"]


def test_without_the_setting_there_is_no_web_acl_and_the_finding_is_acknowledged(small_synthesis: Any) -> None:
    for kind in ("AWS::WAFv2::WebACL", "AWS::WAFv2::WebACLAssociation"):
        assert not small_synthesis.resources("Stateless", kind)
    (reason,) = [reason for (_, rule), reason in small_synthesis.acknowledged.items() if rule == "AwsSolutions-APIG3"]
    assert "agentmem:rateLimitWaf=false" in reason


def test_the_limits_are_settings_within_what_waf_accepts() -> None:
    values = {"agentmem:wafKeyLimitPerMinute": "4500", "agentmem:wafSourceLimitPer5Minutes": "20000"}
    config = DeploymentConfig.from_context(values.get)
    assert (config.waf_key_limit, config.waf_source_limit) == (4500, 20000)
    # unset, they follow the account's rate
    assert DeploymentConfig(account_throttle_rate=10).waf_key_limit == 1200
    assert DeploymentConfig(account_throttle_rate=10).waf_source_limit == 6000
    assert DeploymentConfig.from_context({"agentmem:rateLimitWaf": "false"}.get).rate_limit_waf is False
    with pytest.raises(InfraConfigError, match="wafKeyLimitPerMinute"):
        DeploymentConfig.from_context({"agentmem:wafKeyLimitPerMinute": "5"}.get)
    with pytest.raises(InfraConfigError, match="wafSourceLimitPer5Minutes"):
        DeploymentConfig.from_context({"agentmem:wafSourceLimitPer5Minutes": "3000000000"}.get)
