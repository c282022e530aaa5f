"""How every AWS client of agentmem is configured.

Throttling and transient errors are retried by botocore with backoff (standard mode);
a conditional-check failure is an answer, not an error, and is never retried. Endpoints
come from the standard settings (``AWS_ENDPOINT_URL_DYNAMODB``, ``AWS_ENDPOINT_URL_S3``, ...),
which boto3 reads itself.
"""

from __future__ import annotations

from typing import Any

from botocore.config import Config

MAX_ATTEMPTS = 5


def client_config(**overrides: Any) -> Config:
    return Config(
        retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS}, connect_timeout=3, read_timeout=10, **overrides
    )
