"""Journal search against ``agentmem serve`` itself while it indexes a large import, over HTTP.

    .venv/bin/python bench/serve_lag.py                                # 6,000 long messages, 2 workers
    .venv/bin/python bench/serve_lag.py --workers 1 --messages 2000    # one process, a shorter run
    .venv/bin/python bench/serve_lag.py --within-last                  # within the import's last conversation
    .venv/bin/python bench/serve_lag.py --read-your-writes             # saves recalled by meaning meanwhile

``recall_lag.py`` runs the indexer and the searches in one process. ``agentmem serve`` runs 2 worker processes
by default, the indexer in the first only, and the kernel spreads the connections over both: this benchmark
measures that case. A fresh data dir and ``agentmem serve --workers N`` on a free port (``load.started``). The
long messages of ``recall_lag.py`` (1,000–4,000 characters, varied) are appended over HTTP, 40 a request, into
conversations of 200, as fast as the server takes them. Then journal search (hybrid, the default deadline,
top 10, over all of the user's conversations) is asked ``--searches`` times, one at a time, each on a new
connection, while the first worker's indexer embeds the import. Each answer's time, mode, fallback and
``index_lag`` are kept.

Prints a table and writes ``bench/results/serve_lag.json``: timeout fallbacks (the goal: none), p50 / p99 /
max while the index is behind and once it has caught up. A benchmark: nothing is asserted.

``--within-last``: each search is asked within the import's last conversation (``conversation=``), until its
answers say ``index_lag`` 0, and the time that took from the import's end is the figure: a conversation searched
while its messages wait at the end of the queue is embedded first, whichever worker answered the search
(``adapters/embedded/asked_first.py``). Writes ``bench/results/serve_lag_within_last.json``.

``--read-your-writes``: while the import is appended and embedded, another user saves an entry in a memory of
their own every half second and at once recalls it by meaning (``mode=semantic``, by the entry's own words, no
cut-off): an entry is found only once it is embedded. The figure is how many of the saves made during the import
(the index behind the appends all along) were found by that first recall. Writes
``bench/results/serve_lag_read_your_writes.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from corpus import DAYS, NOUNS, PLACES
from load import started
from recall_lag import AGENT, CHUNK, QUESTIONS, USER, conversation_of, fill, long_message, summary

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "bench" / "results" / "serve_lag.json"


def call(url: str, key: str, method: str, path: str, body: Any = None) -> dict[str, Any]:
    """One request on a connection of its own (so that the server's workers share the searches)."""
    request = urllib.request.Request(url + "/v1" + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        answer: dict[str, Any] = json.loads(response.read() or b"{}")
        return answer


def import_all(url: str, key: str, texts: list[str]) -> None:
    """``texts`` appended over HTTP, 40 a request, into conversations of 200 (``conv-001``, ...), user and assistant
    in turn."""
    for start in range(0, len(texts), CHUNK):
        drafts = [{"role": "user" if n % 2 == 0 else "assistant", "content": text}
                  for n, text in enumerate(texts[start:start + CHUNK])]
        call(url, key, "POST", f"/agents/{AGENT}/conversations/{conversation_of(start)}/messages?user={USER}",
             {"messages": drafts})


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()}


def run(count: int, searches: int, workers: int, seed: int, *, within_last: bool = False) -> dict[str, Any]:
    rng = random.Random(seed)
    texts = [long_message(rng) for _ in range(count)]
    queries = [fill(rng.choice(QUESTIONS), rng) for _ in range(50)]
    with (tempfile.TemporaryDirectory(prefix="agentmem-serve-lag-") as folder,
          started("embedded", Path(folder), ["--workers", str(workers)]) as (url, key, _)):
        call(url, key, "PUT", f"/agents/{AGENT}", {})
        begun = time.perf_counter()
        import_all(url, key, texts)
        imported = time.perf_counter()
        imported_s = imported - begun
        last = conversation_of(count - 1)
        within = f"&conversation={last}" if within_last else ""
        rows: list[dict[str, Any]] = []
        caught_up_s = None
        n = 0
        while (caught_up_s is None and time.perf_counter() - imported < 600) if within_last else n < searches:
            query = urllib.parse.quote(queries[n % len(queries)])
            start_s = time.perf_counter()
            page = call(url, key, "GET", f"/agents/{AGENT}/messages/search?user={USER}&q={query}{within}")
            rows.append({"ms": (time.perf_counter() - start_s) * 1000, "mode": page.get("mode"),
                         "fallback": page.get("fallback"), "index_lag": page.get("index_lag"), "n": n})
            if within_last and page.get("index_lag") == 0:
                caught_up_s = time.perf_counter() - imported
            n += 1
    behind = [r for r in rows if r["index_lag"]]
    caught = [r for r in rows if not r["index_lag"]]
    return {
        "benchmark": "serve_lag", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average": os.getloadavg(), "workers": workers, "messages": count,
        "characters": sum(len(t) for t in texts), "import_s": round(imported_s, 2),
        "all": summary(rows), "while_behind": summary(behind) if behind else None,
        "caught_up": summary(caught) if caught else None,
        "timeouts_at": [r["n"] for r in rows if r["fallback"] == "timeout"],
        **({"within": last, "its_index_lag_0_after_import_s": None if caught_up_s is None else round(caught_up_s, 2)}
           if within_last else {}),
    }


def read_your_writes(count: int, workers: int, seed: int) -> dict[str, Any]:
    """``--read-your-writes`` (the module's docstring)."""
    import threading

    rng = random.Random(seed)
    texts = [long_message(rng) for _ in range(count)]
    with (tempfile.TemporaryDirectory(prefix="agentmem-serve-ryw-") as folder,
          started("embedded", Path(folder), ["--workers", str(workers)]) as (url, key, _)):
        call(url, key, "PUT", f"/agents/{AGENT}", {})
        call(url, key, "PUT", "/memories/notes", {})
        importer = threading.Thread(target=import_all, args=(url, key, texts), daemon=True)
        begun = time.perf_counter()
        importer.start()
        saves: list[dict[str, Any]] = []
        n = 0
        while importer.is_alive() and n < 400:  # (the import's backlog is behind the appends all along)
            n += 1
            content = (f"Reminder {n}: the {rng.choice(PLACES)} team meets the {rng.choice(NOUNS)} supplier on "
                       f"{rng.choice(DAYS)} at {rng.randint(8, 17)}:{rng.choice(['00', '15', '30', '45'])}.")
            call(url, key, "PUT", f"/memories/notes/entries/reminder-{n}?user=bo",
                 {"content": content, "description": f"reminder {n}"})
            t0 = time.perf_counter()
            page = call(url, key, "GET", f"/memories/notes/search?user=bo&mode=semantic&min_score=0&limit=100"
                                         f"&q={urllib.parse.quote(content)}")
            names = [item.get("name") for item in page.get("items", [])]
            by_meaning = page.get("mode") == "semantic"  # (a recall that fell back answered by the words)
            saves.append({"n": n, "found": by_meaning and f"reminder-{n}" in names,
                          "ms": (time.perf_counter() - t0) * 1000, "mode": page.get("mode"),
                          "fallback": page.get("fallback"), "index_lag": page.get("index_lag"),
                          "at_s": round(t0 - begun, 2)})
            time.sleep(0.5)
        importer.join()
    return {
        "benchmark": "serve_lag --read-your-writes", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average": os.getloadavg(), "workers": workers, "messages": count, "saves": len(saves),
        "found_at_once": sum(1 for s in saves if s["found"]),
        "fell_back": sum(1 for s in saves if s["mode"] != "semantic"),
        "recall_ms": {"p50": round(sorted(s["ms"] for s in saves)[len(saves) // 2], 2),
                      "max": round(max(s["ms"] for s in saves), 2)},
        "rows": saves,
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"\nJournal search against agentmem serve --workers {result['workers']} while it indexes "
          f"{result['messages']:,} long messages ({result['characters']:,} characters, imported over HTTP in "
          f"{result['import_s']} s)")
    print(f"  {'':22} {'searches':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'timeouts':>9}")
    for label, key in (("while the index is behind", "while_behind"), ("caught up", "caught_up"), ("all", "all")):
        row = result[key]
        if row:
            print(f"  {label:22} {row['searches']:>8} {row['p50_ms']:>8} {row['p99_ms']:>8} {row['max_ms']:>8} "
                  f"{row['timeouts']:>9}")
    print(f"  timeouts at searches {result['timeouts_at']} (0 is the first)")
    if "within" in result:
        print(f"  searched within {result['within']} (the import's last): its index_lag was 0 "
              f"{result['its_index_lag_0_after_import_s']} s after the import ended")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=6000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print only; leave the results file alone")
    parser.add_argument("--within-last", action="store_true",
                        help="search within the import's last conversation until it is indexed (the docstring)")
    parser.add_argument("--read-your-writes", action="store_true",
                        help="another user's saves recalled by meaning at once while the import is indexed")
    args = parser.parse_args()
    if args.read_your_writes:
        written = read_your_writes(args.messages, args.workers, args.seed)
        print(f"\nWhile agentmem serve --workers {written['workers']} imports {written['messages']:,} long messages: "
              f"{written['saves']} saves by another user, each recalled by meaning at once: "
              f"{written['found_at_once']} found, {written['fell_back']} fell back to the words "
              f"(recall p50 {written['recall_ms']['p50']} ms, "
              f"max {written['recall_ms']['max']} ms)")
        if not args.no_write:
            out = RESULT.with_name("serve_lag_read_your_writes.json")
            out.write_text(json.dumps(written, indent=2) + "\n")
            print(f"wrote {out.relative_to(ROOT)}")
        return
    result = run(args.messages, args.searches, args.workers, args.seed, within_last=args.within_last)
    print_table(result)
    if not args.no_write:
        out = RESULT.with_name("serve_lag_within_last.json") if args.within_last else RESULT
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
