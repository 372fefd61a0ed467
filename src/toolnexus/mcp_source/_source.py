"""`McpSource`: the loaded MCP servers as one tool source (their tools, resources, prompts,
completions, states and sign-ins); `_load` builds it, one `_Server` per configured server.

The SDK side (`_features`) is imported by name inside the methods that use it, once a server
has connected and so loaded it (see `_sdk`). What the gateway forwards is `_forward`'s.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolnexus._apps import ui_resource_uri
from toolnexus._log import warn
from toolnexus.errors import ConfigError
from toolnexus.mcp_source import _input
from toolnexus.mcp_source._extensions import SKILLS_EXTENSION, declares
from toolnexus.mcp_source._forward import Forwarding, _asking_server
from toolnexus.mcp_source._server import _Server
from toolnexus.mcp_source._state import (
    McpPrompt,
    McpPromptResult,
    McpResource,
    McpResourceTemplate,
    McpServerState,
)
from toolnexus.mcp_source._subscriptions import UpstreamChange, UpstreamChanges
from toolnexus.types import Request, Tool, ToolContext, ToolResult, error_message, sanitize

if TYPE_CHECKING:
    from toolnexus.mcp_source._input import Resume
    from toolnexus.mcp_source._skills import McpSkill
    from toolnexus.types import Answer


_OWNERS_KEPT = 10_000  # URIs whose owning server is remembered for mcp_read_resource
READ_RESOURCE_DESCRIPTION = (
    "Read a resource (a file, document or record) from a connected MCP server by its URI, for "
    'example one named in a "[resource link: ...]" line of an earlier tool result.'
)
READ_RESOURCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "uri": {"type": "string", "description": "The resource URI."},
        "server": {
            "type": "string",
            "description": "The MCP server that owns the URI. Needed only when it cannot be "
            "inferred.",
        },
    },
    "required": ["uri"],
    "additionalProperties": False,
}


class McpSource(Forwarding):
    """The loaded MCP servers: their tools (config order, then listing order) and states.

    `on_tools_changed` (settable) is called after a server's tool list changed
    (`notifications/tools/list_changed`, a reconnect). `close()` ends every session and kills
    every stdio process tree; it is idempotent and may be called from any task.
    """

    def __init__(self, servers: Sequence[_Server] = ()) -> None:
        self._servers: dict[str, _Server] = {}
        # what a gateway subscribed to upstream, and the changes it hears (_subscriptions.py)
        self.changes = UpstreamChanges()
        for server in servers:
            server.on_change = self._changed
            server.remember = self.remember
            server.on_notification = self.changes.listener_for(server.name)
            server.on_adopted = self.changes.adopted
            self._servers[server.name] = server
        self.on_tools_changed: Callable[[], None] | None = None
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._tools: list[Tool] | None = None
        self._closed = False

    def prefix_of(self, server: str) -> str:
        """What goes before the names of `server`'s tools and prompts."""
        found = self._servers.get(server)
        return found.prefix if found is not None else sanitize(server) + "_"

    @property
    def tools(self) -> list[Tool]:
        """Every server's (filtered) tools, servers in config order, tools in listing order."""
        if self._tools is None:
            tools = [t for server in self._servers.values() for t in server.tools]
            if self._offering(None, "resources"):
                tools.append(self._read_tool())
            self._tools = tools
        return list(self._tools)

    # -- resources, prompts, completions --------------------------------------------------------

    def _offering(self, server: str | None, capability: str) -> list[_Server]:
        """The connected servers that declare `capability` (and are not hidden from it)."""
        if server is not None:
            found = self._servers.get(server)
            if found is None:
                raise ConfigError(f'no MCP server named "{server}"')
            if not found.offers(capability):
                raise ConfigError(f'MCP server "{server}" does not offer {capability}')
            return [found]
        return [s for s in self._servers.values() if s.offers(capability)]

    def remember(self, uri: str, server: str) -> None:
        """Note that `server` named `uri` (a listing, a link or an embedded resource)."""
        self._owners[uri] = server
        self._owners.move_to_end(uri)
        while len(self._owners) > _OWNERS_KEPT:
            self._owners.popitem(last=False)

    def owner_of(self, uri: str, server: str | None = None) -> _Server:
        """The server to read `uri` from: the one named, the one that last named the URI, the
        one whose tool names it as its MCP App, or the only one offering resources; else
        `ValueError` listing the candidates."""
        if server is not None:
            return self._offering(server, "resources")[0]
        remembered = self._owners.get(uri)
        offering = self._offering(None, "resources")
        if remembered is not None:
            for candidate in offering:
                if candidate.name == remembered:
                    return candidate
        for candidate in offering:  # an MCP App's `ui://` resource: the server of its tool
            if any(ui_resource_uri(t.metadata) == uri for t in candidate.tools):
                return candidate
        if len(offering) == 1:
            return offering[0]
        names = ", ".join(s.name for s in offering)
        raise ConfigError(
            f'Cannot tell which MCP server owns {uri}; pass "server" (one of: {names})'
        )

    async def list_mcp_resources(self, server: str | None = None) -> list[McpResource]:
        """Every resource (all pages) of `server`, or of every server offering resources."""
        from toolnexus.mcp_source._features import list_resources  # loaded with the SDK

        found: list[McpResource] = []
        for s in self._offering(server, "resources"):
            listed = await list_resources(s.session(), s.name, s.timeout)
            for resource in listed:
                self.remember(resource.uri, s.name)
            found.extend(listed)
        return found

    async def list_mcp_resource_templates(
        self, server: str | None = None
    ) -> list[McpResourceTemplate]:
        """Every resource template of `server`, or of every server offering resources."""
        from toolnexus.mcp_source._features import list_templates  # loaded with the SDK

        found: list[McpResourceTemplate] = []
        for s in self._offering(server, "resources"):
            found.extend(await list_templates(s.session(), s.name, s.timeout))
        return found

    async def read_mcp_resource(self, uri: str, *, server: str | None = None) -> ToolResult:
        """`resources/read` of `uri`: texts as the output, blobs as content parts."""
        return await self._read(uri, server, None)

    async def _read(self, uri: str, server: str | None, resume: Resume | None) -> ToolResult:
        """`read_mcp_resource`, or its continuation from a Request the server's question
        became (`InputPending`) and the answer to it, on the server that asked."""
        if resume is not None:
            asking = _asking_server(resume)
            server = asking if isinstance(asking, str) else server
        owner = self.owner_of(uri, server)
        conn = owner.conn
        if resume is None and conn is not None and declares(conn.capabilities, SKILLS_EXTENSION):
            # a file of a listed skill is checked against the skill's listing
            from toolnexus.mcp_source._skills import skill_holding

            held = skill_holding(owner, uri)
            if held is not None:
                return await held.read_result(uri)
        from toolnexus.mcp_source._features import read_resource  # loaded with the SDK

        result: ToolResult = await read_resource(
            owner.session(), owner.name, uri, owner.timeout, owner.wait_for, resume
        )
        return result

    async def skills(self) -> list[McpSkill]:
        """The skills of the connected servers that serve them (`skills/list`), named
        `<server>/<skill>`; a skill's files are read when it is loaded (`_skills.py`)."""
        serving = [
            s
            for s in self._servers.values()
            if s.status == "connected"
            and s.conn is not None
            and declares(s.conn.capabilities, SKILLS_EXTENSION)
        ]
        if not serving:
            return []
        from toolnexus.mcp_source._skills import server_skills

        return await server_skills(serving)

    async def list_mcp_prompts(self, server: str | None = None) -> list[McpPrompt]:
        """Every prompt of `server`, or of every server offering prompts."""
        from toolnexus.mcp_source._features import list_prompts  # loaded with the SDK

        found: list[McpPrompt] = []
        for s in self._offering(server, "prompts"):
            found.extend(await list_prompts(s.session(), s.name, s.timeout))
        return found

    async def get_mcp_prompt(
        self, server: str, name: str, arguments: dict[str, str] | None = None
    ) -> McpPromptResult:
        """The prompt `name` of `server`, rendered with `arguments`."""
        [s] = self._offering(server, "prompts")
        from toolnexus.mcp_source._features import get_prompt  # loaded with the SDK

        prompt: McpPromptResult = await get_prompt(
            s.session(), s.name, name, arguments, s.timeout, s.wait_for
        )
        return prompt

    async def complete_mcp(
        self,
        server: str,
        ref: dict[str, str],
        argument: str,
        value: str,
        context: dict[str, str] | None = None,
    ) -> list[str]:
        """Completions for `argument` (typed so far: `value`) of a prompt or resource template;
        `ref` is `{"type": "ref/prompt", "name"}` or `{"type": "ref/resource", "uri"}`."""
        [s] = self._offering(server, "completions")
        from toolnexus.mcp_source._features import complete  # loaded with the SDK

        values: list[str] = await complete(s.session(), ref, argument, value, context, s.timeout)
        return values

    def _read_tool(self) -> Tool:
        async def read(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            uri = str(args.get("uri", ""))
            server = args.get("server")
            resume = _read_resumed(ctx)
            try:
                return await self._read(uri, server, resume)
            except _input.InputPending as exc:  # the host answers later, as for a tool call
                asking = _asking_server((exc.request, None))
                return _input.pending_result(exc.request, str(asking))
            except ValueError as exc:
                return ToolResult(str(exc), True)
            except Exception as exc:
                return ToolResult(f"Reading {uri} failed: {error_message(exc)}", True)

        return Tool(
            "mcp_read_resource",
            READ_RESOURCE_DESCRIPTION,
            dict(READ_RESOURCE_SCHEMA),
            "mcp",
            read,
        )

    def auth_request(self, server: str) -> Request | None:
        """The sign-in `Request` (kind `authorization`) of a `needs_auth` server, else `None`."""
        return self._named(server).auth_request()

    async def authorize(self, server: str, answer: Answer | Mapping[str, Any] | None) -> bool:
        """Finish the sign-in of a `needs_auth` server with the host's `Answer` (its `data`:
        `{"callbackUrl"}` or `{"code", "state"}`): connect, list its tools, tell
        `on_tools_changed`. False when the server was not waiting or the sign-in failed
        (the status and error say why)."""
        return await self._named(server).authorize(answer)

    def _named(self, server: str) -> _Server:
        found = self._servers.get(server)
        if found is None:
            raise ConfigError(f'no MCP server named "{server}"')
        return found

    @property
    def status(self) -> dict[str, str]:
        """Server name → `connected`, `disabled`, `failed` or `needs_auth`."""
        return {name: server.status for name, server in self._servers.items()}

    @property
    def servers(self) -> dict[str, McpServerState]:
        """Server name → `McpServerState(status, error, transport, tool_count)`."""
        return {name: server.state() for name, server in self._servers.items()}

    def instructions_prompt(self) -> str:
        """`## MCP Server Instructions`, then `### <name>` and the trimmed instructions of each
        connected server that opted in with `instructions: true` (config order); `""` when
        none has any."""
        sections = []
        for name, server in self._servers.items():
            state = server.state()
            text = (state.instructions or "").strip()
            if server.spec is not None and server.spec.instructions and text:
                sections.append(f"### {name}\n{text}")
        if not sections:
            return ""
        return "## MCP Server Instructions\n\n" + "\n\n".join(sections)

    async def close(self) -> None:
        """Close every session; stdio servers' process trees are killed. Idempotent."""
        self._closed = True
        await self.changes.close()
        await asyncio.gather(*(server.close() for server in self._servers.values()))

    async def __aenter__(self) -> McpSource:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _changed(self, server: str) -> None:
        """`server`'s tool list changed: rebuild `tools` and tell the host."""
        self._tools = None
        callback = self.on_tools_changed
        if callback is not None and not self._closed:
            try:
                callback()
            except Exception as exc:  # a host callback must not break the connection
                warn(
                    f'on_tools_changed raised after MCP server "{server}" changed its tools: '
                    f"{error_message(exc)}"
                )
        if not self._closed:  # after the host rebuilt its tools: a gateway tells its callers
            self.changes.heard(UpstreamChange(server, "tools"))

    def __repr__(self) -> str:
        return f"<McpSource {self.status}>"


def _read_resumed(ctx: ToolContext) -> Resume | None:
    """The suspended read `ctx.answer` resolves (`ctx.request`, else the one remembered)."""
    if ctx.answer is None:
        return None
    request = ctx.request or _input.PENDING.get(ctx.answer.id)
    mcp = (request.data or {}).get("mcp") if request is not None else None
    if request is None or not isinstance(mcp, Mapping) or mcp.get("method") != "resources/read":
        return None
    return request, ctx.answer
