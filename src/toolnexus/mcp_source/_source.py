"""The MCP tool source: load every server concurrently, expose its tools, keep it healthy.

The SDK is imported on first connect (see `_sdk`), in a thread, while the stdio servers'
children are already starting; reading a config stays light.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus._aio import mark_seen, wait_signal
from toolnexus._apps import ui_resource_uri
from toolnexus._log import warn
from toolnexus.errors import ConfigError, McpInputError
from toolnexus.mcp_source import _input
from toolnexus.mcp_source._config import parse_mcp_config as _parse_mcp_config
from toolnexus.mcp_source._errors import UpstreamFailed
from toolnexus.mcp_source._extensions import SKILLS_EXTENSION, declares
from toolnexus.mcp_source._roots import RootInput
from toolnexus.mcp_source._server import WaitFor, _Server, tool_info
from toolnexus.mcp_source._state import (
    McpInventory,
    McpPrompt,
    McpPromptResult,
    McpResource,
    McpResourceTemplate,
    McpServerState,
    ToolInfo,
)
from toolnexus.types import Request, Tool, ToolContext, ToolResult, error_message, sanitize

if TYPE_CHECKING:
    from toolnexus.mcp_source._input import Resume
    from toolnexus.mcp_source._skills import McpSkill
    from toolnexus.oauth import TokenStore
    from toolnexus.types import Answer

D = TypeVar("D")
ConfigInput = str | os.PathLike[str] | Mapping[str, Any]

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


class McpSource:
    """The loaded MCP servers: their tools (config order, then listing order) and states.

    `on_tools_changed` (settable) is called after a server's tool list changed
    (`notifications/tools/list_changed`, a reconnect). `close()` ends every session and kills
    every stdio process tree; it is idempotent and may be called from any task.
    """

    def __init__(self, servers: Sequence[_Server] = ()) -> None:
        self._servers: dict[str, _Server] = {}
        for server in servers:
            server.on_change = self._changed
            server.remember = self.remember
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

    # -- what a gateway re-serves: the servers' own (SDK) models, unchanged ---------------------

    def offers_any(self, capability: str, among: Collection[str] | None = None) -> bool:
        """Whether a connected server (of `among`, when given) offers `capability`."""
        return bool(self._among(among, capability))

    def _lost_offering(self, among: Collection[str] | None, capability: str) -> list[_Server]:
        """The servers (of `among`, when given) that offered `capability` before their
        connection was lost."""
        return [
            s
            for s in self._servers.values()
            if s.status == "failed"
            and s.lost_offered(capability)
            and (among is None or s.name in among)
        ]

    def _among(self, among: Collection[str] | None, capability: str) -> list[_Server]:
        offering = self._offering(None, capability)
        return offering if among is None else [s for s in offering if s.name in among]

    async def wire_resources(self, among: Collection[str] | None = None) -> list[tuple[str, Any]]:
        """`(server, Resource)` for every resource of the servers offering resources (config
        order, all pages); each URI is remembered as that server's."""
        from toolnexus.mcp_source._features import wire_resources  # loaded with the SDK

        found: list[tuple[str, Any]] = []
        for s in self._among(among, "resources"):
            listed = await _relayed(
                s, "list resources", lambda s: wire_resources(s.session(), s.timeout)
            )
            for resource in listed:
                self.remember(str(resource.uri), s.name)
                found.append((s.name, resource))
        return found

    async def wire_resource_templates(
        self, among: Collection[str] | None = None
    ) -> list[tuple[str, Any]]:
        """`(server, ResourceTemplate)` for every template of the servers offering resources."""
        from toolnexus.mcp_source._features import wire_templates  # loaded with the SDK

        found: list[tuple[str, Any]] = []
        for s in self._among(among, "resources"):
            listed = await _relayed(
                s,
                "list resource templates",
                lambda s: wire_templates(s.session(), s.timeout),
            )
            found.extend((s.name, t) for t in listed)
        return found

    async def wire_read_resource(
        self, uri: str, among: Collection[str] | None = None, *, resume: Resume | None = None
    ) -> Any:
        """The `ReadResourceResult` of `uri` from its owner: the server that last named it, else
        each server offering resources in config order until one has it. A question only the
        host can answer raises `InputPending` (the server asking is the owner); `resume` is the
        Request it carried and the answer, continued on the server that asked. When none
        answers, `UpstreamFailed` tells the most telling failure: a server that failed
        otherwise than by not having the URI, else the first that did not have it."""
        from toolnexus.mcp_source._features import wire_read  # loaded with the SDK

        # Those that went away too: a read reconnects them as a tool call would.
        candidates = self._among(among, "resources") + self._lost_offering(among, "resources")
        if resume is not None:  # continued on the server that asked, even one lost meanwhile
            candidates = [s for s in candidates if s.name == _asking_server(resume)][:1]
            if not candidates:
                raise _input.AnswerRefused("the answer does not belong to this request")
        remembered = self._owners.get(uri)
        failures: list[UpstreamFailed] = []
        candidates.sort(key=lambda s: s.name != remembered)  # stable: config order otherwise
        for s in candidates:
            try:
                return await _relayed(
                    s,
                    f"read {uri}",
                    lambda s: wire_read(s.session(), s.name, uri, s.timeout, s.wait_for, resume),
                )
            except UpstreamFailed as exc:  # not this one's, perhaps: ask the next
                failures.append(exc)
        if not failures:
            raise ConfigError("no connected MCP server offers resources")
        raise next((f for f in failures if not _not_found(f.cause)), failures[0])

    async def wire_prompts(self, among: Collection[str] | None = None) -> list[tuple[str, Any]]:
        """`(server, Prompt)` for every prompt of the servers offering prompts (config order)."""
        from toolnexus.mcp_source._features import wire_prompts  # loaded with the SDK

        found: list[tuple[str, Any]] = []
        for s in self._among(among, "prompts"):
            listed = await _relayed(
                s, "list prompts", lambda s: wire_prompts(s.session(), s.timeout)
            )
            found.extend((s.name, p) for p in listed)
        return found

    async def wire_get_prompt(
        self,
        server: str,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        resume: Resume | None = None,
    ) -> Any:
        """`server`'s `GetPromptResult` for its prompt `name` (input as for
        `wire_read_resource`)."""
        what = f"get prompt {name}"
        s = await self._relay_target(server, "prompts", what)
        if resume is not None and _asking_server(resume) != s.name:
            raise _input.AnswerRefused("the answer does not belong to this request")
        from toolnexus.mcp_source._features import wire_get_prompt  # loaded with the SDK

        return await _relayed(
            s,
            what,
            lambda s: wire_get_prompt(
                s.session(), s.name, name, arguments, s.timeout, s.wait_for, resume
            ),
        )

    async def wire_complete(
        self, server: str, ref: Any, argument: dict[str, str], context: dict[str, str] | None
    ) -> Any:
        """`server`'s `CompleteResult` for `argument` of the prompt or template `ref`."""
        what = f"complete {argument.get('name')}"
        s = await self._relay_target(server, "completions", what)
        from toolnexus.mcp_source._features import wire_complete  # loaded with the SDK

        return await _relayed(
            s,
            what,
            lambda s: wire_complete(s.session(), ref, argument, context, s.timeout),
        )

    async def _relay_target(self, server: str, capability: str, what: str) -> _Server:
        """The server a relayed request names, reconnected when it went away (as for a tool
        call); `UpstreamFailed` when it is not connected."""
        s = self._named(server)
        if s.spec is not None:
            await s.relay_ready(what)
        return self._offering(server, capability)[0]

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

    def __repr__(self) -> str:
        return f"<McpSource {self.status}>"


async def _relayed(server: _Server, what: str, send: Callable[[_Server], Awaitable[D]]) -> D:
    """`send(server)` for a gateway; a failure there (not a question for a person, which
    the gateway relays) raises `UpstreamFailed` naming the server and `what` it tried."""
    await server.relay_ready(what)
    try:
        return await send(server)
    except McpInputError:
        raise  # names the server and what it asked for: the gateway says so as it is
    except Exception as exc:
        await server.relay_lost(exc)
        timeout = server.spec.timeout if server.spec is not None else None
        raise UpstreamFailed(server.name, what, exc, timeout) from exc


def _not_found(exc: BaseException) -> bool:
    """Whether a server answered that it has no such resource (-32602, as the SDK's servers
    answer, or the -32002 some others use)."""
    return getattr(exc, "code", None) in (-32602, -32002)


def _read_resumed(ctx: ToolContext) -> Resume | None:
    """The suspended read `ctx.answer` resolves (`ctx.request`, else the one remembered)."""
    if ctx.answer is None:
        return None
    request = ctx.request or _input.PENDING.get(ctx.answer.id)
    mcp = (request.data or {}).get("mcp") if request is not None else None
    if request is None or not isinstance(mcp, Mapping) or mcp.get("method") != "resources/read":
        return None
    return request, ctx.answer


def _asking_server(resume: Resume) -> object:
    """The server that asked the question a resumed Request stands for."""
    mcp = (resume[0].data or {}).get("mcp")
    return mcp.get("server") if isinstance(mcp, Mapping) else None


def parse_mcp_config(path_or_dict: ConfigInput) -> dict[str, dict[str, Any]]:
    """The server map of a config; see `toolnexus.mcp_source._config`."""
    return _parse_mcp_config(path_or_dict)


async def load_mcp(config: ConfigInput, wait_for: WaitFor | None = None) -> McpSource:
    """Connect every enabled server concurrently and list its tools (no cancellation)."""
    return await load_mcp_with_context(config, wait_for)


async def load_mcp_with_context(
    config: ConfigInput,
    wait_for: WaitFor | None = None,
    *,
    cancel: asyncio.Event | None = None,
    roots: Sequence[RootInput] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    token_store: TokenStore | Any = None,
) -> McpSource:
    """Connect every enabled server concurrently and list its tools.

    A failing server is recorded `failed` with a warning; it never fails the load. Only a config
    file that cannot be read or is not a JSON object raises `ValueError`. Setting `cancel` stops
    the whole load: everything opened is closed and `asyncio.CancelledError` propagates.
    `roots` (paths, `file://` URIs or `{"uri", "name"}`) and `workspace` are the roots offered
    to servers whose config has no `roots` key. `token_store` keeps the OAuth credentials of
    servers configured with `auth` and no `store` of their own (default: the file store).
    A server whose sign-in waits for the host (no `wait_for`) is `needs_auth`.
    """
    _check_cancel(cancel)
    servers = [
        _Server(name, cfg, wait_for, roots=roots, workspace=workspace, token_store=token_store)
        for name, cfg in (await _server_map(config)).items()
    ]
    source = McpSource(servers)
    connecting = [server.connect() for server in servers if server.wants_connection]
    await _run_load(connecting, cancel, source.close)
    try:
        _check_prefix_collisions(servers)
    except ConfigError:
        await source.close()
        raise
    return source


def _check_prefix_collisions(servers: Sequence[_Server]) -> None:
    """Two servers whose names clash because of a configured `"prefix"` are a config error
    (without one, the `<server>_` prefixes keep servers apart)."""
    owners: dict[str, _Server] = {}
    for server in servers:
        for tool in server.tools:
            first = owners.setdefault(tool.name, server)
            if first is not server and (
                first.spec is not None
                and server.spec is not None
                and (first.spec.prefix is not None or server.spec.prefix is not None)
            ):
                raise ConfigError(
                    f'MCP servers "{first.name}" and "{server.name}" both serve a tool named '
                    f'"{tool.name}": give one of them another "prefix"'
                )


async def list_mcp_tools(
    config: ConfigInput, *, cancel: asyncio.Event | None = None
) -> McpInventory:
    """Connect to every enabled server, list its tools (unfiltered) and disconnect."""
    _check_cancel(cancel)
    servers = [_Server(name, cfg) for name, cfg in (await _server_map(config)).items()]
    listed: dict[str, list[ToolInfo]] = {}
    protocols: dict[str, str | None] = {s.name: None for s in servers}

    async def inventory(server: _Server) -> None:
        try:
            if await server.connect(list_only=True):
                assert server.conn is not None
                protocols[server.name] = server.conn.protocol
                listed[server.name] = [tool_info(t) for t in server.conn.tools]
        finally:
            await server.close()

    async def close_all() -> None:
        await asyncio.gather(*(server.close() for server in servers))

    await _run_load(
        [inventory(server) for server in servers if server.wants_connection], cancel, close_all
    )
    return McpInventory(
        tools={s.name: listed[s.name] for s in servers if s.name in listed},
        status={s.name: s.status for s in servers},
        protocol=protocols,
    )


async def _server_map(config: ConfigInput) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return _parse_mcp_config(config)
    return await asyncio.to_thread(_parse_mcp_config, config)


def _check_cancel(cancel: asyncio.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise asyncio.CancelledError("MCP load cancelled")


async def _run_load(
    jobs: list[Coroutine[Any, Any, Any]],
    cancel: asyncio.Event | None,
    abort: Callable[[], Coroutine[Any, Any, None]],
) -> None:
    """Run the connect jobs concurrently; on `cancel` (or our own cancellation) abort them all,
    close what was opened, and raise `asyncio.CancelledError`."""
    if not jobs:
        return
    tasks = [asyncio.ensure_future(job) for job in jobs]
    everything = asyncio.gather(*tasks)
    everything.add_done_callback(mark_seen)
    watcher = asyncio.ensure_future(wait_signal(cancel)) if cancel is not None else None
    waiters: set[asyncio.Future[Any]] = {everything} if watcher is None else {everything, watcher}
    try:
        done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        await _abort(tasks, abort)
        raise
    finally:
        if watcher is not None:
            watcher.cancel()
    if everything not in done:
        await _abort(tasks, abort)
        raise asyncio.CancelledError("MCP load cancelled")
    try:
        everything.result()
    except BaseException:  # a bug rather than a failing server: still leave nothing running
        await _abort(tasks, abort)
        raise


async def _abort(
    tasks: Sequence[asyncio.Future[Any]], abort: Callable[[], Coroutine[Any, Any, None]]
) -> None:
    """Cancel the jobs and close what they opened; return once both are done (a job cancelled
    between spawning a child and handing it to its connection kills that child itself)."""
    for task in tasks:
        task.cancel()
        task.add_done_callback(mark_seen)
    closing = asyncio.ensure_future(asyncio.gather(asyncio.wait(tasks), abort()))
    try:
        await asyncio.shield(closing)
    except asyncio.CancelledError:
        await asyncio.wait({closing})  # cancelled again: still finish closing, then propagate
        raise
