"""Plain data the MCP source hands out: server state, listed tool info, inventory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

ServerStatus: TypeAlias = Literal["connected", "disabled", "failed"]
Transport: TypeAlias = Literal["stdio", "streamable-http", "sse"]


@dataclass(frozen=True, slots=True)
class McpServerState:
    """One configured server: its status, the readable failure reason, transport, tool count."""

    status: ServerStatus
    error: str | None = None
    transport: Transport | None = None
    tool_count: int = 0


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as the server lists it (original name, unfiltered)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True, slots=True)
class McpInventory:
    """What `list_mcp_tools` found: tools per connected server and every server's status."""

    tools: dict[str, list[ToolInfo]]
    status: dict[str, str]
