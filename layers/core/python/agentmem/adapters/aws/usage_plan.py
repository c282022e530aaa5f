"""The deployed stack's per-account rate limit: one API Gateway API key per account, in the stack's usage plan.

The REST API takes its API keys from the authorizer (``apiKeySource: AUTHORIZER``) and every method behind
the authorizer requires one, so API Gateway throttles each request against the usage plan's limits by the
key the authorizer names (``usageIdentifierKey``): per account, with no state in any function. The key is
made the first time an authorizer sees the account: an API key whose value is derived from the plan's name
and the account id (no secret: API Gateway takes it from the authorizer only, never from a client), then
added to the plan. Either call answering ``ConflictException`` means another process did it first, which is
as good. Each process remembers the accounts it has registered; doing it again changes nothing.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.exceptions import ClientError

from .config import client_config


def usage_key_value(plan_name: str, account_id: str) -> str:
    """The account's API key value (and name): unique per deployment, at least the 20 characters API Gateway asks."""
    return f"{plan_name}-{account_id}".ljust(20, "-")


def _conflict(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConflictException"


class UsagePlanKeys:
    def __init__(
        self, plan_name: str, *, boto3_client: Any = None, boto3_session: boto3.session.Session | None = None
    ) -> None:
        self.plan_name = plan_name
        self.client: Any = boto3_client or (boto3_session or boto3.session.Session()).client(
            "apigateway", config=client_config()
        )
        self._plan_id: str | None = None
        self._registered: set[str] = set()
        self._lock = threading.Lock()

    def key_for(self, account_id: str) -> str:
        """The account's usage identifier, registered in the plan first if this process has not yet done it."""
        value = usage_key_value(self.plan_name, account_id)
        if account_id not in self._registered:
            with self._lock:
                if account_id not in self._registered:
                    self._register(account_id, value)
                    self._registered.add(account_id)
        return value

    def _register(self, account_id: str, value: str) -> None:
        key_id = self._api_key(account_id, value)
        try:
            self.client.create_usage_plan_key(usagePlanId=self._plan(), keyId=key_id, keyType="API_KEY")
        except ClientError as error:
            if not _conflict(error):  # already in the plan
                raise

    def _api_key(self, account_id: str, value: str) -> str:
        try:
            created = self.client.create_api_key(
                name=value, value=value, enabled=True,
                description=f"agentmem account {account_id}: its requests are throttled by {self.plan_name}",
            )
            return str(created["id"])
        except ClientError as error:
            if not _conflict(error):
                raise
        for page in self.client.get_paginator("get_api_keys").paginate(nameQuery=value, includeValues=False):
            for item in page.get("items", []):
                if item.get("name") == value:
                    return str(item["id"])
        raise RuntimeError(f"API key {value!r} exists but cannot be found by its name")

    def _plan(self) -> str:
        if self._plan_id is None:
            for page in self.client.get_paginator("get_usage_plans").paginate():
                for plan in page.get("items", []):
                    if plan.get("name") == self.plan_name:
                        self._plan_id = str(plan["id"])
            if self._plan_id is None:
                raise RuntimeError(f"no usage plan named {self.plan_name!r}: is AGENTMEM_USAGE_PLAN the stack's?")
        return self._plan_id
