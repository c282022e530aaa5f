"""Powertools logger, tracer and metrics: one instance each for the process."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "agentmem"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace="agentmem", service=SERVICE)
