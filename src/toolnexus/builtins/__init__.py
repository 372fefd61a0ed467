"""The ten built-in tools (placeholder until the built-ins land)."""

from __future__ import annotations

from typing import Any

from toolnexus.types import Tool


def select_builtins(cfg: Any = None) -> list[Tool]:
    return []
