"""Settings are the one truth: every AGENTMEM_* variable anything reads is a setting or named in one list, and
anything else stops the service at start with a line that names it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from agentmem.settings import OTHER_VARIABLES, Settings, SettingsError, known_variables, load_settings
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parents[2]
# where AGENTMEM_* names are written: the code, the stack, the benches, the Makefile and the docs
SOURCES = [
    *sorted((ROOT / "layers" / "core" / "python" / "agentmem").rglob("*.py")),
    *sorted((ROOT / "functions").rglob("*.py")), *sorted((ROOT / "infra").rglob("*.py")),
    *sorted((ROOT / "bench").glob("*.py")), *sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md",
    ROOT / "Makefile", *sorted((ROOT / "scripts").glob("*.py")),
]
NAME = re.compile(r"\bAGENTMEM_[A-Z][A-Z0-9_]*[A-Z0-9]\b")
# a docs block that shows the error an unknown name gets holds that unknown name on purpose
SHOWS_THE_ERROR = re.compile(r"```text\n(?:(?!```).)*?error: unknown setting(?:(?!```).)*?```", re.S)


def _meant(text: str) -> str:
    return SHOWS_THE_ERROR.sub("", text)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith(("AGENTMEM_", "AWS_")):
            monkeypatch.delenv(key)


def test_every_agentmem_variable_written_anywhere_is_one_something_reads() -> None:
    # Given every AGENTMEM_* name in the code, the stack, the benches and the docs
    written = {(name, path.relative_to(ROOT).as_posix())
               for path in SOURCES if path.is_file() for name in NAME.findall(_meant(path.read_text(errors="replace")))}
    assert len({name for name, _ in written}) > 20  # the scan sees them
    # Then each is a setting, or one of the few variables read elsewhere (the SDK's address, the access log)
    unknown = sorted(f"{name} ({where})" for name, where in written if name not in known_variables())
    assert unknown == []


def test_the_sdks_and_the_clis_own_variables_do_not_stop_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a shell that exports what the SDK, the CLI and the server's access log read
    for name, value in {"AGENTMEM_URL": "http://127.0.0.1:8787", "AGENTMEM_API_KEY": "am_" + "k" * 30,
                        "AGENTMEM_ACCESS_LOG": "1"}.items():
        monkeypatch.setenv(name, value)
    # When settings are loaded, Then they load, the key among them
    assert load_settings().api_key == "am_" + "k" * 30
    assert set(OTHER_VARIABLES) == {"AGENTMEM_URL", "AGENTMEM_ACCESS_LOG"}


@pytest.mark.parametrize(("variable", "named", "hint"), [
    ("AGENTMEM_SUMMARY_MODELID", "AGENTMEM_SUMMARY_MODELID", "AGENTMEM_SUMMARY_MODEL_ID"),
    ("AGENTMEM_EMBEDER", "AGENTMEM_EMBEDER", "AGENTMEM_EMBEDDER"),
    ("AGENTMEM_BEDROCK_MODEL_ID", "AGENTMEM_BEDROCK_MODEL_ID", None),  # the summary model's former name
    ("agentmem_tabel", "agentmem_tabel", "AGENTMEM_TABLE"),
])
def test_an_unknown_variable_stops_the_start_and_is_named(
    monkeypatch: pytest.MonkeyPatch, variable: str, named: str, hint: str | None
) -> None:
    # Given a variable no setting reads (a typo, a name that is gone)
    monkeypatch.setenv(variable, "x")
    # When settings are loaded, Then loading stops with a message that names it (and the nearest name)
    with pytest.raises(SettingsError) as raised:
        load_settings()
    message = str(raised.value)
    assert f"unknown setting {named}" in message
    if hint:
        assert f"did you mean {hint}?" in message
    assert "\n" not in message


def test_several_unknown_variables_are_all_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEM_ONE", "1")
    monkeypatch.setenv("AGENTMEM_TWO", "2")
    with pytest.raises(SettingsError, match=r"unknown settings AGENTMEM_ONE, AGENTMEM_TWO"):
        load_settings()


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("AGENTMEM_BACKEND", "dynamo", "AGENTMEM_BACKEND: Input should be 'embedded' or 'aws'"),
    ("AGENTMEM_EMBEDDING_DIMENSION", "-3", "AGENTMEM_EMBEDDING_DIMENSION: Input should be greater than 0"),
    ("AGENTMEM_SUMMARY_MODEL_ID", "", "AGENTMEM_SUMMARY_MODEL_ID: String should have at least 1 character"),
])
def test_an_invalid_value_stops_the_start_and_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert says in str(raised.value)


def test_a_flag_given_to_load_settings_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEM_BACKEND", "aws")
    assert load_settings(backend="embedded", data_dir=None).backend == "embedded"


def test_an_unknown_keyword_is_refused() -> None:
    # the infra tests load each function's environment as keywords: a stray one must not pass silently
    with pytest.raises(ValidationError, match="summary_modelid"):
        Settings(summary_modelid="amazon.nova-micro-v1:0")  # type: ignore[call-arg]


def test_the_region_comes_from_lambdas_variable_and_agentmems_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().region is None  # boto3's own lookup, then us-east-1
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    assert load_settings().region == "eu-central-1"
    monkeypatch.setenv("AWS_REGION", "eu-west-1")  # Lambda sets both
    assert load_settings().region == "eu-west-1"
    monkeypatch.setenv("AGENTMEM_REGION", "us-west-2")
    assert load_settings().region == "us-west-2"
    assert Settings(region="ap-south-1").region == "ap-south-1"


def test_the_summary_model_defaults_to_nova_micro() -> None:
    settings = load_settings()
    assert (settings.summariser, settings.summary_model_id) == ("extractive", "amazon.nova-micro-v1:0")


def test_settings_read_their_variables_in_any_case_and_arguments_win(monkeypatch: pytest.MonkeyPatch) -> None:
    # Settings reads its own variables (no pydantic-settings): AGENTMEM_<FIELD>, the name in any case, typed by the
    # field; a keyword argument wins over the variable
    monkeypatch.setenv("AGENTMEM_MAX_BODY_BYTES", "2048")
    monkeypatch.setenv("agentmem_table", "lower-case-table")
    settings = Settings()
    assert (settings.max_body_bytes, settings.table) == (2048, "lower-case-table")
    assert Settings(table="given").table == "given"
    monkeypatch.setenv("AGENTMEM_MAX_BODY_BYTES", "many")
    with pytest.raises(ValidationError, match="max_body_bytes"):
        Settings()

