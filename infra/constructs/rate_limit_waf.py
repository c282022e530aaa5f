"""An AWS WAF web ACL on the API stage: rate limits API Gateway's usage plan cannot give.

The usage plan limits each account (all its keys together) and the stage limits the whole API. This web
ACL adds, before API Gateway counts anything:

- **per API key**: requests carrying one ``Authorization`` header value, over 1 minute. Its default
  (``DeploymentConfig.waf_key_limit``) is twice what the account's plan serves in a minute, so a key
  working at its account's full rate is never cut; one key sending far past that is blocked here and
  stops spending its account's budget, which the account's other keys then keep. A request without
  ``Authorization`` (the public paths, usually) has no aggregation key and is not counted by this rule.
- **per source address**: every request from one IP, over 5 minutes, whatever its key. WAF cannot see
  whether a key was valid, so this is sized above one account's backend at its limit from one address
  (``DeploymentConfig.waf_source_limit``), and cuts a source guessing keys faster than that.

A blocked request is answered by WAF itself: 429 ``rate_limited`` in the SPEC §10 error shape, with
``Retry-After`` (the rule's window). WAF evaluates rates every few seconds, so a limit bites within
tens of seconds, not at an exact request. Sampled requests are off: they would keep request headers,
and the ``Authorization`` header is a secret.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from ..config import DeploymentConfig

KEY_HEADER = "authorization"  # WAF matches header names in any case
KEY_WINDOW_SECONDS = 60
SOURCE_WINDOW_SECONDS = 300


@dataclass(frozen=True)
class RateRule:
    """One rate-based rule and the 429 it answers with."""

    name: str  # the rule's name and the last part of its metric's
    priority: int
    window_seconds: int
    limit: int
    message: str
    custom_keys: tuple[wafv2.CfnWebACL.RateBasedStatementCustomKeyProperty, ...] = ()

    @property
    def body_key(self) -> str:
        return f"rate-limited-{self.name}"

    def body(self) -> str:
        return json.dumps({"error": {"code": "rate_limited", "message": self.message}})


def rate_rules(config: DeploymentConfig) -> tuple[RateRule, ...]:
    by_key = wafv2.CfnWebACL.RateBasedStatementCustomKeyProperty(
        header=wafv2.CfnWebACL.RateLimitHeaderProperty(
            name=KEY_HEADER, text_transformations=[wafv2.CfnWebACL.TextTransformationProperty(priority=0, type="NONE")]
        )
    )
    return (
        RateRule(
            "per-key", 0, KEY_WINDOW_SECONDS, config.waf_key_limit,
            "too many requests with this API key; retry after Retry-After seconds",
            custom_keys=(by_key,),
        ),
        RateRule(
            "per-source", 1, SOURCE_WINDOW_SECONDS, config.waf_source_limit,
            "too many requests from this address; retry after Retry-After seconds",
        ),
    )


class RateLimitWaf(Construct):
    """The web ACL (REGIONAL) and its association with ``stage``."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig, stage: apigw.Stage) -> None:
        super().__init__(scope, construct_id)
        metric_prefix = f"{config.name}-api"
        rules = rate_rules(config)
        self.web_acl = wafv2.CfnWebACL(
            self, "WebAcl",
            name=f"{config.name}-api-rate-limits",
            description="agentmem: requests per API key and per source address, over the limit a 429",
            scope="REGIONAL",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility(metric_prefix),
            custom_response_bodies={
                rule.body_key: wafv2.CfnWebACL.CustomResponseBodyProperty(
                    content=rule.body(), content_type="APPLICATION_JSON"
                )
                for rule in rules
            },
            rules=[_rule(rule, metric_prefix) for rule in rules],
        )
        self.association = wafv2.CfnWebACLAssociation(
            self, "StageAssociation", resource_arn=stage.stage_arn, web_acl_arn=self.web_acl.attr_arn
        )


def _visibility(metric_name: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=metric_name, sampled_requests_enabled=False
    )


def _rule(rule: RateRule, metric_prefix: str) -> wafv2.CfnWebACL.RuleProperty:
    statement = wafv2.CfnWebACL.RateBasedStatementProperty(
        aggregate_key_type="CUSTOM_KEYS" if rule.custom_keys else "IP",
        custom_keys=list(rule.custom_keys) or None,
        limit=rule.limit,
        evaluation_window_sec=rule.window_seconds,
    )
    block = wafv2.CfnWebACL.BlockActionProperty(
        custom_response=wafv2.CfnWebACL.CustomResponseProperty(
            response_code=429,
            custom_response_body_key=rule.body_key,
            response_headers=[
                wafv2.CfnWebACL.CustomHTTPHeaderProperty(name="Retry-After", value=str(rule.window_seconds))
            ],
        )
    )
    return wafv2.CfnWebACL.RuleProperty(
        name=rule.name, priority=rule.priority,
        statement=wafv2.CfnWebACL.StatementProperty(rate_based_statement=statement),
        action=wafv2.CfnWebACL.RuleActionProperty(block=block),
        visibility_config=_visibility(f"{metric_prefix}-{rule.name}"),
    )
