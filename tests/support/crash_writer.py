"""A writer to kill, and the check of what it leaves: crash consistency of the embedded backend.

``python crash_writer.py DATA_DIR JOURNAL`` imports agentmem once, makes an account and an agent on the data
dir (in a child process), then, for each line ``round SEED DELAY`` read on stdin, forks a child that opens the
data dir and writes without pause — entry saves and deletes, journal appends (which start summary passes in the
background, so checkpoints are being written too), workspace files and edits of a checkpoint — kills it with
SIGKILL DELAY seconds later and prints ``exit STATUS``. The writer kills its own child before waiting for it,
so the pid cannot have gone to another process. Forking after the imports makes a round start in
milliseconds, so a test can afford many kills.

Before each call the child logs an *intent* to JOURNAL, and only after the call returned its *ack*: one
``os.write`` of one line each, so a kill leaves whole lines. ``check`` then opens the data dir again (a restart)
and says what is wrong, if anything: an acknowledged write missing, an entry, message or file not exactly one
that was written (half-written), ``seq`` with a gap, history not matching versions, the database or a full-text
index failing its integrity check, or the vector index's queue and vectors not matching the rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

AGENT = "writer"
MEMORY = f"agent:{AGENT}"
NAMES = tuple(f"note-{i}" for i in range(6))
CONVERSATIONS = ("chat-a", "chat-b")
PATHS = ("notes/today.md", "data/table.csv", "big.bin")
SUMMARY_MESSAGES = 8  # a pass every few appends: checkpoints are written all the time
OPS_PER_ROUND = 400  # a child not killed by then exits cleanly


# --- what is written: derived from the intent's id, so the check can rebuild it ------------------------------


def entry_content(token: str) -> str:
    """An entry's whole content: long enough that a torn write could not pass for it."""
    filler = hashlib.sha256(token.encode()).hexdigest()
    return f"{token} " + " ".join(filler[i : i + 8] for i in range(0, 64, 8)) * 40


def message_content(cid: str) -> str:
    return f"message {cid} " + "words in the journal " * 10


def file_bytes(intent_id: str, path: str) -> bytes:
    rng = random.Random(f"{intent_id}:{path}")
    size = rng.choice((1, 300, 4_096, 70_000, 400_000))
    return rng.randbytes(size)


def checkpoint_line(token: str) -> str:
    return f"- remember {token}"


# --- the writer -------------------------------------------------------------------------------------------


class Journal:
    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def log(self, record: dict[str, Any]) -> None:
        os.write(self.fd, (json.dumps(record) + "\n").encode())


def _container(data_dir: Path) -> Any:
    from agentmem.bootstrap import build_container
    from agentmem.settings import Settings

    return build_container(Settings(backend="embedded", data_dir=data_dir, summariser="extractive"))


def _setup(data_dir: Path) -> None:
    from agentmem.services.agents import AgentSettings

    container = _container(data_dir)
    _, secret = container.keys.create_account("crash")
    principal = container.keys.authenticate(f"Bearer {secret}")
    container.agents.put(principal, AGENT, AgentSettings(summary_messages=SUMMARY_MESSAGES, window_messages=4))
    (data_dir / "crash-key").write_text(secret)


def _round(data_dir: Path, journal: Journal, seed: int) -> None:
    from agentmem.domain.conversations import MessageDraft, checkpoint_name
    from agentmem.domain.errors import AgentmemError
    from agentmem.services.entries import SaveRequest

    rng = random.Random(seed)
    container = _container(data_dir)
    principal = container.keys.authenticate(f"Bearer {(data_dir / 'crash-key').read_text()}")
    for n in range(OPS_PER_ROUND):
        intent_id = f"{seed}-{n}"
        kind = rng.choices(("save", "delete", "append", "file", "checkpoint"), weights=(4, 1, 4, 2, 1))[0]
        intent: dict[str, Any] = {"id": intent_id, "op": kind}
        if kind in ("save", "delete"):
            intent["name"] = rng.choice(NAMES)
        elif kind == "append":
            intent["key"] = rng.choice(CONVERSATIONS)
            intent["cids"] = [f"{intent_id}.{i}" for i in range(rng.randint(1, 5))]
        elif kind == "file":
            intent["path"] = rng.choice(PATHS)
        else:
            intent["key"] = rng.choice(CONVERSATIONS)
        journal.log(intent)
        ack: dict[str, Any] = {"ack": intent_id}
        try:
            if kind == "save":
                saved = container.entries.save(principal, MEMORY, intent["name"], SaveRequest(
                    content=entry_content(intent_id), description=f"note {intent['name']}"))
                ack["version"] = saved.entry.version
            elif kind == "delete":
                ack["version"] = container.entries.delete(principal, MEMORY, intent["name"]).version
            elif kind == "append":
                drafts = [MessageDraft(role="user" if i % 2 == 0 else "assistant", content=message_content(cid),
                                       client_id=cid) for i, cid in enumerate(intent["cids"])]
                result = container.conversations.append(principal, AGENT, intent["key"], drafts)
                ack["seqs"] = [m.seq for m in result.messages]
            elif kind == "file":
                data = file_bytes(intent_id, intent["path"])
                container.workspaces.write(principal, AGENT, "files", intent["path"], data)
            else:
                name = checkpoint_name(intent["key"])
                current = container.entries.read(principal, MEMORY, name)
                saved = container.entries.save(principal, MEMORY, name, SaveRequest(
                    content=f"{current.content}\n{checkpoint_line(intent_id)}"))
                ack["version"] = saved.entry.version
        except AgentmemError as error:  # an answer (no such entry, no checkpoint yet): nothing was written
            ack["refused"] = error.code
        journal.log(ack)


def _fork(run: Any) -> int:
    pid = os.fork()
    if pid == 0:
        os.dup2(2, 1)  # the service's log lines go to stderr: stdout speaks the protocol
        code = 0
        try:
            run()
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        os._exit(code)
    return pid


def main(data_dir: Path, journal_path: Path) -> None:
    # the imports and the token counter's tables are loaded once, before any fork (no thread, no file open)
    import agentmem.adapters.embedded.blobs
    import agentmem.adapters.embedded.jobs
    import agentmem.adapters.embedded.vector_index
    import agentmem.bootstrap
    import agentmem.services.entries  # noqa: F401
    from agentmem.domain.tokens import count_tokens

    count_tokens("warm")

    data_dir.mkdir(parents=True, exist_ok=True)
    _, status = os.waitpid(_fork(lambda: _setup(data_dir)), 0)
    print(f"setup {status}", flush=True)
    journal = Journal(journal_path)
    for line in sys.stdin:
        _, seed_text, delay_text = line.split()
        seed = int(seed_text)
        pid = _fork(lambda seed=seed: _round(data_dir, journal, seed))
        time.sleep(float(delay_text))
        # the child is ours and not yet waited for (running, or a zombie if it finished): its pid cannot
        # have been reused, so the kill reaches it and nothing else
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        print(f"exit {status}", flush=True)


# --- the check --------------------------------------------------------------------------------------------


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def expect(self, ok: bool, problem: str) -> None:
        if not ok:
            self.problems.append(problem)


def read_journal(path: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The intents in the order they were made, and the acks by intent id."""
    intents: list[dict[str, Any]] = []
    acks: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)  # a line is whole, or not there: each was one write
        if "ack" in record:
            acks[record["ack"]] = record
        else:
            intents.append(record)
    return intents, acks


def _candidates(events: list[dict[str, Any]], acks: dict[str, dict[str, Any]]) -> list[dict[str, Any] | None]:
    """What may be stored after ``events`` (all of one name or path, in order): the state the last acknowledged
    write left (None: nothing, or absent), or that of any write made after it that was never acknowledged."""
    written = [e for e in events if "refused" not in acks.get(e["id"], {})]
    last_acked = max((i for i, e in enumerate(written) if e["id"] in acks), default=-1)
    states: list[dict[str, Any] | None] = [written[last_acked] if last_acked >= 0 else None]
    states += written[last_acked + 1 :]
    return [None if state is not None and state["op"] == "delete" else state for state in states]


def check(data_dir: Path, journal_path: Path) -> Report:
    """Open the data dir again, as a restarted server would, and check everything the writers left."""
    from agentmem.domain.conversations import checkpoint_name

    report = Report()
    intents, acks = read_journal(journal_path)
    report.counts["intents"] = len(intents)
    report.counts["acknowledged"] = sum(1 for i in intents if i["id"] in acks and "refused" not in acks[i["id"]])
    container = _container(data_dir)  # the restart: opening the data dir recovers the WAL
    principal = container.keys.authenticate(f"Bearer {(data_dir / 'crash-key').read_text()}")
    db = sqlite3.connect(f"file:{data_dir / 'agentmem.db'}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        _check_integrity(db, report)
        _check_entries(db, intents, acks, report)
        _check_journals(db, intents, acks, report)
        _check_checkpoints(db, intents, acks, report, [checkpoint_name(k) for k in CONVERSATIONS])
        _check_files(container, principal, intents, acks, report)
    finally:
        db.close()
    _check_vector_index(container, data_dir, report)
    return report


def _check_integrity(db: sqlite3.Connection, report: Report) -> None:
    report.expect(db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "PRAGMA integrity_check failed")
    for table in ("entries_fts", "messages_fts"):
        try:
            db.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
        except sqlite3.DatabaseError as error:  # read-only is fine: the check writes nothing when it passes
            report.expect("readonly" in str(error), f"{table} integrity-check: {error}")


def _entry_rows(db: sqlite3.Connection) -> dict[str, sqlite3.Row]:
    return {row["name"]: row for row in db.execute(
        "SELECT rowid, * FROM entries WHERE memory=? AND layer_user=''", (MEMORY,))}


def _history(db: sqlite3.Connection, name: str) -> list[sqlite3.Row]:
    """The name's versions as kept: ``entry_history``'s rows in the order written, then the entry's current
    version, which only the entry row holds (the history gets a version when it is replaced, deleted or expires)."""
    kept = list(db.execute(
        "SELECT version, content FROM entry_history WHERE memory=? AND layer_user='' AND name=? ORDER BY id",
        (MEMORY, name)))
    return kept + list(db.execute(
        "SELECT version, content FROM entries WHERE memory=? AND layer_user='' AND name=?", (MEMORY, name)))


def _check_history(db: sqlite3.Connection, name: str, row: sqlite3.Row | None, report: Report) -> None:
    # a version replaced without its snapshot (or a snapshot without the save that replaced it) shows here as a
    # version missing, or as the current one repeated in the history
    versions = [h["version"] for h in _history(db, name)]
    report.expect(versions == sorted(set(versions)), f"{name}: history versions repeat or go back: {versions}")


def _check_entries(db: sqlite3.Connection, intents: list[dict[str, Any]], acks: dict[str, dict[str, Any]],
                   report: Report) -> None:
    rows = _entry_rows(db)
    held, wanted = _indexed_words(db)
    for name in NAMES:
        events = [i for i in intents if i["op"] in ("save", "delete") and i.get("name") == name]
        row = rows.get(name)
        allowed = _candidates(events, acks)
        stored = None if row is None else row["content"]
        report.expect(any((c is None and stored is None) or (c is not None and stored == entry_content(c["id"]))
                          for c in allowed), f"{name}: holds {stored and stored[:30]!r}, not a write that may be there")
        acked = [acks[e["id"]]["version"] for e in events
                 if e["op"] == "save" and e["id"] in acks and "refused" not in acks[e["id"]]]
        report.expect(acked == sorted(set(acked)), f"{name}: acknowledged versions repeat or go back: {acked}")
        if row is not None and acked:
            report.expect(row["version"] >= acked[-1],
                          f"{name}: v{row['version']} behind the acknowledged v{acked[-1]}")
        history = {(h["version"], h["content"]) for h in _history(db, name)}
        for e in events:
            if e["op"] == "save" and e["id"] in acks and "refused" not in acks[e["id"]]:
                report.counts["acknowledged saves checked"] += 1
                report.expect((acks[e["id"]]["version"], entry_content(e["id"])) in history,
                              f"{name}: acknowledged v{acks[e['id']]['version']} missing from history")
        _check_history(db, name, row, report)
        if row is not None:
            report.expect(bool(held.get(row["rowid"])) and held.get(row["rowid"]) == wanted.get(row["rowid"]),
                          f"{name}: the keyword index does not hold the entry as stored")
    report.expect(held == wanted, "the keyword index holds words of entries that are gone or were changed, "
                                  "or misses some")


def _indexed_words(db: sqlite3.Connection) -> tuple[dict[int, set[tuple[Any, ...]]], dict[int, set[tuple[Any, ...]]]]:
    """What the keyword index holds, and what it would hold were it built afresh from the entries as stored:
    every (word, column, position) by rowid. The index is contentless, so this reads its postings (fts5vocab)
    and those of a fresh index of the rows, built in the connection's temp schema."""
    from agentmem.adapters.embedded.entry_words import add_scope_function

    add_scope_function(db)
    tokenize = db.execute("SELECT sql FROM sqlite_schema WHERE name='entries_fts'").fetchone()[0]
    db.execute("CREATE VIRTUAL TABLE temp.afresh" + tokenize[tokenize.index(" USING "):])
    db.execute("INSERT INTO temp.afresh (rowid, scope, name, description, content) SELECT rowid, "
               "entry_scope(account_id, memory, layer_user), name, description, content FROM entries "
               "WHERE conversation IS NULL")
    db.execute("CREATE VIRTUAL TABLE temp.held_words USING fts5vocab(main, entries_fts, instance)")
    db.execute("CREATE VIRTUAL TABLE temp.afresh_words USING fts5vocab(temp, afresh, instance)")
    found: list[dict[int, set[tuple[Any, ...]]]] = []
    for table in ("held_words", "afresh_words"):
        by_row: dict[int, set[tuple[Any, ...]]] = defaultdict(set)
        for term, doc, col, offset in db.execute(f"SELECT term, doc, col, offset FROM temp.{table}"):
            by_row[doc].add((term, col, offset))
        found.append(dict(by_row))
    return found[0], found[1]


def _check_journals(db: sqlite3.Connection, intents: list[dict[str, Any]], acks: dict[str, dict[str, Any]],
                    report: Report) -> None:
    for key in CONVERSATIONS:
        record = db.execute("SELECT * FROM conversations WHERE agent=? AND key=?", (AGENT, key)).fetchone()
        rows = [] if record is None else list(db.execute(
            "SELECT seq, client_id, content FROM messages WHERE conversation_id=? ORDER BY seq", (record["id"],)))
        seqs = [r["seq"] for r in rows]
        report.expect(seqs == list(range(1, len(seqs) + 1)), f"{key}: seq has gaps or repeats")
        if record is not None:
            report.expect(record["last_seq"] == len(seqs), f"{key}: last_seq {record['last_seq']} but {len(seqs)} rows")
            report.expect(record["folded_through"] <= record["last_seq"], f"{key}: folded past the journal's end")
        by_cid = {r["client_id"]: r for r in rows}
        written: set[str] = set()
        for e in (i for i in intents if i["op"] == "append" and i["key"] == key):
            written.update(e["cids"])
            present = [cid in by_cid for cid in e["cids"]]
            report.expect(all(present) or not any(present), f"{key}: append {e['id']} is half there")
            for cid in e["cids"]:
                if cid in by_cid:
                    report.expect(by_cid[cid]["content"] == message_content(cid), f"{key}: message {cid} is not whole")
            if e["id"] in acks and "refused" not in acks[e["id"]]:
                report.counts["acknowledged messages checked"] += len(e["cids"])
                report.expect([by_cid[c]["seq"] if c in by_cid else None for c in e["cids"]] == acks[e["id"]]["seqs"],
                              f"{key}: acknowledged append {e['id']} missing or renumbered")
        report.expect(set(by_cid) <= written, f"{key}: messages nobody wrote")


def _check_checkpoints(db: sqlite3.Connection, intents: list[dict[str, Any]], acks: dict[str, dict[str, Any]],
                       report: Report, names: list[str]) -> None:
    rows = _entry_rows(db)
    for key, name in zip(CONVERSATIONS, names, strict=True):
        row = rows.get(name)
        _check_history(db, name, row, report)
        record = db.execute("SELECT * FROM conversations WHERE agent=? AND key=?", (AGENT, key)).fetchone()
        if row is not None:
            report.counts["checkpoints"] += 1
            report.expect(record is not None and record["checkpoint_version"] <= row["version"],
                          f"{name}: the conversation names a checkpoint version it does not have")
        history = [h["content"] for h in _history(db, name)]
        for e in (i for i in intents if i["op"] == "checkpoint" and i["key"] == key):
            if e["id"] in acks and "refused" not in acks[e["id"]]:
                report.counts["acknowledged checkpoint edits checked"] += 1
                report.expect(any(checkpoint_line(e["id"]) in content for content in history),
                              f"{name}: acknowledged edit {e['id']} missing from history")


def _check_files(container: Any, principal: Any, intents: list[dict[str, Any]], acks: dict[str, dict[str, Any]],
                 report: Report) -> None:
    from agentmem.domain.errors import NotFoundError

    for path in PATHS:
        try:
            stored: bytes | None = container.workspaces.read(principal, AGENT, "files", path).data
        except NotFoundError:
            stored = None
        events = [i for i in intents if i["op"] == "file" and i["path"] == path]
        allowed = _candidates(events, acks)
        report.counts["acknowledged files checked"] += sum(1 for e in events if e["id"] in acks)
        report.expect(any((c is None and stored is None) or (c is not None and stored == file_bytes(c["id"], path))
                          for c in allowed), f"{path}: holds bytes no write that may be there wrote")


def _check_vector_index(container: Any, data_dir: Path, report: Report) -> None:
    """The queue, drained once after the restart, leaves a vector for every entry and message that has one
    and none for a row that is gone."""
    index = container.search_index
    index.catch_up()
    report.expect(index.pending() == 0, "the vector index's queue did not drain")
    db = sqlite3.connect(f"file:{data_dir / 'agentmem.db'}?mode=ro", uri=True)
    try:
        vectors = set(db.execute("SELECT kind, source FROM vectors"))
        entries = {("entry", r[0]) for r in db.execute("SELECT rowid FROM entries WHERE conversation IS NULL")}
        messages = {("message", r[0]) for r in db.execute("SELECT id FROM messages")}
    finally:
        db.close()
    report.counts["vectors"] = len(vectors)
    report.expect(entries <= vectors and messages <= vectors, "rows without a vector after the queue drained")
    report.expect(vectors <= entries | messages, "vectors of rows that are gone")


def kill_rounds(proc: Any, kills: int, rng: random.Random, delay: tuple[float, float] = (0.01, 0.3),
                long_delay: tuple[float, float] = (0.8, 2.0), long_share: float = 0.2) -> Iterator[bool]:
    """Run ``kills`` rounds of the writer ``proc``, each killed by it with SIGKILL after a random delay (a share of
    them long enough for a summary pass to write its checkpoint); yields whether the round was killed mid-way
    (True) or had finished its writes first."""
    for _ in range(kills):
        seconds = rng.uniform(*(long_delay if rng.random() < long_share else delay))
        proc.stdin.write(f"round {rng.randrange(1 << 30)} {seconds:.3f}\n")
        proc.stdin.flush()
        status = int(proc.stdout.readline().split()[1])
        yield os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
