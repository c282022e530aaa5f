"""Builds the CDK app: the stateful and the stateless stack, with cdk-nag's AWS Solutions checks.

``app.py`` calls ``build_app().synth()``; the tests call ``build_app`` with their own context.
No AWS account, credentials or network are needed: the stacks are environment-agnostic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

# jsii warns at length that this machine's Node is past its end of life; the CDK still works with it
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")

from aws_cdk import App, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from .config import ROOT, DeploymentConfig
from .stacks.stateful import StatefulStack
from .stacks.stateless import StatelessStack

CDK_JSON = ROOT / "cdk.json"


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context, so that ``python app.py`` synthesises what ``cdk synth`` does."""
    if not CDK_JSON.is_file():
        return {}
    context: dict[str, Any] = json.loads(CDK_JSON.read_text()).get("context", {})
    return context


def build_app(
    context: Mapping[str, Any] | None = None, *, outdir: str | None = None, nag: bool = True
) -> tuple[App, StatefulStack, StatelessStack]:
    """The app and its two stacks. ``context`` overrides cdk.json (the CDK CLI's ``-c`` wins over both)."""
    if outdir is None and not os.environ.get("CDK_OUTDIR"):  # `python app.py`: where `cdk synth` writes too
        outdir = str(ROOT / "cdk.out")
    app = App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    config = DeploymentConfig.from_context(app.node.try_get_context)
    stateful = StatefulStack(app, "Stateful", stack_name=f"{config.name}-stateful", config=config)
    stateless = StatelessStack(app, "Stateless", stack_name=f"{config.name}-stateless", config=config)
    stateless.add_stack_dependency(stateful, "imports the table, buckets and collection by export name")
    Tags.of(app).add("project", "agentmem")
    Tags.of(app).add("agentmem:deployment", config.name)
    if nag:
        # every finding must be acknowledged with a reason (infra.nag.acknowledge) or synthesis fails
        Validations.of(app).add_plugins(AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True))
    return app, stateful, stateless
