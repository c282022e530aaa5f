"""One Python session for one page, as a reader's REPL: blocks arrive on stdin (one JSON line each: the code
padded so its line numbers are the page's, the page's name, and a file to answer in), run in one namespace,
and each answer says what the block printed, the traceback it raised, if any, and what the SDK warned of."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
import warnings
from pathlib import Path


def main() -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}
    for line in sys.stdin:
        request = json.loads(line)
        printed = io.StringIO()
        error = None
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            try:
                with contextlib.redirect_stdout(printed):
                    exec(compile(request["code"], request["page"], "exec"), namespace)
            except BaseException:  # whatever the block raised is its failure, reported to the harness
                error = traceback.format_exc()
        # what the SDK warns a reader of (settings given to from_name that the stored agent does not have)
        sdk_warnings = [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}" for w in warned
                        if w.category.__module__.startswith("agentmem")]
        answer = Path(request["answer"])
        answer.with_suffix(".tmp").write_text(
            json.dumps({"printed": printed.getvalue(), "error": error, "warnings": sdk_warnings}))
        answer.with_suffix(".tmp").rename(answer)


if __name__ == "__main__":
    main()
