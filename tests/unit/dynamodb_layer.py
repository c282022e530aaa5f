"""The layer the DynamoDB Local unit tests write to (``stores`` in conftest.py makes its memory), and when."""

from agentmem.domain.models import Layer

T0 = "2026-03-02T09:00:00.000000Z"
LAYER = Layer("acct_test", "company", None)
