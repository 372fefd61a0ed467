"""The real MCP servers' tools of `tests/fixtures/tool_search/` as toolkit tools, and recall@5
of a toolkit's search over the labelled requests beside them (also read by
`bench/tool_search.py`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolnexus import Toolkit
from toolnexus.types import Tool, sanitize

__all__ = ["FIXTURES", "labelled_requests", "real_mcp_tools", "recall_at_5"]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool_search"


def real_mcp_tools(execute: Callable[..., Any]) -> list[Tool]:
    """The fixture's tools, deferred, named as a toolkit names an MCP server's tools."""
    captured = json.loads((FIXTURES / "mcp_tools.json").read_text(encoding="utf-8"))
    return [
        Tool(
            f"{server['server']}_{sanitize(listed['name'])}",
            listed.get("description", ""),
            listed["inputSchema"],
            "mcp",
            execute,
            metadata={"title": listed["title"]} if "title" in listed else None,
            defer_loading=True,
        )
        for server in captured["servers"]
        for listed in server["tools"]
    ]


def labelled_requests() -> list[dict[str, Any]]:
    """`{"request": str, "tools": [the names it needs]}` each."""
    return json.loads((FIXTURES / "requests.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def recall_at_5(toolkit: Toolkit, labelled: list[dict[str, Any]]) -> float:
    """The share of each request's tools among its five best matches, averaged."""
    found = 0.0
    for case in labelled:
        top = {t.name for t in toolkit.search_tools(case["request"], 5)}
        found += len(top & set(case["tools"])) / len(case["tools"])
    return found / len(labelled)
