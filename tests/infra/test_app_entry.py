"""`python app.py` synthesises offline, without credentials, and says what to do without a layer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NO_AWS = {  # no credentials, no region, and any network call would fail at once
    "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "", "AWS_REGION": "",
    "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "18,20",
}


def _run_app(context: dict[str, str], outdir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **NO_AWS, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(outdir)}
    return subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_app_py_synthesises_both_stacks_offline(tmp_path: Path) -> None:
    # Given no credentials and no network, and the one layer folder there is (the MCP function has no layer
    # of its own), When app.py runs as the CDK CLI runs it (context from the CLI)
    stand_in = tmp_path / "layer"
    stand_in.mkdir()
    done = _run_app({"agentmem:depsLayerDir": str(stand_in)}, tmp_path / "out")
    # Then both templates are written and nothing was looked up
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert {"Stateful", "Stateless"} <= set(manifest["artifacts"])
    assert not manifest.get("missing")


def test_app_py_stops_with_a_message_when_the_layer_is_missing(tmp_path: Path) -> None:
    # Given a deployment whose layer folder is absent (a name nobody built)
    done = _run_app({"agentmem:depsLayerDir": str(tmp_path / "not-built")}, tmp_path / "out")
    # Then it stops with a message, not a traceback
    assert done.returncode == 2
    assert "cannot synthesise" in done.stderr and "Traceback" not in done.stderr

