"""Assembly-time naming: first-wins dedupe, 64-character cap, hash-suffixed collision renames."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

from toolnexus._log import warn
from toolnexus.types import Tool

MAX_TOOL_NAME = 64  # providers reject longer function names


def _hashed_name(name: str, original: str) -> str:
    suffix = hashlib.sha256(original.encode("utf-8")).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME - len(suffix) - 1]}_{suffix}"


def add_unique(
    tools: Iterable[Tool], into: dict[str, Tool], *, report: Callable[[str], None] = warn
) -> list[Tool]:
    """Add `tools` to the name map `into` in order; return the tools actually added.

    Same original name as a tool already present ⇒ a duplicate: dropped with a warning.
    A different original name that lands on the same name (sanitising, the 64-character cap)
    ⇒ renamed deterministically (name cut, `_`, 8 hex digits of SHA-256 of the original).
    Warnings go to `report`.
    """
    added: list[Tool] = []
    for tool in tools:
        name = tool.name
        if len(name) > MAX_TOOL_NAME:
            name = _hashed_name(name, tool.original_name)
            report(
                f'tool name "{tool.original_name}" is longer than {MAX_TOOL_NAME} '
                f'characters — exposed as "{name}"'
            )
        existing = into.get(name)
        if existing is not None and existing.original_name != tool.original_name:
            renamed = _hashed_name(name, tool.original_name)
            report(
                f'tool "{tool.original_name}" collides with "{existing.original_name}" as '
                f'"{name}" — exposed as "{renamed}"'
            )
            name = renamed
            existing = into.get(name)
        if existing is not None:
            report(f'duplicate tool name "{name}" — keeping first')
            continue
        final = tool if name == tool.name else tool.renamed(name)
        into[name] = final
        added.append(final)
    return added
