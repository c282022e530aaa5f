"""The hand-written memories of the entry recall evaluation (``bench/recall_eval/entries``, format in
``bench/recall_eval/README.md``) stay loadable: every save is one the API takes (SPEC §2.1's names and sizes,
§2.5's screening for the layer it is saved to), every gold names an entry its memory saves, and both halves
hold questions of every kind. A data edit that breaks one of these would stop ``bench/recall_eval_entries.py``
halfway through a run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from agentmem.domain.screening import screen

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "recall_eval" / "entries"
FILES = sorted(DATA.rglob("*.json"))
KINDS = {"paraphrase", "keyword", "multi", "updated", "negative_context"}
NAME = re.compile(r"^[a-z0-9._-]{1,64}$")


def read(path: Path) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return raw


def test_there_are_enough_memories_entries_and_questions() -> None:
    memories = [read(path) for path in FILES]
    entries = sum(len({e["name"] for e in m["entries"]}) for m in memories)
    questions = sum(len(m["questions"]) for m in memories)
    assert len(memories) >= 12 and entries >= 300 and questions >= 250, (len(memories), entries, questions)
    assert len({m["id"] for m in memories}) == len(memories)
    for split in ("dev", "test"):
        kinds = {q["kind"] for m in memories if m["split"] == split for q in m["questions"]}
        assert kinds == KINDS, (split, kinds)


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_every_save_is_one_the_api_takes(path: Path) -> None:
    memory = read(path)
    assert memory["split"] in ("dev", "test") and NAME.match(memory["memory"])
    for entry in memory["entries"]:
        assert NAME.match(entry["name"]) and not entry["name"].startswith("context."), entry["name"]
        assert 1 <= len(entry["description"]) <= 200 and "\n" not in entry["description"], entry["name"]
        assert 1 <= len(entry["content"]) <= 20_000, entry["name"]
        for text in (entry["description"], entry["content"]):
            found = screen(text)
            assert found.injection is None, (entry["name"], found.injection)
            # sensitive content may only be saved in a user's layer (SPEC §2.5)
            assert memory.get("user") or not found.sensitive, (entry["name"], found.sensitive)


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_every_question_has_a_kind_and_gold_its_memory_saves(path: Path) -> None:
    memory = read(path)
    names = {e["name"] for e in memory["entries"]}
    saved_twice = {e["name"] for e in memory["entries"] if sum(x["name"] == e["name"] for x in memory["entries"]) > 1}
    assert len({q["id"] for q in memory["questions"]}) == len(memory["questions"])
    for q in memory["questions"]:
        assert q["kind"] in KINDS and q["question"].strip(), q["id"]
        assert q["gold"] and set(q["gold"]) <= names, (q["id"], q["gold"])
        if q["kind"] == "multi":
            assert len(set(q["gold"])) >= 2, q["id"]
        if q["kind"] == "updated":  # only a later save can answer it
            assert set(q["gold"]) & saved_twice, q["id"]
