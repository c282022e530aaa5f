"""The distribution: its name on PyPI, the version the command prints, the texts a release carries."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import agentmem
from agentmem.cli import DISTRIBUTION, cli
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]


def test_the_distribution_is_not_named_agentmem_which_pypi_gives_another_project() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "agentmem-server"
    assert project["scripts"] == {"agentmem": "agentmem.cli:main"}  # the command keeps its name
    assert project["license-files"] == ["LICENSE"]
    assert "version" in project["dynamic"]  # one version, agentmem.__version__


def test_version_option_and_command_print_the_version_and_the_distribution() -> None:
    for args in (["--version"], ["-V"], ["version"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert result.output == f"agentmem {agentmem.__version__} (agentmem-server)\n"


def test_the_license_is_the_apache_license_2_0_in_full() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text


def test_the_changelog_keeps_a_changelog_and_contributing_gives_the_loop() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog and "Keep a Changelog" in changelog
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    for command in ("make run", "make test", "make fuzz", "make bench", "make dist", "make clean-data"):
        assert command in contributing


def test_make_clean_data_asks_first_and_removes_the_data_dir(tmp_path: Path) -> None:
    # Given a data dir of the local server in the current folder
    (tmp_path / ".agentmem").mkdir()
    (tmp_path / ".agentmem" / "dev-key").write_text("am_secret\n")
    make = ["make", "--no-print-directory", "-s", "-C", str(tmp_path), "-f", str(ROOT / "Makefile"), "clean-data"]
    # When the question is answered no, Then it stays
    kept = subprocess.run(make, input="n\n", capture_output=True, text=True, check=False)
    assert "remove .agentmem" in kept.stdout and "kept .agentmem" in kept.stdout
    assert (tmp_path / ".agentmem" / "dev-key").exists()
    # When it is answered yes, or YES=1 is given, Then it is gone
    removed = subprocess.run(make, input="y\n", capture_output=True, text=True, check=False)
    assert removed.returncode == 0 and "removed .agentmem" in removed.stdout
    assert not (tmp_path / ".agentmem").exists()
    (tmp_path / ".agentmem").mkdir()
    at_once = subprocess.run([*make, "YES=1"], capture_output=True, text=True, check=False)
    assert at_once.returncode == 0 and not (tmp_path / ".agentmem").exists()
    assert "remove .agentmem" not in at_once.stdout


def test_make_synth_installs_only_what_synthesis_needs(tmp_path: Path) -> None:
    # Given a fresh clone's pyproject and no virtualenv yet
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    # When make says what `make synth` would run
    planned = subprocess.run(["make", "--no-print-directory", "-n", "-C", str(tmp_path), "-f", str(ROOT / "Makefile"),
                              "synth"], capture_output=True, text=True, check=False)
    assert planned.returncode == 0, planned.stderr
    installs = [line for line in planned.stdout.splitlines() if "pip install" in line and "-e" in line]
    # Then it installs the aws extra and the synth extra only: no test tools, no emulators, no npm
    assert len(installs) == 1 and '".[aws,synth]"' in installs[0], installs
    assert "npm" not in planned.stdout and "[dev" not in planned.stdout and "emulators" not in planned.stdout
    assert "app.py" in planned.stdout
    # And the synth extra holds the CDK and its checks, which the dev extra takes from it
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {spec.split(">")[0] for spec in extras["synth"]} == {"aws-cdk-lib", "constructs", "cdk-nag"}
    assert "agentmem-server[synth]" in extras["dev"]
