"""The REST API (SPEC §10) on Powertools' APIGatewayRestResolver."""
