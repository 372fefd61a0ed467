"""The lexical index behind `Toolkit.search_tools` and the gateway's `search_tools`: BM25 (the
`bm25s` library) over each tool's name, title, description and parameter names and
descriptions. A tool hidden from the model (an MCP Apps app-only tool, `_apps.for_the_model`) is
never indexed, so no search can offer it.

`bm25s` (and numpy under it) is imported when the first index is built, never with toolnexus.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from toolnexus._apps import for_the_model
from toolnexus.types import Tool

__all__ = [
    "SEARCH_SCHEMA",
    "SEARCH_TOOL",
    "ToolIndex",
    "search_limit",
    "search_text",
    "shadowed_message",
]

SEARCH_TOOL = "search_tools"
"""The name of the search tool a run (`tool_search="local"`) or a gateway declares."""
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words describing the tool you need"},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 20,
            "description": "How many tools to return (default 5)",
        },
    },
    "required": ["query"],
}


def search_limit(args: dict[str, Any]) -> int:
    """The `limit` of a search call, 5 when absent or out of range."""
    limit = args.get("limit", 5)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 20:
        return 5
    return limit


def shadowed_message(taken: Tool, where: str) -> str:
    """Why `where` cannot add its `search_tools` tool: the toolkit already has `taken`."""
    return (
        f'{where} adds a tool named "{SEARCH_TOOL}" to find the deferred tools, and the '
        f"toolkit already has one (source {taken.source!r}): rename or disable that tool "
        f'(disable_tools=["{SEARCH_TOOL}"]), or do without tool search'
    )


# `read_file`, `readFile`, `read-file` and `server.read` are all two words to a reader.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[_\-./:]+")


def _words(text: str) -> str:
    return _SEPARATORS.sub(" ", _CAMEL.sub(" ", text))


def search_text(tool: Tool) -> str:
    """What a query is matched against: the name (split into words), title, description and
    every top-level parameter's name and description."""
    names = [tool.name]  # split into words together: one pass of the patterns per tool
    parts = [tool.description]
    title = (tool.metadata or {}).get("title")
    if isinstance(title, str):
        parts.append(title)
    properties = tool.input_schema.get("properties")
    if isinstance(properties, dict):
        for name, spec in properties.items():
            names.append(str(name))
            if isinstance(spec, dict) and isinstance(spec.get("description"), str):
                parts.append(spec["description"])
    parts.append(_words(" ".join(names)))
    return "\n".join(parts)


class ToolIndex:
    """A BM25 index over a fixed list of tools (less those hidden from the model); build a new
    one when the list changes."""

    __slots__ = ("_retriever", "_tokenizer", "_tools")

    def __init__(self, tools: Sequence[Tool]) -> None:
        import bm25s  # type: ignore[import-untyped]  # no type information shipped
        from bm25s.tokenization import Tokenizer  # type: ignore[import-untyped]

        self._tools = [t for t in tools if for_the_model(t.metadata)]
        self._tokenizer: Any = Tokenizer(stopwords="en")
        self._retriever: Any = None
        if not self._tools:
            return
        corpus = [search_text(t) for t in self._tools]
        ids = self._tokenizer.tokenize(corpus, return_as="ids", show_progress=False)
        self._retriever = bm25s.BM25()
        self._retriever.index(ids, show_progress=False)

    def search(self, query: str, limit: int) -> list[Tool]:
        """The best `limit` tools for `query`, best first; only tools sharing a word with it."""
        if self._retriever is None or limit < 1:
            return []
        ids = self._tokenizer.tokenize(
            [_words(query)], update_vocab=False, return_as="ids", show_progress=False
        )
        if not any(ids[0]):
            return []  # no word of the query is in any tool's text
        k = min(limit, len(self._tools))
        found, scores = self._retriever.retrieve(ids, k=k, show_progress=False, n_threads=1)
        return [
            self._tools[int(doc)]
            for doc, score in zip(found[0], scores[0], strict=True)
            if score > 0
        ]
