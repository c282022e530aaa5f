"""A plain install (the wheel without the ``embedded`` extra) serves keyword-only recall with one line naming the
extra: never a traceback, never a worker dying over numpy.

The wheel is built from this tree and installed, for real, into a scratch virtualenv. Offline: the base
dependencies come from the test's own environment through a folder of links to its site-packages, less numpy,
wordllama and usearch (the embedded extra) and this project's own install, so the scratch environment has
exactly what ``pip install agentmem-server`` gives.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.serving import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
EXTRA = ("numpy", "wordllama", "usearch")  # what the embedded extra brings, and what a plain install lacks

pytestmark = pytest.mark.slow


def _left_out(name: str) -> bool:
    lowered = name.lower()
    return (lowered.startswith(EXTRA) or lowered.startswith(("agentmem", "__editable__"))
            or lowered.endswith(".pth"))


@pytest.fixture(scope="module")
def plain_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv with the wheel of this tree installed and no embedded extra; answers its bin folder."""
    tmp = tmp_path_factory.mktemp("plain-install")
    wheels = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "--no-index", "--wheel-dir", str(wheels), str(ROOT)],
                   check=True, capture_output=True, env=_clean_env())
    (wheel,) = wheels.glob("agentmem_server-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # the base dependencies, offline: links to this environment's packages, less the extra and this project
    base = tmp / "base-deps"
    base.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not _left_out(entry.name):
            (base / entry.name).symlink_to(entry)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "base-deps.pth").write_text(f"{base}\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
                    "--disable-pip-version-check", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, env=_clean_env())
    return venv / "bin"


def _clean_env() -> dict[str, str]:
    """The environment without this checkout on the path (PYTHONPATH) and without agentmem's settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "PYTHON"))}


def _run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "python"), *args], capture_output=True, text=True, cwd="/", env=_clean_env())


def test_the_scratch_install_is_a_plain_one(plain_install: Path) -> None:
    found = _run(plain_install, "-c", "import importlib.util as u, agentmem; print(agentmem.__file__, "
                 "[m for m in ('numpy', 'wordllama', 'usearch') if u.find_spec(m)])")
    assert found.returncode == 0, found.stderr
    assert str(plain_install.parent) in found.stdout and found.stdout.rstrip().endswith("[]")
    version = subprocess.run([str(plain_install / "agentmem"), "--version"], capture_output=True, text=True,
                             env=_clean_env())
    assert version.stdout.startswith("agentmem ") and "(agentmem-server)" in version.stdout


@pytest.fixture(scope="module", params=[None, "none"], ids=["default-embedder", "embedder-none"])
def served(request: pytest.FixtureRequest, plain_install: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, dict[str, str]]]:
    """`agentmem serve` of the plain install, two workers; yields its URL, its output so far and a key header."""
    workdir = tmp_path_factory.mktemp("serve")
    port = free_port()
    env = _clean_env()
    if request.param is not None:
        env["AGENTMEM_EMBEDDER"] = request.param
    log = workdir / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen([str(plain_install / "agentmem"), "serve", "--port", str(port), "--workers", "2"],
                                   cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, url, log.read_text, timeout=60)
        key = (workdir / ".agentmem" / "dev-key").read_text().strip()
        yield url, log.read_text(), {"Authorization": f"Bearer {key}"}
    finally:
        process.terminate()
        process.wait(timeout=30)
    output = log.read_text()
    assert "Traceback" not in output and "ModuleNotFoundError" not in output, output


def test_a_plain_install_serves_keyword_recall_and_says_which_extra_brings_the_rest(
        served: tuple[str, str, dict[str, str]], request: pytest.FixtureRequest) -> None:
    url, output, headers = served
    assert "Traceback" not in output
    notes = [line for line in output.splitlines() if line.startswith("note: recall is keyword-only")]
    if "embedder-none" in request.node.callspec.id:
        assert notes == []  # the person chose keyword recall: nothing to say
    else:
        assert len(notes) == 1, output
        assert "pip install 'agentmem-server[embedded]'" in notes[0] and "numpy" in notes[0]
    assert requests.put(f"{url}/v1/memories/company", headers=headers, timeout=10).status_code in (200, 201)
    saved = requests.put(f"{url}/v1/memories/company/entries/refunds", headers=headers, timeout=10,
                         json={"content": "Refund within 30 days of purchase.", "description": "Refund rules"})
    assert saved.status_code == 201, saved.text
    found = requests.get(f"{url}/v1/memories/company/search", params={"q": "refund"}, headers=headers, timeout=10)
    assert found.status_code == 200, found.text
    body = found.json()
    assert [hit["name"] for hit in body["items"]] == ["refunds"]
    assert body["mode"] == "keyword" and body["fallback"] == "not_configured", body
