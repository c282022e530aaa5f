"""One Python session for one page, as a reader's REPL: blocks arrive on stdin (one JSON line each: the code
padded so its line numbers are the page's, the page's name, and a file to answer in), run in one namespace,
and each answer says what the block printed and the traceback it raised, if any."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from pathlib import Path


def main() -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}
    for line in sys.stdin:
        request = json.loads(line)
        printed = io.StringIO()
        error = None
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(request["code"], request["page"], "exec"), namespace)
        except BaseException:  # noqa: BLE001 - whatever the block raised is its failure, reported to the harness
            error = traceback.format_exc()
        answer = Path(request["answer"])
        answer.with_suffix(".tmp").write_text(json.dumps({"printed": printed.getvalue(), "error": error}))
        answer.with_suffix(".tmp").rename(answer)


if __name__ == "__main__":
    main()
