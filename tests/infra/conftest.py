"""The CDK app, synthesised once per test session (jsii is slow) with a stand-in dependency layer.

Synthesis runs cdk-nag's AWS Solutions checks; when they fail, the templates are still written and
the other tests read them, while test_nag.py reports the findings.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")

STACKS = ("Stateful", "Stateless")
# how each function under functions/ begins its logical id in the stateless template
FUNCTION_LOGICAL_PREFIX = {
    "api": "ApiFunction", "mcp": "ApiMcpFunction", "authorizer": "ApiAuthorizerFunction", "indexer": "IndexerFunction",
    "summarise": "SummariesSummariseFunction", "compaction": "CompactionFunction",
}


@dataclass
class Synthesis:
    outdir: Path
    templates: dict[str, dict[str, Any]]
    seconds: float
    error: str | None = None  # the synthesis error (cdk-nag findings), if any
    acknowledged: dict[tuple[str, str], str] = field(default_factory=dict)

    def validation_report(self) -> dict[str, Any]:
        path = self.outdir / "validation-report.json"
        return json.loads(path.read_text()) if path.is_file() else {"pluginReports": []}

    def resources(self, stack: str, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.templates[stack]["Resources"].items() if v["Type"] == kind}

    def function(self, name: str) -> dict[str, Any]:
        """The function ``functions/<name>/`` as the stateless template declares it."""
        functions = self.resources("Stateless", "AWS::Lambda::Function")
        return next(f for logical_id, f in functions.items() if logical_id.startswith(FUNCTION_LOGICAL_PREFIX[name]))


# a small install: no search collection, no web ACL, alarms mailed, some functions with reserved concurrency
SMALL_INSTALL = {
    "agentmem:searchCollection": "false", "agentmem:rateLimitWaf": "false", "agentmem:alarmEmail": "oncall@example.com",
    "agentmem:apiReservedConcurrency": "40", "agentmem:authorizerReservedConcurrency": "10",
}


@pytest.fixture(scope="session")
def synthesis(tmp_path_factory: pytest.TempPathFactory) -> Synthesis:
    return synthesise(tmp_path_factory, {})


@pytest.fixture(scope="session")
def small_synthesis(tmp_path_factory: pytest.TempPathFactory) -> Synthesis:
    """The app as a small install configures it (``SMALL_INSTALL``)."""
    return synthesise(tmp_path_factory, SMALL_INSTALL)


@pytest.fixture(params=["default", "small install"])
def each_synthesis(request: pytest.FixtureRequest) -> Synthesis:
    """Each way the app is synthesised here: as configured by default, and as a small install."""
    name = "synthesis" if request.param == "default" else "small_synthesis"
    found: Synthesis = request.getfixturevalue(name)
    return found


def synthesise(tmp_path_factory: pytest.TempPathFactory, context: dict[str, str]) -> Synthesis:
    from infra import nag
    from infra.application import build_app

    nag.ACKNOWLEDGED.clear()  # what this synthesis acknowledges, not an earlier one's

    # no `make layers` in tests: stand-ins with a recipe file beside a one-package python/ folder
    package = "standin"
    stand_in = tmp_path_factory.mktemp("deps-layer-stand-in")
    (stand_in / "python" / f"{package}-1.0.dist-info").mkdir(parents=True)
    (stand_in / "python" / f"{package}-1.0.dist-info" / "top_level.txt").write_text(f"{package}\n")
    (stand_in / "python" / ".agentmem-layer.json").write_text("{}\n")  # the build marker stays out
    (stand_in / "requirements.txt").write_text(f"{package}\n")
    (stand_in / "build.sh").write_text("exit 0\n")
    outdir = tmp_path_factory.mktemp("cdk.out")
    started = time.perf_counter()
    app, _, _ = build_app({"agentmem:depsLayerDir": str(stand_in), **context}, outdir=str(outdir))
    error = None
    try:
        app.synth()
    except RuntimeError as failure:  # cdk-nag's validation failed: the templates are written all the same
        error = str(failure)
    seconds = time.perf_counter() - started
    templates = {name: json.loads((outdir / f"{name}.template.json").read_text()) for name in STACKS}
    return Synthesis(outdir, templates, seconds, error, dict(nag.ACKNOWLEDGED))


@pytest.fixture(scope="session")
def stateful(synthesis: Synthesis) -> Any:
    from aws_cdk.assertions import Template

    return Template.from_json(synthesis.templates["Stateful"])


@pytest.fixture(scope="session")
def stateless(synthesis: Synthesis) -> Any:
    from aws_cdk.assertions import Template

    return Template.from_json(synthesis.templates["Stateless"])
