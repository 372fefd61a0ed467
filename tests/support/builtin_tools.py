"""Helpers for the built-in tool tests."""

from __future__ import annotations

from typing import Any

from toolnexus.builtin import create_builtin_tools
from toolnexus.types import Tool


def tools_for(cfg: Any = None) -> dict[str, Tool]:
    """The ten built-ins for a `builtins` config, by name."""
    return {t.name: t for t in create_builtin_tools(cfg)}
