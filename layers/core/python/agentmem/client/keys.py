"""``client.keys``: the API keys of the caller's account (account key only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .models import ApiKey
from .transport import segment

if TYPE_CHECKING:
    from .client import Client


class Keys:
    """Create, list and revoke API keys. A key's secret is shown once, in ``create``'s answer."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def create(self, user: str | None = None) -> ApiKey:
        """A new key: an account key, or with ``user`` a key that acts for that one user only."""
        body = {"user": user} if user is not None else {}
        return ApiKey.from_dict(self._client.request_json("POST", "/keys", body=body))

    def list(self) -> list[ApiKey]:
        """Every key of the account (without secrets)."""
        return [*self._client.iterate("/keys", ApiKey.from_dict)]

    def delete(self, key_id: str) -> None:
        """Revoke a key: requests made with it fail with ``Unauthorized`` from now on."""
        self._client.request("DELETE", f"/keys/{segment(key_id)}")
