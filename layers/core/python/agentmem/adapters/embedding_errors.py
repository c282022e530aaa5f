"""The one error the remote embedders raise, whatever the service (Bedrock, an OpenAI-compatible endpoint).

It lives apart from the port so that the port stays free of adapter concerns, and apart from each adapter so
that a caller (the indexer, ``agentmem reindex``) can catch it without importing boto3 or requests. It is
raised only once the adapter has given up: its retries are spent, or the failure is one a retry cannot fix
(a refused request, an answer of the wrong shape or length).
"""

from __future__ import annotations


class EmbeddingError(Exception):
    """A text could not be embedded. The message names the model and the reason, never a credential."""
