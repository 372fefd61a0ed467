"""Tool search in the loop: which tools a request declares when some are deferred.

`local`: the eager tools, one `search_tools` function tool, and the deferred tools a search
has named (kept for the rest of the conversation: the search results in its transcript name
them). `native`: every tool, the deferred ones in the wire's deferred form beside the
provider's own search tool (Anthropic, OpenAI Responses), whose result blocks stay in the
transcript as the provider sent them. `auto`: native where the wire has it, else local.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from toolnexus._tool_search import SEARCH_SCHEMA, SEARCH_TOOL, search_limit, shadowed_message
from toolnexus.errors import ConfigError
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from toolnexus.client._wire import Dialect

__all__ = ["LocalSearch", "ToolSearch", "check_tool_search", "search_mode"]

ToolSearch: TypeAlias = Literal["auto", "local", "native"]
"""How a run finds deferred tools (`None`: it does not; every tool is declared)."""
_MODES = ("auto", "local", "native")
_LOADED = "Tools now callable: "
_LOADED_LINE = re.compile(re.escape(_LOADED) + r"([A-Za-z0-9_, -]*)")
_DESCRIPTION = (
    "Search the tools that are available but not yet declared. The matching tools can be "
    "called from your next turn on."
)


def check_tool_search(value: Any) -> ToolSearch | None:
    if value is not None and value not in _MODES:
        raise ConfigError(f'tool_search must be "auto", "local", "native" or None, not {value!r}')
    return value  # type: ignore[no-any-return]


def search_mode(setting: str | None, wire: Dialect, toolkit: Toolkit | None) -> str | None:
    """`local`, `native` or `None` (every tool declared as usual) for one run."""
    if (
        setting is None
        or not isinstance(toolkit, Toolkit)  # an object that only works like one: declared whole
        or not toolkit.deferred()
    ):
        return None
    if setting == "native":
        if not wire.native_tool_search:
            raise ConfigError(
                f'tool_search="native": the {wire.style} wire has no tool search of its own '
                '(use "local" or "auto")'
            )
        return "native"
    if setting == "local":
        return "local"
    return "native" if wire.native_tool_search else "local"


def loaded_in(history: Sequence[Any] | None) -> set[str]:
    """The deferred tools earlier searches of this conversation named."""
    if not history:
        return set()
    names: set[str] = set()
    for found in _LOADED_LINE.findall(json.dumps(list(history), ensure_ascii=False, default=str)):
        names.update(n.strip() for n in found.split(",") if n.strip())
    return names


class LocalSearch:
    """One run's local search: the toolkit with `search_tools` added, and what it loaded."""

    def __init__(self, toolkit: Toolkit, history: Sequence[Any] | None) -> None:
        taken = toolkit.get(SEARCH_TOOL)
        if taken is not None:
            # Either tool hidden behind the other loses something without a word (the deferred
            # tools, or the toolkit's own tool): refused before the first request instead.
            raise ConfigError(shadowed_message(taken, 'tool_search="local"'))
        self.base = toolkit
        self.loaded = loaded_in(history)
        self._declared_for: frozenset[str] | None = None
        self.toolkit = toolkit._with_tool(
            Tool(SEARCH_TOOL, _DESCRIPTION, SEARCH_SCHEMA, "builtin", self._search)
        )

    def _search(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        found = self.base.search_tools(str(args.get("query", "")), search_limit(args))
        if not found:
            return ToolResult("No tool matches; try other words.")
        self.loaded.update(t.name for t in found)
        lines = [_LOADED + ", ".join(t.name for t in found)]
        lines += [f"- {t.name}: {t.description}" for t in found]
        return ToolResult("\n".join(lines))

    def changed(self) -> bool:
        """Whether a search loaded tools since the declarations were last taken."""
        return self._declared_for != frozenset(self.loaded)

    def declared(self) -> Toolkit:
        """The tools to declare now: eager ones, `search_tools`, and the loaded ones."""
        self._declared_for = frozenset(self.loaded)
        hidden = {t.name for t in self.base.tools() if t.defer_loading} - self.loaded
        return self.toolkit._without_tools(hidden)
