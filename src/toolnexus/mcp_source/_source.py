"""The MCP tool source: load every server concurrently, expose its tools, keep it healthy.

The SDK is imported on first connect (`_connection`), in a thread, while the stdio servers'
children are already starting; reading a config stays light.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import importlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus._aio import mark_seen, wait_signal
from toolnexus._apps import ui_resource_uri
from toolnexus._filters import apply_name_filter
from toolnexus._log import PROGRESS, logger, warn
from toolnexus._numbers import format_number
from toolnexus._schema import drop_non_finite
from toolnexus.errors import ConfigError, McpInputError, NotConnected, ToolnexusError
from toolnexus.mcp_source import _input
from toolnexus.mcp_source._config import ServerConfigError, ServerSpec, check_server, is_enabled
from toolnexus.mcp_source._config import parse_mcp_config as _parse_mcp_config
from toolnexus.mcp_source._extensions import SKILLS_EXTENSION, declares
from toolnexus.mcp_source._process import SpawnError, discard, spawn
from toolnexus.mcp_source._roots import RootInput, server_roots
from toolnexus.mcp_source._sign_in import CallSignIns, resumes_sign_in
from toolnexus.mcp_source._state import (
    McpInventory,
    McpPrompt,
    McpPromptResult,
    McpResource,
    McpResourceTemplate,
    McpServerState,
    ServerStatus,
    ToolInfo,
    Transport,
)
from toolnexus.types import Request, Tool, ToolContext, ToolResult, error_message, sanitize

if TYPE_CHECKING:
    from anyio.abc import Process

    from toolnexus.mcp_source._connection import Connection
    from toolnexus.mcp_source._input import Resume
    from toolnexus.mcp_source._skills import McpSkill
    from toolnexus.oauth import TokenStore
    from toolnexus.oauth._authorization import Authorization
    from toolnexus.types import Answer

D = TypeVar("D")
WaitFor = Callable[[Request], Any]
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
STILL_STARTING_S = 2.0  # a server not ready by then is reported as still starting
_RECONNECT_EVERY = 5.0  # seconds between reconnect attempts to a lost remote server
# A dead stdio server is respawned at once; after each failed respawn the next waits twice as
# long as the one before, from this many seconds up to the cap.
_RESPAWN_BACKOFF_FIRST = 1.0
_RESPAWN_BACKOFF_MAX = 60.0
_DEATH_REPORT_WAIT = 2.0  # how long a failed call waits to learn whether the server went away
_sdk: ModuleType | None = None  # `toolnexus.mcp_source._connection`, once imported
_sdk_import: concurrent.futures.Future[ModuleType] | None = None
_sdk_lock = threading.Lock()


def _start_sdk_import() -> concurrent.futures.Future[ModuleType]:
    """Start importing the MCP SDK (over a second of work) in a thread, once per process.

    A plain thread and a `concurrent.futures.Future`, not `asyncio.to_thread`: the import may
    be awaited from several event loops (e.g. `create_toolkit_sync`), and a cancelled waiter
    must not cancel it for the others.
    """
    global _sdk_import
    with _sdk_lock:
        if _sdk_import is None:
            future: concurrent.futures.Future[ModuleType] = concurrent.futures.Future()
            future.set_running_or_notify_cancel()  # running: no waiter can cancel it

            def run() -> None:
                global _sdk
                try:
                    _sdk = importlib.import_module("toolnexus.mcp_source._connection")
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(_sdk)

            threading.Thread(target=run, name="toolnexus-mcp-sdk-import", daemon=True).start()
            _sdk_import = future
        return _sdk_import


def sdk_features() -> ModuleType:
    """`toolnexus.mcp_source._features`, importable once the SDK is (a server is connected)."""
    return importlib.import_module("toolnexus.mcp_source._features")


async def _load_sdk() -> ModuleType:
    """The imported SDK side of the source (`_connection`), once its import has finished."""
    if _sdk is not None:
        return _sdk
    return await asyncio.wrap_future(_start_sdk_import())


class UpstreamFailed(ToolnexusError):
    """A request relayed to MCP server `server` (a gateway re-serving its resources and
    prompts) failed there while it tried to `what` (e.g. `read <uri>`): `cause` says how (an
    error the server answered, a timeout after `timeout` seconds, a lost connection)."""

    def __init__(
        self,
        server: str,
        what: str,
        cause: BaseException,
        timeout: float | None = None,
        *,
        reason: str | None = None,
    ) -> None:
        super().__init__(f'MCP server "{server}" could not {what}')
        self.server = server
        self.what = what
        self.cause = cause
        self.timeout = timeout
        self.reason = reason  # why a server that is not connected is not (its status error)


class McpSource:
    """The loaded MCP servers: their tools (config order, then listing order) and states.

    `on_tools_changed` (settable) is called after a server's tool list changed
    (`notifications/tools/list_changed`, a reconnect). `close()` ends every session and kills
    every stdio process tree; it is idempotent and may be called from any task.
    """

    def __init__(self, servers: Sequence[_Server] = ()) -> None:
        self._servers: dict[str, _Server] = {}
        for server in servers:
            server.source = self
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
        features = sdk_features()
        found: list[McpResource] = []
        for s in self._offering(server, "resources"):
            listed = await features.list_resources(s.session(), s.name, s.timeout)
            for resource in listed:
                self.remember(resource.uri, s.name)
            found.extend(listed)
        return found

    async def list_mcp_resource_templates(
        self, server: str | None = None
    ) -> list[McpResourceTemplate]:
        """Every resource template of `server`, or of every server offering resources."""
        features = sdk_features()
        found: list[McpResourceTemplate] = []
        for s in self._offering(server, "resources"):
            found.extend(await features.list_templates(s.session(), s.name, s.timeout))
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
        features = sdk_features()
        result: ToolResult = await features.read_resource(
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
        features = sdk_features()
        found: list[McpPrompt] = []
        for s in self._offering(server, "prompts"):
            found.extend(await features.list_prompts(s.session(), s.name, s.timeout))
        return found

    async def get_mcp_prompt(
        self, server: str, name: str, arguments: dict[str, str] | None = None
    ) -> McpPromptResult:
        """The prompt `name` of `server`, rendered with `arguments`."""
        [s] = self._offering(server, "prompts")
        prompt: McpPromptResult = await sdk_features().get_prompt(
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
        values: list[str] = await sdk_features().complete(
            s.session(), ref, argument, value, context, s.timeout
        )
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
        features = sdk_features()
        found: list[tuple[str, Any]] = []
        for s in self._among(among, "resources"):
            listed = await _relayed(
                s, "list resources", lambda s: features.wire_resources(s.session(), s.timeout)
            )
            for resource in listed:
                self.remember(str(resource.uri), s.name)
                found.append((s.name, resource))
        return found

    async def wire_resource_templates(
        self, among: Collection[str] | None = None
    ) -> list[tuple[str, Any]]:
        """`(server, ResourceTemplate)` for every template of the servers offering resources."""
        features = sdk_features()
        found: list[tuple[str, Any]] = []
        for s in self._among(among, "resources"):
            listed = await _relayed(
                s,
                "list resource templates",
                lambda s: features.wire_templates(s.session(), s.timeout),
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
        features = sdk_features()
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
                    lambda s: features.wire_read(
                        s.session(), s.name, uri, s.timeout, s.wait_for, resume
                    ),
                )
            except UpstreamFailed as exc:  # not this one's, perhaps: ask the next
                failures.append(exc)
        if not failures:
            raise ConfigError("no connected MCP server offers resources")
        raise next((f for f in failures if not _not_found(f.cause)), failures[0])

    async def wire_prompts(self, among: Collection[str] | None = None) -> list[tuple[str, Any]]:
        """`(server, Prompt)` for every prompt of the servers offering prompts (config order)."""
        features = sdk_features()
        found: list[tuple[str, Any]] = []
        for s in self._among(among, "prompts"):
            listed = await _relayed(
                s, "list prompts", lambda s: features.wire_prompts(s.session(), s.timeout)
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
        features = sdk_features()
        return await _relayed(
            s,
            what,
            lambda s: features.wire_get_prompt(
                s.session(), s.name, name, arguments, s.timeout, s.wait_for, resume
            ),
        )

    async def wire_complete(
        self, server: str, ref: Any, argument: dict[str, str], context: dict[str, str] | None
    ) -> Any:
        """`server`'s `CompleteResult` for `argument` of the prompt or template `ref`."""
        what = f"complete {argument.get('name')}"
        s = await self._relay_target(server, "completions", what)
        features = sdk_features()
        return await _relayed(
            s,
            what,
            lambda s: features.wire_complete(s.session(), ref, argument, context, s.timeout),
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


class _Server:
    """One configured server: its state, its tools, and its current connection."""

    def __init__(
        self,
        name: str,
        cfg: Any,
        wait_for: WaitFor | None = None,
        *,
        roots: Sequence[RootInput] | None = None,
        workspace: str | os.PathLike[str] | None = None,
        token_store: TokenStore | Any = None,
    ) -> None:
        self.name = name
        self._roots = roots
        self._workspace = workspace
        self._token_store = token_store
        self.oauth: Authorization | None = None  # built on first connect (it needs the SDK)
        self._sign_ins = CallSignIns(name)  # calls waiting for a sign-in (no wait_for)
        self._background: asyncio.Task[None] | None = None
        self.source: McpSource | None = None
        self.spec: ServerSpec | None = None
        self.status: ServerStatus = "failed"
        self.error: str | None = None
        self.transport: Transport | None = None
        self.tools: list[Tool] = []
        self.conn: Connection | None = None
        self._wait_for = wait_for
        self._lock = asyncio.Lock()
        self._closed = False
        self._lost: Connection | None = None  # the connection that went away
        self._lost_reported = False
        self._reconnect_tried = False
        self._next_attempt = 0.0
        self._warned: set[str] = set()
        self._respawn_failures = 0  # failed respawns since the server last ran
        if isinstance(cfg, Mapping) and not is_enabled(cfg):
            self.status = "disabled"
            return
        try:
            self.spec = check_server(name, cfg)
        except ServerConfigError as exc:
            self.error = str(exc)
            warn(f'MCP server "{name}" failed: {exc}')

    def offers(self, capability: str) -> bool:
        """Connected, declaring `capability`, and (resources) not hidden by `resources: false`."""
        conn = self.conn
        if self.status != "connected" or conn is None or self.spec is None:
            return False
        if capability == "resources" and not self.spec.resources:
            return False
        return capability in (conn.capabilities or {})

    def session(self) -> Any:
        """The live SDK session (`NotConnected`, a `ValueError`, when there is none)."""
        conn = self.conn
        if conn is None or conn.session is None:
            raise NotConnected(self.name)
        return conn.session

    @property
    def timeout(self) -> float:
        assert self.spec is not None
        return self.spec.timeout

    @property
    def wait_for(self) -> WaitFor | None:
        """The host's answerer of input requests, if it gave one."""
        return self._wait_for

    @property
    def wants_connection(self) -> bool:
        return self.spec is not None and self.status != "disabled"

    def state(self) -> McpServerState:
        conn = self.conn
        live = conn is not None and self.status == "connected"
        pending = self.auth_request()
        return McpServerState(
            status=self.status,
            error=self.error if self.status in ("failed", "needs_auth") else None,
            transport=self.transport,
            tool_count=len(self.tools),
            protocol=conn.protocol if live and conn is not None else None,
            server_info=conn.server_info if live and conn is not None else None,
            capabilities=conn.capabilities if live and conn is not None else None,
            instructions=conn.instructions if live and conn is not None else None,
            auth_url=pending.url if pending is not None else None,
        )

    def auth_request(self) -> Request | None:
        oauth = self.oauth
        return oauth.pending if oauth is not None and self.status == "needs_auth" else None

    # -- connecting -----------------------------------------------------------------------------

    def new_connection(
        self, sdk: ModuleType, process: Process | None, *, list_only: bool = False
    ) -> Connection:
        assert self.spec is not None
        conn: Connection = sdk.Connection(
            self.spec,
            process=process,
            wait_for=self._wait_for,
            list_only=list_only,
            on_tools=self._tools_listed,
            on_lost=self._connection_lost,
            roots=server_roots(self.spec.roots, self._roots, self._workspace),
            oauth=self._authorization(),
        )
        conn.start()
        return conn

    def _authorization(self) -> Authorization | None:
        """OAuth for a server configured with `auth` (one per server: it keeps the tokens)."""
        spec = self.spec
        if spec is None or spec.auth is None:
            return None
        if self.oauth is None:
            from toolnexus.oauth._authorization import Authorization  # loaded with the SDK

            self.oauth = Authorization(
                spec.url,
                spec.auth,
                name=self.name,
                store=self._token_store,
                wait_for=self._wait_for,
                prompt=f'Sign in to MCP server "{self.name}"',
                data={"server": self.name},
            )
        return self.oauth

    async def connect(self, *, list_only: bool = False) -> bool:
        """Connect and list; on failure record `failed` and warn. Never raises (but cancel).

        A server still starting after `STILL_STARTING_S` is reported once (INFO), so a slow
        or hung start is not silent until its timeout."""
        still = asyncio.get_running_loop().call_later(STILL_STARTING_S, self._still_starting)
        try:
            return await self._connect(list_only=list_only)
        finally:
            still.cancel()

    def _still_starting(self) -> None:
        assert self.spec is not None
        conn = self.conn
        phase = conn.phase if conn is not None else None
        logger.info(
            '[toolnexus] MCP server "%s" is still starting after %s s (%s; each phase may take '
            'up to its "timeout" of %s ms)',
            self.name,
            format_number(STILL_STARTING_S),
            f"waiting for {phase}" if phase else "starting",
            format_number(self.spec.timeout * 1000),
            extra={PROGRESS: True},
        )

    async def _connect(self, *, list_only: bool) -> bool:
        assert self.spec is not None
        _start_sdk_import()  # first, so a stdio child starts up while the SDK loads
        process: Process | None = None
        if not self.spec.remote:
            try:
                process = await spawn(self.spec.command, env=self.spec.env, cwd=self.spec.cwd)
            except SpawnError as exc:
                self._failed(str(exc), "stdio")
                return False
        try:
            sdk = await _load_sdk()
        except BaseException:
            if process is not None:
                await discard(process)
            raise
        conn = self.conn = self.new_connection(sdk, process, list_only=list_only)
        return await self._settle(conn, sdk, list_only=list_only)

    async def _settle(self, conn: Connection, sdk: Any, *, list_only: bool = False) -> bool:
        """Finish connecting `conn`: adopted (true), parked for sign-in or failed (false)."""
        try:
            if await self._ready_or_parked(conn):
                self._needs_auth(conn)
                return False
        except sdk.LoadError as exc:
            self._failed(str(exc), conn.transport)
            return False
        self._adopt(conn, list_only=list_only)
        return True

    async def _ready_or_parked(self, conn: Connection) -> bool:
        """Wait until `conn` is ready (false) or, with no `wait_for`, its sign-in is parked
        waiting for `authorize` (true); a failed load raises `LoadError`."""
        oauth = conn.oauth
        if oauth is None or self._wait_for is not None:
            await conn.wait_ready()
            return False
        ready = asyncio.ensure_future(conn.wait_ready())
        parked = asyncio.ensure_future(oauth.wait_parked())
        try:
            await asyncio.wait({ready, parked}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            ready.cancel()
            raise
        finally:
            parked.cancel()
        if not ready.done():
            ready.cancel()
            return True
        ready.result()
        return False

    def _needs_auth(self, conn: Connection) -> None:
        self.status = "needs_auth"
        self.transport = conn.transport
        self.tools = []
        oauth = conn.oauth
        refused = oauth.refresh_refused if oauth is not None else None
        self.error = "authorization required" + (
            f" (the authorization server refused the stored refresh token: {refused})"
            if refused
            else ""
        )
        warn(
            f'MCP server "{self.name}" needs authorization: {self.error}; the sign-in URL is in '
            f'mcp_servers()["{self.name}"].auth_url (finish with mcp_authorize)'
        )

    async def authorize(self, answer: Answer | Mapping[str, Any] | None) -> bool:
        """See `McpSource.authorize`."""
        oauth, conn, sdk = self.oauth, self.conn, _sdk
        if self.status != "needs_auth" or oauth is None or conn is None or sdk is None:
            return False
        if not oauth.answer(dict(answer) if isinstance(answer, Mapping) else answer):
            return False
        if not await self._settle(conn, sdk):
            return False
        if self.source is not None:
            self.source._changed(self.name)
        return True

    def _adopt(self, conn: Connection, *, list_only: bool = False) -> None:
        """`conn` is ready: the server is connected with its tools."""
        self.status = "connected"
        self.error = None
        self.transport = conn.transport
        self._lost = None
        self._lost_reported = False
        self._reconnect_tried = False
        self._respawn_failures = 0
        if not list_only:  # the inventory is unfiltered: no tools, no filter warnings
            self.tools = self._build_tools(conn.tools)

    def _failed(self, reason: str, transport: Transport | None) -> None:
        self.status = "failed"
        self.error = reason
        self.transport = transport
        warn(f'MCP server "{self.name}" failed: {reason}')

    def _warn_once(self, message: str) -> None:
        """A warning about the server's listing, given once however often it is listed again."""
        if message not in self._warned:
            self._warned.add(message)
            warn(message)

    @property
    def prefix(self) -> str:
        """What goes before this server's tool and prompt names (`"prefix"`, else `<server>_`)."""
        configured = self.spec.prefix if self.spec is not None else None
        return sanitize(self.name) + "_" if configured is None else configured

    def _build_tools(self, listed: Sequence[Any]) -> list[Tool]:
        assert self.spec is not None
        prefix = self.prefix
        tools: list[Tool] = []
        for t in apply_tools_filter(self.name, listed, self.spec.tools_filter, self._warn_once):
            info = tool_info(t)
            if info.task_support == "required":
                self._warn_once(
                    f'MCP server "{self.name}" tool "{t.name}" requires task-augmented calls, '
                    "which toolnexus does not support; skipped"
                )
                continue
            # NaN/Infinity would make every request carrying this tool invalid JSON.
            schema, dropped = drop_non_finite(t.input_schema)
            if dropped:
                warn(
                    f'MCP server "{self.name}" tool "{t.name}": its input schema holds numbers '
                    f"JSON cannot carry (NaN or Infinity), left out: {', '.join(dropped[:5])}"
                )
            tools.append(
                Tool(
                    prefix + sanitize(t.name),
                    t.description or "",
                    schema,
                    "mcp",
                    self._executor(t.name),
                    original_name=f"{self.name}_{t.name}",
                    metadata=self._tool_metadata(t, info),
                    defer_loading=self.spec.defer_loading,
                )
            )
        return tools

    def _tool_metadata(self, listed: Any, info: ToolInfo) -> dict[str, Any]:
        """`server` and, when the server sent them, `title`, `annotations`, `outputSchema`,
        `icons` and `_meta` (wire keys)."""
        metadata: dict[str, Any] = {"server": self.name}
        if info.title is not None:
            metadata["title"] = info.title
        if info.annotations is not None:
            metadata["annotations"] = info.annotations
        if info.output_schema is not None:
            metadata["outputSchema"] = info.output_schema
        icons = getattr(listed, "icons", None)
        if icons:
            metadata["icons"] = [
                i.model_dump(by_alias=True, mode="json", exclude_none=True) for i in icons
            ]
        meta = getattr(listed, "meta", None)
        if meta:
            metadata["_meta"] = dict(meta)
        return metadata

    def _executor(self, tool_name: str) -> Callable[..., Coroutine[Any, Any, ToolResult]]:
        async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return await self.call(tool_name, args, ctx)

        return execute

    def _tools_listed(self, conn: Connection) -> None:
        """The connection re-listed its tools (`notifications/tools/list_changed`)."""
        if conn is self.conn and not self._closed and self.status == "connected":
            self.tools = self._build_tools(conn.tools)
            if self.source is not None:
                self.source._changed(self.name)

    def _connection_lost(self, conn: Connection) -> None:
        if conn is self.conn and not self._closed and self._lost is not conn:
            self._mark_lost(conn, reported=False)

    def _mark_lost(self, conn: Connection, *, reported: bool) -> None:
        if self._lost is not conn and conn.needs_sign_in:
            # A person must sign in again (the refresh token was refused, say): no tools until
            # then, and a fresh sign-in is parked for `authorize` in the background.
            self._lost = conn
            self._lost_reported = reported
            self.status = "needs_auth"
            self.error = conn.lost_reason or "authorization required"
            self.tools = []
            warn(f'MCP server "{self.name}" {self.error}')
            if self.source is not None:
                self.source._changed(self.name)
            if not self._closed:
                self._background = asyncio.ensure_future(self._sign_in_again())
        elif self._lost is not conn:
            self._lost = conn
            self._lost_reported = reported
            self._reconnect_tried = False
            self.status = "failed"
            self.error = conn.lost_text()
            warn(f'MCP server "{self.name}" {self.error}')
        elif reported:
            self._lost_reported = True

    @property
    def usable(self) -> bool:
        """Connected on a live session that was not lost: requests can be sent at once."""
        conn = self.conn
        return self.status == "connected" and conn is not None and conn.alive and self._lost is None

    def lost_offered(self, capability: str) -> bool:
        """Whether the connection this server lost had offered `capability` (and it is not
        hidden from it)."""
        lost = self._lost
        if lost is None or self.spec is None:
            return False
        if capability == "resources" and not self.spec.resources:
            return False
        return capability in (lost.capabilities or {})

    async def relay_ready(self, what: str) -> None:
        """Before a gateway relays a request here: a lost server gets the reconnect a tool call
        would make (at most one try per 5 s); `UpstreamFailed` naming `what` while it stays
        unavailable."""
        if self.usable:
            return
        problem = await self._recover()
        if problem is not None:
            reason = problem.removeprefix(f'MCP server "{self.name}" ')
            raise UpstreamFailed(self.name, what, NotConnected(self.name), reason=reason)

    async def relay_lost(self, exc: Exception) -> None:
        """A relayed request lost its answer with the connection, or found no protocol version
        left in common: the server counts as lost, told (the request's error says so), as
        after a tool call."""
        conn, sdk = self.conn, _sdk
        if conn is None or sdk is None:
            return
        if isinstance(exc, sdk.ProtocolRefused):
            self._refused(conn, exc)
        elif sdk.connection_went_away(exc) and await self._gone(conn, exc) and conn is self.conn:
            self._mark_lost(conn, reported=True)

    def _refused(self, conn: Connection, exc: Exception) -> bool:
        """No version left in common on `conn`: it is lost (reconnects, at most one per 5 s,
        negotiate from scratch). False when `conn` is no longer the server's connection."""
        if conn is not self.conn:
            return False
        conn.refused = str(exc)
        self._mark_lost(conn, reported=True)
        return True

    # -- calls ----------------------------------------------------------------------------------

    async def call(self, tool_name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """`tools/call` on this server, mapped to a `ToolResult` (never raises a tool failure).

        Input requests are answered through `wait_for`, or become a suspension; resuming one
        (`ctx.answer` with `ctx.request`) continues the round it stands for. A call whose
        answer was lost with the connection is sent again once, after reconnecting, only when
        the tool says it is safe to repeat (`readOnlyHint` or `idempotentHint`)."""
        if ctx.answer is not None:
            resume = self._resumed(ctx)
            if resume is not None and resumes_sign_in(resume):
                return await self._resume_sign_in(tool_name, args, ctx, resume)
        return await self._signed_call(tool_name, args, ctx)

    async def _signed_call(
        self, tool_name: str, args: dict[str, Any], ctx: ToolContext
    ) -> ToolResult:
        """The call; with OAuth and no `wait_for`, a sign-in it needs becomes a suspension."""
        oauth = self.oauth
        if oauth is None or self._wait_for is not None:
            return await self._call(tool_name, args, ctx, may_resend=True)
        return await self._sign_ins.run(
            oauth, lambda: self._call(tool_name, args, ctx, may_resend=True), tool_name, args
        )

    async def _resume_sign_in(
        self, tool_name: str, args: dict[str, Any], ctx: ToolContext, resume: Request
    ) -> ToolResult:
        oauth, answer = self.oauth, ctx.answer
        if (
            oauth is None
            or answer is None
            or not _input.belongs(resume, answer, self.name, tool_name)
        ):
            return ToolResult(
                "the answer does not belong to this call", True, {"server": self.name}
            )
        fresh = dataclasses.replace(ctx, answer=None, request=None)
        return await self._sign_ins.resume(
            oauth, answer, lambda: self._signed_call(tool_name, args, fresh)
        )

    async def _call(
        self, tool_name: str, args: dict[str, Any], ctx: ToolContext, *, may_resend: bool
    ) -> ToolResult:
        sdk = _sdk  # imported by the connect that made this tool
        assert sdk is not None
        meta = {"server": self.name}
        if ctx.cancelled:
            return ToolResult(f"MCP tool {tool_name} was cancelled", True, meta)
        resume = self._resumed(ctx)
        if resume is not None and not _input.belongs(resume, ctx.answer, self.name, tool_name):
            return ToolResult("the answer does not belong to this call", True, meta)
        if not self.usable:
            problem = await self._recover()
            if problem is not None:
                return ToolResult(problem, True, meta)
        conn = self.conn
        assert conn is not None
        assert self.spec is not None
        hard = (
            self.spec.max_timeout
            if ctx.timeout is None
            else min(ctx.timeout, self.spec.max_timeout)
        )
        budget = sdk.Budget(min(self.spec.timeout, hard), hard, ctx.on_progress)
        from toolnexus.mcp_source._rounds import Call  # loaded with the SDK

        try:
            try:
                return self._noted(
                    await Call(self.name, self._wait_for, conn, tool_name, args, ctx, budget).run(
                        resume
                    )
                )
            except Exception as exc:
                # 2025-11-25 over HTTP: the server forgot the session (a restart). The request
                # was not executed: start a new session and send it once more.
                if not sdk.session_expired(exc, conn) or not await self._renew(conn):
                    raise
                renewed = self.conn
                assert renewed is not None
                conn = renewed
                return self._noted(
                    await Call(self.name, self._wait_for, conn, tool_name, args, ctx, budget).run(
                        resume
                    )
                )
        except sdk.ProtocolRefused as exc:
            if self._refused(conn, exc):
                return ToolResult(f'MCP server "{self.name}" {self.error}', True, meta)
            return ToolResult(f'MCP server "{self.name}" {exc}', True, meta)
        except sdk.CallTimedOut:
            return ToolResult(
                f"MCP tool {tool_name} timed out after {sdk.format_ms(budget.ran_out)} ms",
                True,
                meta,
            )
        except sdk.CallCancelled:
            return ToolResult(f"MCP tool {tool_name} was cancelled", True, meta)
        except Exception as exc:
            if self._closed:
                return ToolResult(
                    f'MCP server "{self.name}" was closed during the call', True, meta
                )
            if sdk.connection_went_away(exc) and await self._gone(conn, exc):
                if conn.needs_sign_in:  # a new sign-in may already be parked on a new conn
                    return ToolResult(f'MCP server "{self.name}" {conn.lost_reason}', True, meta)
                if conn is self.conn:
                    self._mark_lost(conn, reported=True)
                    if (
                        may_resend
                        and _repeatable(conn, tool_name)
                        and await self._recover() is None
                    ):
                        return await self._call(tool_name, args, ctx, may_resend=False)
                    return ToolResult(f'MCP server "{self.name}" {self.error}', True, meta)
            return ToolResult(sdk.readable_error(exc), True, meta)

    async def _gone(self, conn: Connection, exc: Exception) -> bool:
        """Whether the connection behind a call that lost its answer is gone. A transport that
        ended (a stdio server's death, a refused HTTP connection) is waited for, to report why;
        over HTTP a response stream cut mid-call loses the answer even though the SDK's
        transport lives on, so that connection counts as lost too."""
        assert self.spec is not None and _sdk is not None
        if not self.spec.remote or _sdk.transport_ended(exc):
            return await conn.wait_closed(_DEATH_REPORT_WAIT)
        if conn.lost_reason is None:
            conn.lost_reason = _sdk.readable_error(exc)
        return True

    @staticmethod
    def _resumed(ctx: ToolContext) -> Request | None:
        """The suspension `ctx.answer` resolves: `ctx.request`, else the one remembered here."""
        if ctx.answer is None:
            return None
        request = ctx.request or _input.PENDING.get(ctx.answer.id)
        if request is None or not isinstance((request.data or {}).get("mcp"), Mapping):
            return None
        return request

    async def _sign_in_again(self) -> None:
        """Connect anew: the sign-in parks (status `needs_auth`) until `authorize`."""
        async with self._lock:
            if self._closed or self.status != "needs_auth":
                return
            if self.conn is not None:
                await self.conn.close()
            if await self.connect() and self.source is not None:
                self.source._changed(self.name)  # signed in meanwhile (stored credentials)

    async def _recover(self) -> str | None:
        """After the server went away: report it once, then try one reconnect (per loss)."""
        async with self._lock:
            if self._closed:
                return f'MCP server "{self.name}" is closed'
            if self.status == "needs_auth" and self._lost_reported:
                return f'MCP server "{self.name}" is waiting for authorization: {self.error}'
            conn = self.conn
            if self.status == "connected" and conn is not None and conn.alive:
                return None
            assert self.spec is not None
            if self._lost is not None and not self._lost_reported:
                self._lost_reported = True
                return f'MCP server "{self.name}" {self.error}'
            if (
                self._lost is not None
                and self.spec.reconnect
                and self._may_reconnect()
                and await self._reconnect()
            ):
                return None
            return f'MCP server "{self.name}" failed: {self.error or "not connected"}'

    def _noted(self, result: ToolResult) -> ToolResult:
        """Remember the server as the owner of the resources its result links or embeds."""
        source = self.source
        content = (result.metadata or {}).get("content")
        if source is not None and isinstance(content, list):
            for block in content:
                uri = block.get("uri") or (block.get("resource") or {}).get("uri")
                if block.get("type") in ("resource_link", "resource") and uri:
                    source.remember(str(uri), self.name)
        return result

    async def _renew(self, conn: Connection) -> bool:
        """Replace `conn`, whose session the server no longer knows, with a fresh one."""
        async with self._lock:
            if self._closed:
                return False
            if self.conn is not conn:
                return self.conn is not None and self.conn.alive
            return await self._reconnect()

    def _may_reconnect(self) -> bool:
        """A stdio server is respawned at once after its death, then (while respawning fails)
        by the calls that follow, backing off from 1 s to 60 s between tries; a remote one is
        retried by the calls that follow its loss, at most once per 5 s. Calls in between fail
        at once."""
        assert self.spec is not None
        now = time.monotonic()
        if not self.spec.remote:
            if self._reconnect_tried and now < self._next_attempt:
                return False
            self._reconnect_tried = True
            return True
        if now < self._next_attempt:
            return False
        self._next_attempt = now + _RECONNECT_EVERY
        return True

    async def _reconnect(self) -> bool:
        # The host hears of the reconnect only when the tools it sees differ afterwards.
        before = _listing(self.conn) if self.tools else None
        if self.conn is not None:
            await self.conn.close()
        if await self.connect():
            if self.source is not None and _listing(self.conn) != before:
                self.source._changed(self.name)
            return True
        if self.spec is not None and not self.spec.remote:
            self._respawn_failures += 1
            delay = min(
                _RESPAWN_BACKOFF_MAX, _RESPAWN_BACKOFF_FIRST * 2 ** (self._respawn_failures - 1)
            )
            self._next_attempt = time.monotonic() + delay
            times = "once" if self._respawn_failures == 1 else f"{self._respawn_failures} times"
            # What `servers[name].error` says while the server stays down.
            self.error = (
                f"{self.error} (respawning failed {times}; tried again by a call after {delay:g} s)"
            )
        return False

    async def close(self) -> None:
        self._closed = True
        self._sign_ins.close()
        background = self._background
        if background is not None and not background.done():
            background.cancel()
        conn = self.conn
        if conn is not None:
            await conn.close()


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


def _listing(conn: Connection | None) -> list[dict[str, Any]] | None:
    """The tools `conn` last listed, as comparable data (None without a connection)."""
    if conn is None:
        return None
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in conn.tools]


def _repeatable(conn: Connection, tool_name: str) -> bool:
    """The server lists `tool_name` as read-only or idempotent: sending it twice is harmless."""
    listed = next((t for t in conn.tools if t.name == tool_name), None)
    hints = listed.annotations if listed is not None else None
    return hints is not None and bool(hints.read_only_hint or hints.idempotent_hint)


def apply_tools_filter(
    server: str,
    defs: Sequence[D],
    filter: Mapping[str, bool] | None,
    report: Callable[[str], None] = warn,
) -> list[D]:
    """Keep the listed tool definitions the per-server `tools` filter admits.

    `defs` are objects with a `name` attribute or dicts with a `"name"` key (original names).
    """
    names = [str(d["name"] if isinstance(d, Mapping) else getattr(d, "name", "")) for d in defs]
    kept = set(apply_name_filter(names, filter, what=f'MCP server "{server}" tools', report=report))
    return [d for d, n in zip(defs, names, strict=True) if n in kept]


def tool_info(tool: Any) -> ToolInfo:
    """A listed SDK tool as plain data (wire keys inside `annotations`)."""
    annotations = tool.annotations
    execution = getattr(tool, "execution", None)
    return ToolInfo(
        tool.name,
        tool.description or "",
        tool.input_schema,
        title=tool.title,
        annotations=(
            annotations.model_dump(by_alias=True, mode="json", exclude_none=True)
            if annotations is not None
            else None
        ),
        output_schema=tool.output_schema,
        task_support=getattr(execution, "task_support", None) if execution is not None else None,
    )


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
