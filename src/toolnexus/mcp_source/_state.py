"""Plain data the MCP source hands out: server state, listed tool info, inventory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from toolnexus.types import McpStatus

ServerStatus: TypeAlias = McpStatus
Transport: TypeAlias = Literal["stdio", "streamable-http", "sse"]


@dataclass(frozen=True, slots=True)
class McpServerState:
    """One configured server: its status, the readable failure reason, transport, tool count,
    and what was negotiated (all `None` until connected): the protocol version, the server's
    `serverInfo` and capabilities (wire keys), and its instructions. `auth_url` is the sign-in
    URL while the status is `needs_auth` (`Toolkit.mcp_auth_request` has the whole request)."""

    status: ServerStatus
    error: str | None = None
    transport: Transport | None = None
    tool_count: int = 0
    protocol: str | None = None
    server_info: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None
    instructions: str | None = None
    auth_url: str | None = None


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as the server lists it (original name, unfiltered)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    title: str | None = None
    annotations: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    task_support: str | None = None


@dataclass(frozen=True, slots=True)
class McpInventory:
    """What `list_mcp_tools` found: tools per connected server, every server's status, and the
    protocol version each connected server negotiated (`None` for the others)."""

    tools: dict[str, list[ToolInfo]]
    status: dict[str, str]
    protocol: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class McpResource:
    """A resource a server lists."""

    server: str
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


@dataclass(frozen=True, slots=True)
class McpResourceTemplate:
    """A resource template (an RFC 6570 URI template) a server lists."""

    server: str
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class McpPrompt:
    """A prompt a server lists; `arguments` are `{"name", "description", "required"}`."""

    server: str
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class McpPromptResult:
    """A rendered prompt: `messages` are `{"role", "content"}` (text, or content parts)."""

    description: str | None
    messages: list[dict[str, Any]]
