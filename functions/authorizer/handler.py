"""API Gateway Lambda authorizer: ``Authorization: Bearer <key>`` → an IAM policy and the caller.

A valid key gets a policy allowing every method of the API's stage (API Gateway caches the answer
per key for the authorizer's TTL, and the same answer must serve every route), with the principal
in ``context`` for the API function (``agentmem.api.app`` reads ``requestContext.authorizer``), and the
account's key in the stack's usage plan as ``usageIdentifierKey`` (per-account throttling,
``agentmem.adapters.aws.usage_plan``).
A missing or unknown key raises ``Exception("Unauthorized")``, which API Gateway turns into a 401.
Any other failure (the table unreachable) is left to raise: API Gateway answers 500 and nothing
wrong is cached.

Like the other functions it runs under Powertools' logger (the Lambda context on every line, a refused key
logged with its reason, never the key) and tracer (a segment per invocation, the key lookup in it).
"""

from __future__ import annotations

from typing import Any

from agentmem.bootstrap import get_container
from agentmem.domain.errors import UnauthorizedError
from agentmem.domain.models import Principal
from agentmem.invocation import entry_point, log_keys
from agentmem.observability import logger
from aws_lambda_powertools.utilities.typing import LambdaContext

UNAUTHORIZED = "Unauthorized"  # the exact message API Gateway maps to 401


def authorize(event: dict[str, Any]) -> dict[str, Any]:
    container = get_container()
    try:
        principal = container.keys.authenticate(_authorization(event))
    except UnauthorizedError as refused:
        logger.info("key refused", extra={"reason": str(refused)})
        raise Exception(UNAUTHORIZED) from None  # API Gateway's convention for a 401
    allow = {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": stage_arn(event["methodArn"])}
    answer: dict[str, Any] = {
        "principalId": principal.key_id,
        "policyDocument": {"Version": "2012-10-17", "Statement": [allow]},
        "context": principal_context(principal),
    }
    usage_plan = container.usage_plan_keys
    if usage_plan is not None:  # API Gateway throttles the request by its account's key in the usage plan
        answer["usageIdentifierKey"] = usage_plan.key_for(principal.account_id)
    log_keys(account_id=principal.account_id)
    logger.info("key allowed", extra={"kind": principal.kind})
    return answer


_instrumented = entry_point(lambda event, context: authorize(event))


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result: dict[str, Any] = _instrumented(event, context)
    return result


def _authorization(event: dict[str, Any]) -> str | None:
    """The header's value: ``authorizationToken`` for a TOKEN authorizer, the headers for a REQUEST one."""
    token = event.get("authorizationToken")
    if token is not None:
        return str(token)
    headers = event.get("headers") or {}
    for name, value in headers.items():
        if name.lower() == "authorization":
            return str(value)
    return None


def stage_arn(method_arn: str) -> str:
    """``arn:...:{api}/{stage}/{method}/{path}`` → ``arn:...:{api}/{stage}/*`` (every method and path)."""
    api_and_stage = method_arn.split("/")[:2]
    return "/".join([*api_and_stage, "*"])


def principal_context(principal: Principal) -> dict[str, str]:
    """Context values must be strings, numbers or booleans: no user is the empty string."""
    return {
        "account_id": principal.account_id,
        "key_id": principal.key_id,
        "kind": principal.kind,
        "user_id": principal.user_id or "",
    }
