"""Shared test setup: `tests/support` (fake LLM, MCP test servers, helpers) is importable."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).parent
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))
