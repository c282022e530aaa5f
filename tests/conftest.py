"""Shared test set-up: the harnesses in tests/support (emulators started by the tests) are importable."""

from __future__ import annotations

import sys
from pathlib import Path

SUPPORT = Path(__file__).parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))
