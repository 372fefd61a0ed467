"""What the toolkit holds its tools in: the `Source` protocol and the sources it wraps.

Every kind of tool reaches the toolkit as a source, so tools, status, change notices and
closing work the same for all of them: `StaticSource` (tools made up front: built-ins, a
host's tools, remote agents' tools), `SkillTools` (the `skill` tool of a skill source) and
`McpServers` (the loaded MCP servers). It sits with `toolkit.py`, above the tool sources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from toolnexus.types import Tool

if TYPE_CHECKING:
    from toolnexus.mcp_source import McpSource
    from toolnexus.skill import SkillSource

__all__ = ["McpServers", "SkillTools", "Source", "StaticSource"]


class Source(Protocol):
    """A provider of tools as the toolkit holds it."""

    def tools(self) -> Sequence[Tool]:
        """The source's tools now, in its own order."""
        ...

    def status(self) -> Mapping[str, str]:
        """Name → status (`connected`, `failed`, ...) of what the source connects to."""
        ...

    def on_change(self, notify: Callable[[], None]) -> None:
        """Call `notify` (no arguments) whenever `tools()` changes."""
        ...

    async def close(self) -> None:
        """Release what the source holds open. Idempotent."""
        ...


class StaticSource:
    """Tools made up front: a list that changes only by `add`.

    Closing asks the remote agents behind any A2A tools among them to cancel the tasks still
    waiting for a reply (best effort, one bounded request each).
    """

    __slots__ = ("_tools",)

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools = list(tools)

    def tools(self) -> Sequence[Tool]:
        return self._tools

    def add(self, tools: Iterable[Tool]) -> None:
        """Append `tools` (the toolkit's `register`)."""
        self._tools.extend(tools)

    def status(self) -> Mapping[str, str]:
        return {}

    def on_change(self, notify: Callable[[], None]) -> None:
        """Nothing to watch: the list changes only through the toolkit."""

    async def close(self) -> None:
        # Only an A2A tool keeps remote state (its tasks waiting for input) past a call.
        if any(t.source == "a2a" for t in self._tools):
            from toolnexus.a2a._outbound import cancel_waiting

            await cancel_waiting(self._tools)


class SkillTools:
    """A skill source's one `skill` tool."""

    __slots__ = ("skill",)

    def __init__(self, skill: SkillSource) -> None:
        self.skill = skill

    def tools(self) -> Sequence[Tool]:
        return [self.skill.tool]

    def status(self) -> Mapping[str, str]:
        return {}

    def on_change(self, notify: Callable[[], None]) -> None:
        """Nothing to watch: a skill source's tool is fixed once built."""

    async def close(self) -> None:
        """Nothing to release."""


class McpServers:
    """The loaded MCP servers as a source: their tools, their statuses, their list changes."""

    __slots__ = ("mcp",)

    def __init__(self, mcp: McpSource) -> None:
        self.mcp = mcp

    def tools(self) -> Sequence[Tool]:
        return self.mcp.tools

    def status(self) -> Mapping[str, str]:
        return self.mcp.status

    def on_change(self, notify: Callable[[], None]) -> None:
        self.mcp.on_tools_changed = notify

    async def close(self) -> None:
        await self.mcp.close()
