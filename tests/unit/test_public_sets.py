"""A public long-conversation benchmark's file (LoCoMo's or LongMemEval's format, ``bench/public_sets.py``) is read
by the recall evaluation as conversations of its test split: the turns in order with their session's time, the
photo's caption with the turn that shares it, each question's evidence as its gold, and what cannot be asked left
out and said. The files here are made by the test: no public data is in the repository."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> Iterator[Any]:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import recall_eval

        yield recall_eval
    finally:
        sys.path.remove(str(ROOT / "bench"))


def locomo_sample(sample_id: str = "conv-1") -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Caroline", "speaker_b": "Melanie",
            "session_2_date_time": "10:37 am on 27 June, 2023",  # (keys in any order: sessions by number)
            "session_2": [
                {"speaker": "Melanie", "dia_id": "D2:1", "text": "We went camping at the beach last weekend."},
                {"speaker": "Caroline", "dia_id": "D2:2", "text": "Lovely. I signed up for a pottery class."},
            ],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! I went to a support group yesterday."},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "Here's what I painted last week.",
                 "img_url": ["https://example.org/p.jpg"], "blip_caption": "a painting of a sunrise over a lake"},
            ],
            "session_3_date_time": "some day in July",
            "session_3": [{"speaker": "Melanie", "dia_id": "D3:1", "text": "Back from the lake."},
                          {"speaker": "Caroline", "dia_id": "D3:2", "text": "  "},  # no text: the journal keeps none
                          {"speaker": "Caroline", "dia_id": "D3:1", "text": "Welcome back!"}],  # an id twice
        },
        "qa": [
            {"question": "When did Caroline go to the support group?", "answer": "7 May 2023",
             "evidence": ["D1:1"], "category": 2},
            {"question": "What did Melanie paint?", "answer": "a sunrise", "evidence": ["D1:2"], "category": 4},
            {"question": "What does Melanie do with her family?", "answer": "camping",
             "evidence": ["D2:1; D1:2"], "category": 1},  # two ids in one string
            {"question": "What might Caroline study?", "answer": "pottery", "evidence": ["D2:2", "D9:9"],
             "category": 3},  # D9:9 names no turn
            {"question": "What did Caroline paint?", "adversarial_answer": "a sunrise", "evidence": ["D1:2"],
             "category": 5},  # about something never said
            {"question": "Where does Melanie work?", "answer": "?", "evidence": ["D7:1"], "category": 4},
        ],
    }


def write(tmp_path: Path, samples: list[dict[str, Any]]) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def test_a_locomo_file_is_read_as_conversations_of_the_test_split(bench: Any, tmp_path: Path) -> None:
    samples = [locomo_sample("conv-1"), locomo_sample("conv 2/b"), locomo_sample("")]
    conversations, left_out = bench.read_data([write(tmp_path, samples)])

    assert [c.cid for c in conversations] == ["conv-1", "conv-2-b", "locomo-3"]  # each a conversation key
    convo = conversations[0]
    assert (convo.style, convo.split, convo.source) == ("chat", "test", "LoCoMo")
    assert [m["id"] for m in convo.messages] == ["D1:1", "D1:2", "D2:1", "D2:2", "D3:1", "D3:1#3"]  # by number
    assert [m["role"] for m in convo.messages] == ["user", "assistant", "assistant", "user", "assistant", "user"]
    assert convo.messages[0]["created_at"] == "2023-05-08T13:56:00Z"
    assert convo.messages[1]["created_at"] == "2023-05-08T13:56:30Z"  # each turn after the one before
    assert convo.messages[2]["created_at"] == "2023-06-27T10:37:00Z"
    assert "created_at" not in convo.messages[4]  # its session's time does not read
    assert convo.messages[1]["content"] == (
        "Here's what I painted last week. [photo: a painting of a sunrise over a lake]")
    assert [(q.qid, q.kind, q.gold) for q in convo.questions] == [
        ("conv-1/q1", "category_2", ["D1:1"]),
        ("conv-1/q2", "category_4", ["D1:2"]),
        ("conv-1/q3", "category_1", ["D2:1", "D1:2"]),
        ("conv-1/q4", "category_3", ["D2:2"]),
    ]
    said = "\n".join(line for line in left_out if "conv-1" in line)
    assert "session 3" in said and "'some day in July'" in said
    assert "q4: evidence ['D9:9'] names no turn" in said and "q4: evidence ['D9:9'] names no turn;" not in said
    assert "q5: adversarial (category 5)" in said
    assert "turn D3:2: no text" in said and "turn D3:1: its id is another turn's; read as D3:1#3" in said
    assert "q6: evidence ['D7:1'] names no turn; the question is left out" in said


def test_one_of_our_chats_written_in_locomos_format_reads_as_the_same_conversation(
    bench: Any, tmp_path: Path,
) -> None:
    ours = ROOT / "bench" / "recall_eval" / "data" / "chat" / "chat-05.json"
    raw = json.loads(ours.read_text(encoding="utf-8"))
    user, assistant = raw["speakers"]["user"], raw["speakers"]["assistant"]
    dia: dict[str, str] = {}
    talk: dict[str, Any] = {"speaker_a": user, "speaker_b": assistant}
    for n, session in enumerate(raw["sessions"], start=1):
        talk[f"session_{n}_date_time"] = "9:20 am on 10 March, 2025"
        turns = []
        for i, m in enumerate(session["messages"], start=1):
            dia[m["id"]] = f"D{n}:{i}"
            turns.append({"speaker": user if m["role"] == "user" else assistant, "dia_id": dia[m["id"]],
                          "text": m["content"]})
        talk[f"session_{n}"] = turns
    qa = [{"question": q["question"], "evidence": [dia[g] for g in q["gold"]], "category": 4}
          for q in raw["questions"]]

    (convo,), left_out = bench.read_data([write(tmp_path, [{"sample_id": "chat-05", "conversation": talk, "qa": qa}])])

    direct = bench.read_conversation(ours)
    assert left_out == []
    assert [(dia[m["id"]], m["role"], m["content"]) for m in direct.messages] == [
        (m["id"], m["role"], m["content"]) for m in convo.messages]
    assert [(q.text, [dia[g] for g in q.gold]) for q in direct.questions] == [
        (q.text, q.gold) for q in convo.questions]


def test_speaker_names_open_each_turn_of_a_public_set_and_of_our_own(bench: Any, tmp_path: Path) -> None:
    (locomo,), _ = bench.read_data([write(tmp_path, [locomo_sample()])], speaker_names=True)
    assert locomo.messages[0]["content"] == "Caroline: Hey Mel! I went to a support group yesterday."
    assert locomo.messages[2]["content"] == "Melanie: We went camping at the beach last weekend."

    ours = ROOT / "bench" / "recall_eval" / "data" / "agent_run" / "agent-01.json"
    raw = json.loads(ours.read_text(encoding="utf-8"))
    plain = bench.read_conversation(ours)
    named = bench.read_conversation(ours, speaker_names=True)
    for before, after in zip(plain.messages, named.messages, strict=True):
        if before["role"] in raw["speakers"]:
            assert after["content"] == f"{raw['speakers'][before['role']]}: {before.get('content') or ''}"
        else:  # a tool's call or result speaks for nobody
            assert after == before
    assert {m["role"] for m in plain.messages} > {"user", "assistant"}


def test_a_public_sets_run_writes_beside_ours_never_over_them(bench: Any, tmp_path: Path) -> None:
    (locomo,), _ = bench.read_data([write(tmp_path, [locomo_sample()])])
    ours = bench.read_conversation(ROOT / "bench" / "recall_eval" / "data" / "chat" / "chat-01.json")

    assert bench.outputs([ours], "") == (ROOT / "bench/results/recall_eval.json", ROOT / "docs/img/recall-eval.png")
    assert bench.outputs([ours], "_across") == (ROOT / "bench/results/recall_eval_across.json",
                                                ROOT / "docs/img/recall-eval-across.png")
    assert bench.outputs([locomo], "_thread") == (ROOT / "bench/results/recall_eval_locomo_thread.json",
                                                  ROOT / "docs/img/recall-eval-locomo-thread.png")


def longmemeval_item(question_id: str, *, marked: bool = True) -> dict[str, Any]:
    return {
        "question_id": question_id, "question_type": "knowledge-update",
        "question": "How many bikes do I own now?", "answer": "four", "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": ["sharegpt_a", "answer_b"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/28 (Sun) 18:05"],
        "haystack_sessions": [
            [{"role": "user", "content": "Can you suggest a road bike under 1,000 euros?"},
             {"role": "assistant", "content": "A few good ones: ..."}],
            [{"role": "user", "content": "I just bought my fourth bike, a gravel one.", "has_answer": marked},
             {"role": "assistant", "content": ""},  # no text: the journal keeps none
             {"role": "assistant", "content": "Congratulations! Four bikes is a proper stable. " + "x" * 60_000}],
        ],
        "answer_session_ids": ["answer_b"],
    }


def test_a_longmemeval_file_is_a_conversation_a_question_its_marked_turns_the_gold(
    bench: Any, tmp_path: Path,
) -> None:
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps([longmemeval_item("e47becba"), longmemeval_item("9a1b_abs", marked=False)]))

    conversations, left_out = bench.read_data([path])

    (convo,) = conversations
    assert (convo.cid, convo.style, convo.split, convo.source) == ("e47becba", "assistant", "test", "LongMemEval")
    assert [m["id"] for m in convo.messages] == ["s1t1", "s1t2", "s2t1", "s2t3"]
    assert [m["created_at"] for m in convo.messages] == [
        "2023-05-20T02:21:00Z", "2023-05-20T02:21:30Z", "2023-05-28T18:05:00Z", "2023-05-28T18:06:00Z"]
    assert [(q.qid, q.kind, q.text, q.gold) for q in convo.questions] == [
        ("e47becba/q1", "knowledge-update", "How many bikes do I own now?", ["s2t1"])]
    said = "\n".join(left_out)
    assert "e47becba: 1 turn with no text" in said
    assert len(convo.messages[-1]["content"]) == 50_000  # the journal takes no more: cut, and said
    assert "e47becba turn s2t3: 60,048 characters; the first 50,000 are appended" in said
    assert "9a1b_abs: no turn is marked has_answer (an abstention question); left out" in said
    assert bench.outputs(conversations, "")[0] == ROOT / "bench/results/recall_eval_longmemeval.json"


def test_a_lone_surrogate_the_api_would_refuse_is_read_as_a_replacement_character_and_said(
    bench: Any, tmp_path: Path,
) -> None:
    sample = locomo_sample()
    sample["conversation"]["session_1"][0]["text"] = "Hey Mel \ud83d! I went to a support group yesterday."
    sample["qa"][0]["question"] = "When did Caroline go to the support group \udc00?"
    item = longmemeval_item("e47becba")
    item["haystack_sessions"][1][0]["content"] = "I just bought my fourth bike \ud800."
    item["question"] = "How many bikes \ud800 do I own now?"
    locomo = write(tmp_path, [sample])
    longmemeval = tmp_path / "longmemeval_s.json"
    longmemeval.write_text(json.dumps([item]))

    (talk, haystack), left_out = bench.read_data([locomo, longmemeval])

    assert talk.messages[0]["content"] == "Hey Mel \ufffd! I went to a support group yesterday."
    assert talk.questions[0].text == "When did Caroline go to the support group \ufffd?"
    assert haystack.messages[2]["content"] == "I just bought my fourth bike \ufffd."
    assert haystack.questions[0].text == "How many bikes \ufffd do I own now?"
    said = [line for line in left_out if "lone surrogate" in line]
    assert [line.split(": ", 1)[1].split(":")[0] for line in said] == [
        "conv-1 turn D1", "conv-1 q1", "e47becba turn s2t1", "e47becba"]


def test_a_file_that_is_neither_format_is_said_and_left_out(bench: Any, tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"conversation": "not a mapping", "qa": []}]), encoding="utf-8")
    conversations, left_out = bench.read_data([odd])
    assert conversations == []
    assert len(left_out) == 1 and left_out[0].startswith(str(odd))


def test_the_evaluation_runs_a_public_set_through_the_api_beside_bm25(
    bench: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("POWERTOOLS_METRICS_DISABLED", "POWERTOOLS_TRACE_DISABLED", "POWERTOOLS_LOG_LEVEL"):
        monkeypatch.setenv(name, "WARNING" if name.endswith("LEVEL") else "true")  # (main sets them if unset)
    path = write(tmp_path, [locomo_sample()])
    out, plot = tmp_path / "results.json", tmp_path / "plot.png"

    code = bench.main(["--data", str(path), "--systems", "keyword", "--out", str(out), "--plot", str(plot)])

    results = json.loads(out.read_text())
    assert results["what"] == "LoCoMo conversations"
    assert any("adversarial" in line for line in results["left_out"])
    test_half = results["systems"]["bm25"]["test"]
    assert test_half["all"]["n"] == 4
    assert set(test_half["by_kind"]) == {"category_1", "category_2", "category_3", "category_4"}
    assert set(results["per_question"]["keyword"]) == {"conv-1/q1", "conv-1/q2", "conv-1/q3", "conv-1/q4"}
    assert plot.exists()
    assert code == 0  # hybrid was not asked: nothing to hold to BM25


def beam_chat() -> list[dict[str, Any]]:
    """A BEAM chat as its repository writes one: batches of turns, a time on each batch's first message."""
    return [
        {"batch_number": 1, "turns": [
            [{"role": "user", "id": 0, "time_anchor": "January-05-2024", "index": "1,1",
              "question_type": "main_question", "content": "I'm setting up a chat app on Node 18 with Socket.io 4.6."},
             {"role": "assistant", "id": 1, "content": "Here is a server with error handling: ..."}],
            [{"role": "user", "id": 2, "content": "I get 'Invalid or unknown protocol version' on the client."},
             {"role": "assistant", "id": 3, "content": "That is a client and server version mismatch: ..."}],
        ]},
        {"batch_number": 2, "turns": [
            [{"role": "user", "id": 4, "time_anchor": "February-12-2024", "content": "I moved the app to port 4000."},
             {"role": "assistant", "id": 5, "content": ""},  # no text: the journal keeps none
             {"role": "user", "id": 6, "content": "And I dropped the Redis adapter."},
             {"role": "assistant", "id": 6, "content": "Fine: one instance needs no adapter."}],  # an id twice
            [{"role": "user", "id": 7, "time_anchor": "sometime in March", "content": "Deadline is the 30th."}],
        ]},
    ]


def beam_questions() -> dict[str, list[dict[str, Any]]]:
    return {
        "information_extraction": [
            {"question": "Which Socket.io version did I start with?", "answer": "4.6", "source_chat_ids": [0]}],
        "knowledge_update": [  # ids written as text, within lists, in a mapping
            {"question": "What port does the app run on now?", "source_chat_ids": {"first": ["0"], "then": [[4]]}}],
        "event_ordering": [
            {"question": "Did the protocol error come before the port move?", "source_chat_ids": [2, 4, 99]}],
        "contradiction_resolution": [  # 6 is held by two messages: which one is meant cannot be told
            {"question": "Did I keep the Redis adapter?", "source_chat_ids": [6]}],
        "abstention": [{"question": "What database did I choose?", "answer": "not said"}],
    }


def test_a_beam_folder_of_its_repository_is_read_a_conversation_a_folder(bench: Any, tmp_path: Path) -> None:
    size = tmp_path / "chats" / "500K"
    for number in ("10", "2"):  # read by number
        (size / number / "probing_questions").mkdir(parents=True)
        (size / number / "chat.json").write_text(json.dumps(beam_chat()), encoding="utf-8")
        (size / number / "probing_questions" / "probing_questions.json").write_text(json.dumps(beam_questions()))
        (size / number / "topic.json").write_text(json.dumps({"title": "a chat app"}))  # not a conversation
    short = beam_chat()[:1]  # where the repository cut a chat short, that is what BEAM's harness reads
    (size / "10" / "chat_trunecated.json").write_text(json.dumps(short), encoding="utf-8")

    conversations, left_out = bench.read_data([size])

    assert [(c.cid, c.source, c.style, c.split) for c in conversations] == [
        ("beam-500K-2", "BEAM", "assistant", "test"), ("beam-500K-10", "BEAM", "assistant", "test")]
    convo = conversations[0]
    assert [m["id"] for m in convo.messages] == ["0", "1", "2", "3", "4", "6", "6#8", "7"]
    assert [m["role"] for m in convo.messages] == [
        "user", "assistant", "user", "assistant", "user", "user", "assistant", "user"]
    assert [m.get("created_at") for m in convo.messages] == [
        "2024-01-05T00:00:00Z", "2024-01-05T00:00:30Z", "2024-01-05T00:01:00Z", "2024-01-05T00:01:30Z",
        "2024-02-12T00:00:00Z", "2024-02-12T00:01:00Z", "2024-02-12T00:01:30Z", "2024-02-12T00:02:00Z"]
    assert [(q.qid, q.kind, q.gold) for q in convo.questions] == [
        ("beam-500K-2/information_extraction-1", "information_extraction", ["0"]),
        ("beam-500K-2/knowledge_update-1", "knowledge_update", ["0", "4"]),
        ("beam-500K-2/event_ordering-1", "event_ordering", ["2", "4"])]
    said = "\n".join(left_out)
    assert "beam-500K-2: 1 message with no text" in said
    assert "beam-500K-2: ids [6] are each held by more than one message" in said
    assert "beam-500K-2 event_ordering-1: evidence ['99'] names no message" in said
    assert "beam-500K-2 contradiction_resolution-1: evidence [6] names more than one message" in said
    assert "beam-500K-2 contradiction_resolution-1: none of its evidence names one message; left out" in said
    assert "beam-500K-2 abstention-1: asks about what was never said; left out" in said
    assert "beam-500K-2 session 2: its time 'sometime in March' does not read" in said
    assert [m["id"] for m in conversations[1].messages] == ["0", "1", "2", "3"]  # the chat cut short
    assert "chat_trunecated.json) is read" in said
    assert not any("topic.json" in line for line in left_out)
    assert bench.outputs(conversations, "")[0] == ROOT / "bench/results/recall_eval_beam.json"


def test_beams_published_rows_are_read_as_json_json_lines_or_parquet(bench: Any, tmp_path: Path) -> None:
    sessions = [[m for turn in batch["turns"] for m in turn] for batch in beam_chat()]  # the rows: sessions
    rows = [{"conversation_id": "1", "conversation_seed": {"category": "Coding"}, "chat": sessions,
             "probing_questions": json.dumps(beam_questions())},
            {"conversation_id": "2", "chat": sessions, "probing_questions": repr(beam_questions())},  # a literal
            {"conversation_id": "3", "chat": sessions, "probing_questions": "{not read"}]
    as_json, as_lines = tmp_path / "beam.json", tmp_path / "beam-100K.jsonl"
    as_json.write_text(json.dumps(rows), encoding="utf-8")
    as_lines.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")

    for path in (as_json, as_lines):
        conversations, left_out = bench.read_data([path])
        assert [c.cid for c in conversations] == ["beam-1", "beam-2"]
        assert all(c.source == "BEAM" for c in conversations)
        assert [q.gold for q in conversations[1].questions] == [["0"], ["0", "4"], ["2", "4"]]
        assert [m["id"] for m in conversations[0].messages] == ["0", "1", "2", "3", "4", "6", "6#8", "7"]
        assert any("beam-3: its probing questions do not read; left out" in line for line in left_out)

    parquet = tmp_path / "100K-00000-of-00001.parquet"
    parquet.write_bytes(b"PAR1")
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # without pyarrow, said how to read it, not a crash
        conversations, left_out = bench.read_data([parquet])
        assert conversations == [] and "needs pyarrow" in left_out[0]
