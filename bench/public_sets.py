"""Public long-conversation benchmarks read as ``bench/recall_eval.py``'s conversations, so that whoever holds
their data asks our journal search the same questions, through the same HTTP API, beside the same BM25.

Nothing here downloads: pass the file you have (``--data path/to/locomo10.json``). Only the format is known here;
no public data is in this repository.

**LoCoMo** (Maharana et al., 2024, "Evaluating Very Long-Term Conversational Memory of LLM Agents"; its
``locomo10.json``): a list of samples, each two people's conversation over months, in sessions::

    {"sample_id": "conv-26",
     "conversation": {"speaker_a": "Caroline", "speaker_b": "Melanie",
                      "session_1_date_time": "1:56 pm on 8 May, 2023",
                      "session_1": [{"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! ...",
                                     "img_url": ["..."], "blip_caption": "a photo of ..."}, ...], ...},
     "qa": [{"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023",
             "evidence": ["D1:3"], "category": 2}, ...]}

Each sample is one conversation of the test split (nothing is tuned on it): ``speaker_a``'s turns are appended as
the user's, ``speaker_b``'s as the assistant's, each turn's id is its ``dia_id``, and its time is its session's
(a turn 30 seconds after the one before, so that the journal keeps their order). A turn that shares a photo
carries the photo's caption after its text (``[photo: …]``), as a chat client that describes images would hand
it over; with ``names=True`` each turn opens with its speaker's name (``Caroline: …``), as many public harnesses
hand a transcript to a memory. A question's gold is its ``evidence`` (ids written together, "D8:6; D9:17", are
read apart; an id no turn has is left out, and a question left with none is left out, counted). Its kind is
``category_N``: the published data numbers its categories without naming them, and readers of it disagree
on which of 1 and 4 is multi-hop; 2 is about time, 3 asks what the conversation only implies, and 5 is
adversarial (about something never said: no gold to find), so 5 is left out, counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

TURN_GAP = timedelta(seconds=30)
ADVERSARIAL = 5  # LoCoMo's category of questions about what was never said
_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"D\d+:\d+")
_LOCOMO_TIME = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


@dataclass
class Read:
    """A public set as the evaluation's conversations (raw: ``{"id", "style", "split", "sessions", "questions"}``,
    the format of ``bench/recall_eval/README.md``) and what was left out of it, said."""

    conversations: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def is_locomo(raw: object) -> bool:
    """Whether a parsed JSON file is LoCoMo's: a list of samples, each with a ``conversation`` and its ``qa``."""
    return (isinstance(raw, list) and bool(raw)
            and all(isinstance(s, dict) and isinstance(s.get("conversation"), dict) and isinstance(s.get("qa"), list)
                    for s in raw))


def session_time(text: object) -> datetime | None:
    """LoCoMo's session time ("1:56 pm on 8 May, 2023"), in UTC; None when it reads otherwise."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.strptime(" ".join(text.split()), _LOCOMO_TIME).replace(tzinfo=UTC)
    except ValueError:
        return None


def turn_text(turn: dict[str, Any], *, names: bool) -> str:
    text = str(turn.get("text") or "").strip()
    caption = str(turn.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [photo: {caption}]".strip()
    return f"{turn.get('speaker')}: {text}" if names else text


def read_locomo(raw: list[dict[str, Any]], source: str, *, names: bool = False) -> Read:
    """LoCoMo's samples (``is_locomo``) as the evaluation's conversations, ``source`` naming the file in what is
    said to be left out."""
    out = Read()
    for n, sample in enumerate(raw, start=1):
        cid = str(sample.get("sample_id") or f"locomo-{n}")
        talk = sample["conversation"]
        first = talk.get("speaker_a")
        sessions = []
        numbers = sorted(int(m.group(1)) for key in talk if (m := _SESSION.match(key)))
        for number in numbers:
            turns = talk[f"session_{number}"]
            if not isinstance(turns, list) or not turns:
                continue
            start = session_time(talk.get(f"session_{number}_date_time"))
            if start is None:
                out.left_out.append(f"{source}: {cid} session {number}: its time "
                                    f"{talk.get(f'session_{number}_date_time')!r} does not read; its turns have none")
            messages = []
            for i, turn in enumerate(turns):
                message: dict[str, Any] = {"id": str(turn["dia_id"]),
                                           "role": "user" if turn.get("speaker") == first else "assistant",
                                           "content": turn_text(turn, names=names)}
                if start is not None:
                    message["created_at"] = (start + i * TURN_GAP).isoformat().replace("+00:00", "Z")
                messages.append(message)
            sessions.append({"date": talk.get(f"session_{number}_date_time"), "messages": messages})
        known = {m["id"] for s in sessions for m in s["messages"]}
        questions = []
        for q, item in enumerate(sample["qa"], start=1):
            category = item.get("category")
            if category == ADVERSARIAL:
                out.left_out.append(f"{source}: {cid} q{q}: adversarial (category 5), nothing to find")
                continue
            cited = [g for part in item.get("evidence") or [] for g in _EVIDENCE.findall(str(part))]
            gold = list(dict.fromkeys(g for g in cited if g in known))
            if len(gold) < len(cited):
                out.left_out.append(f"{source}: {cid} q{q}: evidence {sorted(set(cited) - known)} names no turn"
                                    + ("; the question is left out" if not gold else ""))
            if not gold:
                if not cited:
                    out.left_out.append(f"{source}: {cid} q{q}: no evidence; left out")
                continue
            questions.append({"id": f"q{q}", "kind": f"category_{category}", "question": str(item["question"]),
                              "gold": gold})
        out.conversations.append({"id": cid, "style": "chat", "split": "test", "sessions": sessions,
                                  "questions": questions})
    return out

