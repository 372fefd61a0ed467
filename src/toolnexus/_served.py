"""What the servers ask of a toolkit, and a bare list of tools that answers it.

The servers depend on this shape, not on `Toolkit` (whose `serve()` calls into them), so the
serving package never imports the toolkit module back.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from toolnexus._dispatch import dispatch
from toolnexus._naming import add_unique
from toolnexus.types import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from toolnexus.mcp_source import McpSource
    from toolnexus.skill import SkillSource

__all__ = ["Served", "ToolList"]


class Served(Protocol):
    """The part of `Toolkit` a server uses: its config, tools, skills, MCP servers (whose
    resources and prompts a gateway re-serves) and `execute`."""

    @property
    def config(self) -> dict[str, Any]: ...

    @property
    def skill_source(self) -> SkillSource | None: ...

    @property
    def mcp_source(self) -> McpSource | None: ...

    def tools(self) -> list[Tool]: ...

    async def execute(
        self, name: str, args: dict[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult: ...


class ToolList:
    """`tools` served as a toolkit without sources: calls are checked as `Toolkit.execute`
    checks them; a repeated name gets the toolkit's unique-name treatment (with a warning)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._by_name: dict[str, Tool] = {}
        add_unique(tools, self._by_name)

    @property
    def config(self) -> dict[str, Any]:
        return {}

    @property
    def skill_source(self) -> SkillSource | None:
        return None

    @property
    def mcp_source(self) -> McpSource | None:
        return None

    def tools(self) -> list[Tool]:
        return list(self._by_name.values())

    async def execute(
        self, name: str, args: dict[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        return await dispatch(self._by_name, name, args, ctx, None)


def without_tools(served: Served, names: Collection[str]) -> Served:
    """`served` less the tools `names`: a `Toolkit` keeps its sources and prompts (its own
    view); any other served object becomes a `ToolList` of the tools left."""
    view: Callable[[Collection[str]], Served] | None = getattr(served, "_without_tools", None)
    if view is not None:
        return view(names)
    return ToolList([t for t in served.tools() if t.name not in names])
