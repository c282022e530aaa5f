"""Route groups, one module per resource."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

# the search mode, one description for every search route (entry recall, an agent's recall, journal search)
SearchMode = Annotated[str | None, Query(
    description="hybrid (default), keyword, semantic, or deep: hybrid, then a model re-reads the top 50 with the "
                "query (slower; the answer's stages say whether it ran)")]
