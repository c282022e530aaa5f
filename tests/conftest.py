"""Shared test set-up: the harnesses in tests/support (emulators started by the tests) are importable."""

from __future__ import annotations

import os
import sys
from pathlib import Path

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

# tests/frameworks runs in an environment per agent framework (.ci/frameworks sets AGENTMEM_FRAMEWORK), where
# agentmem is installed beside that framework's latest release; the development environment leaves it out
if not os.environ.get("AGENTMEM_FRAMEWORK"):
    collect_ignore = ["frameworks"]
