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
read apart; an id no turn has is left out, and a question left with none is left out, counted). A turn with no
text is left out (the journal keeps none), and one whose id an earlier turn has is read as ``<id>#<place>``. Its kind is
``category_N``: the published data numbers its categories without naming them, and readers of it disagree
on which of 1 and 4 is multi-hop; 2 is about time, 3 asks what the conversation only implies, and 5 is
adversarial (about something never said: no gold to find), so 5 is left out, counted.

**LongMemEval** (Wu et al., 2025, "LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive Memory";
its ``longmemeval_s.json``, ``_m`` or ``_oracle``): a list of questions, each with a haystack of its own, a
user's sessions with a chat assistant::

    {"question_id": "e47becba", "question_type": "single-session-user", "question": "...", "answer": "...",
     "question_date": "2023/05/30 (Tue) 23:40", "haystack_dates": ["2023/05/20 (Sat) 02:21", ...],
     "haystack_session_ids": ["sharegpt_yywfLrH_0", ...],
     "haystack_sessions": [[{"role": "user", "content": "...", "has_answer": true},
                            {"role": "assistant", "content": "..."}], ...],
     "answer_session_ids": ["answer_280352e9"]}

Each question is one conversation of the test split, its haystack's sessions in order, style ``assistant``: a
turn's id is ``s<session>t<turn>`` (from 1), its time its session's (``haystack_dates``), each turn 30 seconds
after the one before. Its gold is the turns marked ``has_answer`` (the data's turn-level evidence); its kind is
its ``question_type``. Left out, and said: a question none of whose turns is marked (abstention questions,
``…_abs``, ask about what was never said), and a turn with no text (the journal keeps none).

**BEAM** (Tavakoli et al., 2025, "Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in LLMs"):
long conversations between a user and an assistant (coding, maths and general topics), in sessions ("batches"),
with probing questions of ten abilities. Read in either of its published layouts:

- its repository's folders (``chats/500K/``: a folder a conversation, ``<n>/chat.json`` and
  ``<n>/probing_questions/probing_questions.json``; pass the folder of one size, or of one conversation)::

    [{"batch_number": 1,
      "turns": [[{"role": "user", "id": 0, "time_anchor": "January-05-2024", "content": "..."},
                 {"role": "assistant", "id": 1, "content": "..."}], ...]}, ...]

    {"information_extraction": [{"question": "...", "answer": "...", "source_chat_ids": [12, 13]}, ...],
     "event_ordering": [{"question": "...", "source_chat_ids": {"<a part>": [40, 41], "<another>": [388]}}],
     "abstention": [{"question": "...", "answer": "..."}], ...}

- its Hugging Face rows, written as JSON or JSON lines (or the ``.parquet`` file itself, where ``pyarrow`` is
  installed): ``{"conversation_id": "1", "chat": [[<message>, ...], ...], "probing_questions": "<the same
  mapping, as a string>"}``.

Each conversation is one of the test split, style ``assistant``, a session a batch. A message's id is its ``id``,
and its time its session's ``time_anchor`` (a date: the day's start, each message 30 seconds after the one
before; a message with an anchor of its own starts again from it). Where the repository holds a conversation cut
short (``chat_trunecated.json``), that is read, as BEAM's own harness does. A question's kind is its ability,
its gold the messages its ``source_chat_ids`` name (ints, numbers written as text, lists within lists, and the
lists of a mapping, all read). Left out, and said: a question whose ids name no message (``abstention`` asks
about what was never said), an id no message has, an id two messages have (the data repeats some: which one is
meant cannot be told, so it names neither; the later message is read as ``<id>#<place>``), a message with no
text, a session time that does not read.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeGuard

from agentmem.domain.conversations import MESSAGE_CONTENT_MAX

TURN_GAP = timedelta(seconds=30)
ADVERSARIAL = 5  # LoCoMo's category of questions about what was never said
_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"D\d+:\d+")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LOCOMO_TIME = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
# "2023/05/20 (Sat) 02:21"
_BEAM_TIMES = ("%B-%d-%Y", "%b-%d-%Y", "%B %d, %Y", "%d %B %Y", "%Y-%m-%d")  # "January-05-2024"
BEAM_CHAT, BEAM_SHORT, BEAM_QUESTIONS = "chat.json", "chat_trunecated.json", "probing_questions/probing_questions.json"
_LONGMEMEVAL_TIME = re.compile(r"^(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})$")


def key_of(raw: object, fallback: str) -> str:
    """A sample's or question's id as a conversation key (1–128 of ``[A-Za-z0-9._:@-]``): any other character is
    ``-``; ``fallback`` when none is left."""
    key = re.sub(r"[^A-Za-z0-9._:@-]", "-", str(raw or ""))[:128].strip(".")
    return key or fallback


def unicode_of(text: str, where: str, out: Read) -> str:
    """``text`` as valid Unicode: a lone surrogate, which JSON may carry and the API refuses with a 400 (no store
    can hold it), is read as U+FFFD, said."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        out.left_out.append(f"{where}: a lone surrogate, read as U+FFFD (the API takes only valid Unicode)")
        return _SURROGATE.sub("\ufffd", text)  # (json.loads joins a pair into one character: any left is lone)


def fit(text: str, where: str, out: Read) -> str:
    """``text`` as the journal takes it: valid Unicode (``unicode_of``), at most ``MESSAGE_CONTENT_MAX`` characters
    (a longer one is cut, said)."""
    text = unicode_of(text, where, out)
    if len(text) <= MESSAGE_CONTENT_MAX:
        return text
    out.left_out.append(f"{where}: {len(text):,} characters; the first {MESSAGE_CONTENT_MAX:,} are appended (the "
                        "journal takes no more)")
    return text[:MESSAGE_CONTENT_MAX]


@dataclass
class Read:
    """A public set as the evaluation's conversations (raw: ``{"id", "style", "split", "sessions", "questions"}``,
    the format of ``bench/recall_eval/README.md``) and what was left out of it, said."""

    conversations: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def is_locomo(raw: object) -> TypeGuard[list[dict[str, Any]]]:
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


def turn_time(start: datetime, place: int) -> str:
    """The time of a session's turn at ``place`` (from 0), as the journal takes it: ``TURN_GAP`` after the one
    before."""
    return (start + place * TURN_GAP).isoformat().replace("+00:00", "Z")


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
        cid = key_of(sample.get("sample_id"), f"locomo-{n}")
        talk = sample["conversation"]
        first = talk.get("speaker_a")
        sessions = []
        known: set[str] = set()  # the turns' ids so far
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
                dia = str(turn.get("dia_id") or f"D{number}:{i + 1}")
                if not str(turn.get("text") or "").strip() and not turn.get("blip_caption"):
                    out.left_out.append(f"{source}: {cid} turn {dia}: no text (the journal keeps none); left out")
                    continue
                if dia in known:  # (the journal's ids are one a message: a second is told apart, and said)
                    out.left_out.append(f"{source}: {cid} turn {dia}: its id is another turn's; read as {dia}#{i + 1}, "
                                        "which no evidence names")
                    dia = f"{dia}#{i + 1}"
                known.add(dia)
                message: dict[str, Any] = {"id": dia, "role": "user" if turn.get("speaker") == first else "assistant",
                                           "content": fit(turn_text(turn, names=names), f"{source}: {cid} turn {dia}",
                                                          out)}
                if start is not None:
                    message["created_at"] = turn_time(start, i)
                messages.append(message)
            if messages:
                sessions.append({"date": talk.get(f"session_{number}_date_time"), "messages": messages})
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
            questions.append({"id": f"q{q}", "kind": f"category_{category}",
                              "question": unicode_of(str(item["question"]), f"{source}: {cid} q{q}", out),
                              "gold": gold})
        out.conversations.append({"id": cid, "style": "chat", "split": "test", "sessions": sessions,
                                  "questions": questions})
    return out


def is_longmemeval(raw: object) -> TypeGuard[list[dict[str, Any]]]:
    """Whether a parsed JSON file is LongMemEval's: a list of questions, each with its haystack of sessions."""
    return (isinstance(raw, list) and bool(raw)
            and all(isinstance(q, dict) and isinstance(q.get("haystack_sessions"), list) and "question" in q
                    for q in raw))


def haystack_time(text: object) -> datetime | None:
    """LongMemEval's session time ("2023/05/20 (Sat) 02:21"), in UTC; None when it reads otherwise."""
    match = _LONGMEMEVAL_TIME.match(" ".join(str(text).split())) if isinstance(text, str) else None
    if match is None:
        return None
    try:
        year, month, day, hour, minute = map(int, match.groups())
        return datetime(year, month, day, hour, minute, tzinfo=UTC)
    except ValueError:
        return None


def read_longmemeval(raw: list[dict[str, Any]], source: str) -> Read:
    """LongMemEval's questions (``is_longmemeval``) as the evaluation's conversations, one a question."""
    out = Read()
    for n, item in enumerate(raw, start=1):
        qid = key_of(item.get("question_id"), f"longmemeval-{n}")
        dates = item.get("haystack_dates") or []
        sessions, gold, unread, empty = [], [], 0, 0
        for i, turns in enumerate(item["haystack_sessions"], start=1):
            date = dates[i - 1] if i <= len(dates) else None
            start = haystack_time(date)
            unread += start is None
            messages = []
            for j, turn in enumerate(turns if isinstance(turns, list) else [], start=1):
                text = str(turn.get("content") or "").strip()
                if not text or turn.get("role") not in ("user", "assistant"):
                    empty += 1
                    continue
                message: dict[str, Any] = {"id": f"s{i}t{j}", "role": turn["role"],
                                           "content": fit(text, f"{source}: {qid} turn s{i}t{j}", out)}
                if start is not None:
                    message["created_at"] = turn_time(start, j - 1)
                messages.append(message)
                if turn.get("has_answer") is True:
                    gold.append(message["id"])
            if messages:
                sessions.append({"date": date, "messages": messages})
        if unread:
            out.left_out.append(f"{source}: {qid}: {unread} session time{'s' if unread > 1 else ''} that do not read; "
                                "their turns have none")
        if empty:
            out.left_out.append(f"{source}: {qid}: {empty} turn{'s' if empty > 1 else ''} with no text, or not the "
                                "user's or the assistant's, left out")
        if not gold:
            out.left_out.append(f"{source}: {qid}: no turn is marked has_answer"
                                + (" (an abstention question)" if qid.endswith("_abs") else "") + "; left out")
            continue
        question = {"id": "q1", "kind": str(item.get("question_type") or "unknown"),
                    "question": unicode_of(str(item["question"]), f"{source}: {qid}", out), "gold": gold}
        out.conversations.append({"id": qid, "style": "assistant", "split": "test", "sessions": sessions,
                                  "questions": [question]})
    return out


def beam_time(text: object) -> datetime | None:
    """BEAM's session time ("January-05-2024"), the day's start in UTC; None when it reads otherwise."""
    if not isinstance(text, str):
        return None
    for form in _BEAM_TIMES:
        try:
            return datetime.strptime(text.strip(), form).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _messages_in(value: object) -> Iterator[dict[str, Any]]:
    """The messages (mappings with a ``role`` and ``content``) within ``value``, in order, however nested."""
    if isinstance(value, dict):
        if "role" in value and "content" in value:
            yield value
            return
        for child in value.values():
            yield from _messages_in(child)
    elif isinstance(value, list):
        for child in value:
            yield from _messages_in(child)


def _beam_sessions(chat: object) -> list[list[dict[str, Any]]]:
    """A BEAM chat's sessions, each its messages in order: the repository's batches (each with its ``turns``),
    the rows' list of sessions, or else one session of every message in it."""
    if isinstance(chat, list) and chat and all(isinstance(b, dict) and "turns" in b for b in chat):
        return [list(_messages_in(b["turns"])) for b in chat]
    if isinstance(chat, list) and chat and all(isinstance(s, list) for s in chat):
        return [list(_messages_in(s)) for s in chat]
    return [list(_messages_in(chat))]


def _beam_id(value: object) -> int | None:
    """A BEAM message id or source id as a number: an int, or a number written as text; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _source_ids(value: object) -> list[object]:
    """Every id a question's ``source_chat_ids`` holds, in order: within lists, and the values of a mapping."""
    if isinstance(value, dict):
        return [i for child in value.values() for i in _source_ids(child)]
    if isinstance(value, list):
        return [i for child in value for i in _source_ids(child)]
    return [] if value is None else [value]


def beam_conversation(cid: str, chat: object, asked: object, where: str, out: Read) -> None:
    """One BEAM conversation (its chat, and its probing questions by ability) as one of the evaluation's, added
    to ``out`` with what it leaves out; ``where`` names it in what is said."""
    if isinstance(asked, str):  # the rows hold the questions as text: JSON, or a Python literal
        written = asked
        try:
            asked = json.loads(written)
        except ValueError:
            try:
                asked = ast.literal_eval(written)
            except (ValueError, SyntaxError):
                out.left_out.append(f"{where}: its probing questions do not read; left out")
                return
    if not isinstance(asked, dict):
        out.left_out.append(f"{where}: its probing questions are not a mapping of abilities; left out")
        return
    held = Counter(_beam_id(m.get("id")) for session in _beam_sessions(chat) for m in session)
    first: dict[int, str] = {}  # a raw id -> the id of the message read under it (the first that holds it)
    sessions, place, empty = [], 0, 0
    for number, turns in enumerate(_beam_sessions(chat), start=1):
        messages: list[dict[str, Any]] = []
        start: datetime | None = None
        since = 0  # the place in the session its time counts from (its anchor's)
        for i, turn in enumerate(turns):
            place += 1
            anchor = turn.get("time_anchor")
            if anchor not in (None, "", "None"):
                read = beam_time(anchor)
                if read is None:
                    out.left_out.append(f"{where} session {number}: its time {anchor!r} does not read")
                else:
                    start, since = read, i
            text = turn.get("content")
            if not isinstance(text, str) or not text.strip() or turn.get("role") not in ("user", "assistant"):
                empty += 1
                continue
            raw = _beam_id(turn.get("id"))
            mid = str(raw) if raw is not None and raw not in first else f"{'' if raw is None else raw}#{place}"
            if raw is not None:
                first.setdefault(raw, mid)
            message: dict[str, Any] = {"id": mid, "role": turn["role"],
                                       "content": fit(text, f"{where} message {mid}", out)}
            if start is not None:
                message["created_at"] = turn_time(start, i - since)
            messages.append(message)
        if messages:
            sessions.append({"date": messages[0].get("created_at"), "messages": messages})
    twice = sorted(raw for raw, count in held.items() if raw is not None and count > 1)
    if empty:
        out.left_out.append(f"{where}: {empty} message{'s' if empty > 1 else ''} with no text, or not the user's or "
                            "the assistant's, left out")
    if twice:
        out.left_out.append(f"{where}: ids {twice} are each held by more than one message: the later are "
                            "read as <id>#<place>, and evidence naming them is left out (which is meant cannot be "
                            "told)")
    questions = []
    for ability, items in asked.items():
        for n, item in enumerate(items if isinstance(items, list) else [], start=1):
            qid = f"{key_of(ability, 'ability')}-{n}"
            text = item.get("question") if isinstance(item, dict) else None
            if not isinstance(text, str) or not text.strip():
                out.left_out.append(f"{where} {qid}: no question; left out")
                continue
            named = [(raw, _beam_id(raw)) for raw in _source_ids(item.get("source_chat_ids"))]
            gold = list(dict.fromkeys(first[i] for _, i in named if i is not None and i in first and held[i] == 1))
            unknown = sorted({str(raw) for raw, i in named if i is None or i not in first})
            ambiguous = sorted({i for _, i in named if i is not None and i in first and held[i] > 1})
            if unknown:
                out.left_out.append(f"{where} {qid}: evidence {unknown} names no message")
            if ambiguous:
                out.left_out.append(f"{where} {qid}: evidence {ambiguous} names more than one message")
            if not gold:
                why = "asks about what was never said" if not named else "none of its evidence names one message"
                out.left_out.append(f"{where} {qid}: {why}; left out")
                continue
            questions.append({"id": qid, "kind": str(ability), "question": unicode_of(text, f"{where} {qid}", out),
                              "gold": gold})
    out.conversations.append({"id": cid, "style": "assistant", "split": "test", "sessions": sessions,
                              "questions": questions})


def is_beam(raw: object) -> TypeGuard[list[dict[str, Any]]]:
    """Whether parsed rows are BEAM's (its Hugging Face rows): each with a ``chat`` and its ``probing_questions``."""
    return (isinstance(raw, list) and bool(raw)
            and all(isinstance(r, dict) and isinstance(r.get("chat"), list) and "probing_questions" in r
                    for r in raw))


def read_beam(raw: list[dict[str, Any]], source: str) -> Read:
    """BEAM's rows (``is_beam``) as the evaluation's conversations, one a row."""
    out = Read()
    for n, row in enumerate(raw, start=1):
        cid = key_of(f"beam-{row.get('conversation_id', n)}", f"beam-{n}")
        beam_conversation(cid, row["chat"], row["probing_questions"], f"{source}: {cid}", out)
    return out


def beam_folders(folder: Path) -> list[Path]:
    """BEAM's conversation folders (its repository's layout: ``chat.json`` and ``probing_questions/``) at or
    under ``folder``, by their number."""
    found = [d for d in (folder, *folder.rglob("*")) if d.is_dir() and (d / BEAM_CHAT).is_file()
             and (d / BEAM_QUESTIONS).is_file()]
    return sorted(found, key=lambda d: (str(d.parent), int(d.name) if d.name.isdigit() else 0, d.name))


def read_beam_folders(folders: list[Path]) -> Read:
    """BEAM's conversation folders (``beam_folders``) as the evaluation's conversations, one a folder, the chat
    cut short where there is one (``chat_trunecated.json``, as BEAM's own harness reads)."""
    out = Read()
    for folder in folders:
        cid = key_of(f"beam-{folder.parent.name}-{folder.name}", f"beam-{folder.name}")
        chat = folder / BEAM_SHORT if (folder / BEAM_SHORT).is_file() else folder / BEAM_CHAT
        if chat.name == BEAM_SHORT:
            out.left_out.append(f"{folder}: the conversation cut short ({BEAM_SHORT}) is read, as BEAM's harness does")
        try:
            raw_chat = json.loads(chat.read_text(encoding="utf-8"))
            asked = json.loads((folder / BEAM_QUESTIONS).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            out.left_out.append(f"{folder}: {error!r}; left out")
            continue
        beam_conversation(cid, raw_chat, asked, f"{folder}: {cid}", out)
    return out


def rows_of(path: Path) -> object:
    """A public set's file as parsed rows: JSON, JSON lines (``.jsonl``, or JSON that is one value a line), or a
    ``.parquet`` file where ``pyarrow`` is installed."""
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as parquet  # optional: only to read parquet
        except ImportError as missing:
            raise ValueError("reading .parquet needs pyarrow (pip install pyarrow), or the rows written as JSON "
                             "lines") from missing
        return parquet.read_table(path).to_pylist()
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise
        return [json.loads(line) for line in lines]


def read_public(raw: object, source: str, *, names: bool = False) -> tuple[str, Read] | None:
    """A public set's parsed file as the evaluation's conversations, with the set's name; None when it is no
    format known here. ``names``: each turn opens with its speaker's name (LoCoMo's; LongMemEval's turns are a
    user's and an assistant's, named by their role already)."""
    if is_locomo(raw):
        return "LoCoMo", read_locomo(raw, source, names=names)
    if is_longmemeval(raw):
        return "LongMemEval", read_longmemeval(raw, source)
    if is_beam(raw):
        return "BEAM", read_beam(raw, source)
    return None
