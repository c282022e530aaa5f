"""The hand-written conversations of the journal recall evaluation (``bench/recall_eval/data``, ``holdout``,
``holdout2``; format in ``bench/recall_eval/README.md``) stay loadable and their questions answerable: ids in
order, roles the journal takes, every gold a message of its conversation, asked after the last of it, and each
kind's own shape (a timeline question's steps in three sessions or more). A data edit that breaks one of these
would stop ``bench/recall_eval.py`` halfway through a run, or score a question nobody can answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "bench" / "recall_eval"
FILES = sorted(p for folder in ("data", "holdout", "holdout2") for p in (EVAL / folder).rglob("*.json"))
KINDS = {"fact", "temporal", "multi_hop", "updated_fact", "decision", "order", "timeline"}
ROLES = {"user", "assistant", "tool_call", "tool_result"}


def read(path: Path) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return raw


def test_both_halves_hold_every_style_and_kind() -> None:
    conversations = [read(path) for path in (EVAL / "data").rglob("*.json")]
    assert len(conversations) >= 30 and len({c["id"] for c in conversations}) == len(conversations)
    for split in ("dev", "test"):
        half = [c for c in conversations if c["split"] == split]
        assert {c["style"] for c in half} == {"chat", "project", "agent_run"}, split
        assert {q["kind"] for c in half for q in c["questions"]} == KINDS, split
    assert sum(len(c["questions"]) for c in conversations) >= 400


@pytest.mark.parametrize("path", FILES, ids=[f"{path.parent.parent.name}/{path.stem}" for path in FILES])
def test_every_question_has_a_kind_and_gold_its_conversation_holds(path: Path) -> None:
    convo = read(path)
    assert convo["split"] in ("dev", "test") and convo["style"] in ("chat", "project", "agent_run")
    messages = [m for session in convo["sessions"] for m in session["messages"]]
    assert [m["id"] for m in messages] == [f"m{n}" for n in range(1, len(messages) + 1)]
    assert all(m["role"] in ROLES and m["content"].strip() for m in messages)
    session_of = {m["id"]: n for n, session in enumerate(convo["sessions"]) for m in session["messages"]}
    last = max(m["created_at"] for m in messages)
    assert len({q["id"] for q in convo["questions"]}) == len(convo["questions"])
    for q in convo["questions"]:
        assert q["kind"] in KINDS and q["question"].strip(), q["id"]
        assert q["gold"] and set(q["gold"]) <= set(session_of), (q["id"], q["gold"])
        assert q["asked_at"] > last, q["id"]
        if q["kind"] in ("multi_hop", "order"):
            assert len(set(q["gold"])) >= 2, q["id"]
        if q["kind"] == "timeline":  # the steps of a thread through the conversation
            assert 3 <= len(set(q["gold"])) <= 6, q["id"]
            assert len({session_of[g] for g in q["gold"]}) >= 3, q["id"]
