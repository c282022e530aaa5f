"""Metrics are emitted or not as the environment says at the moment of the count: Powertools'
``POWERTOOLS_METRICS_DISABLED`` and ``POWERTOOLS_DEV``, read again whenever they change
(``agentmem.observability.metrics_disabled`` reads them from the environment's own store)."""

from __future__ import annotations

import json

import pytest
from agentmem import observability
from agentmem.observability import count_request, metrics_disabled


@pytest.fixture(params=["store", "environ"])
def reading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs reading the environment's store, and as on a platform whose environ has none."""
    if request.param == "environ":
        monkeypatch.setattr(observability, "_ENVIRON", None)
    for name in ("POWERTOOLS_METRICS_DISABLED", "POWERTOOLS_DEV"):
        monkeypatch.delenv(name, raising=False)
    return str(request.param)


def test_the_switch_follows_the_environment_at_once(reading: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert metrics_disabled() is False
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    assert metrics_disabled() is True
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    assert metrics_disabled() is False
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED")
    monkeypatch.setenv("POWERTOOLS_DEV", "true")  # Powertools' development mode emits no metrics
    assert metrics_disabled() is True
    monkeypatch.delenv("POWERTOOLS_DEV")
    assert metrics_disabled() is False


def test_a_count_is_emitted_only_while_metrics_are_on(reading: str, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    count_request("entries.read", True)
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["operation"], line["billable"], line["Requests"]) for line in emitted] == [
        ("entries.read", "true", [1.0])]
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    count_request("entries.read", True)
    assert capsys.readouterr().out == ""
