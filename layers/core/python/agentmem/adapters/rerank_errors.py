"""The one error the remote rerankers raise, whatever the service (Bedrock, a Cohere-style ``/rerank``).

Apart from the port and from each adapter, as ``embedding_errors.py`` is: a caller can catch it without importing
boto3 or requests. The recall service (``services/recall.py``) reads any failure of the stage as
``rerank_unavailable`` and answers in the fused order; this error is what makes the message name the model and
the reason.
"""

from __future__ import annotations


class RerankError(Exception):
    """Candidates could not be re-ranked. The message names the model or endpoint and the reason, never a
    credential."""
