"""Fixtures for the built-in tool tests: tools by name, with or without a workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.builtin_tools import tools_for
from toolnexus.types import Tool


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A fresh workspace directory (a sibling `outside` directory exists for escape attempts)."""
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("top secret\n")
    return root


@pytest.fixture
def tools(ws: Path) -> dict[str, Tool]:
    """The built-ins confined to `ws`."""
    return tools_for({"workspace": str(ws)})
