"""The example of one framework's section of docs/integrations.md, run as written with a scripted model: the
lines that pick the model (``model = ...`` and a model package's import) give way to the one the test passes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import agentmem

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def example(heading: str) -> str:
    """The first Python block under ``## heading``."""
    text = "\n" + DOC.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, f"no example under {heading}"
    return match.group(1)


def run_example(heading: str, model: Any, client: agentmem.Client) -> list[str]:
    """Run the example with ``model``, and ``client`` as the default client: the lines it printed."""
    lines = [line for line in example(heading).splitlines()
             if not line.startswith("model = ") and "langchain_openai" not in line]
    printed: list[str] = []
    namespace: dict[str, Any] = {"model": model, "__name__": "docs_integrations",
                                 "print": lambda *values: printed.append(" ".join(str(v) for v in values).strip())}
    agentmem.set_default_client(client)
    try:
        exec(compile("\n".join(lines), f"docs/integrations.md ({heading})", "exec"), namespace)
    finally:
        agentmem.set_default_client(None)
    return printed
