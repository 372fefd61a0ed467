"""One configured MCP server: its state and tools, its current connection, and its calls.

`_Server` connects (spawning a stdio child while the SDK loads), reconnects or respawns after a
loss, parks a sign-in for the host, and runs each tool call through `_rounds.Call`, resending
it once when the tool says that is safe. It knows nothing of the source that holds it: the
source hands it `on_change` (its tools changed) and `remember` (a result named a resource).

Over 600 lines on purpose: the recovery paths (reconnect, respawn back-off, session renewal,
a refused version, sign-in again, the one resend) share the server's lock and state, and read
best side by side.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus._filters import apply_name_filter
from toolnexus._log import PROGRESS, logger, warn
from toolnexus._numbers import format_number
from toolnexus._schema import drop_non_finite
from toolnexus.errors import NotConnected
from toolnexus.mcp_source import _input
from toolnexus.mcp_source._budget import CallBudget, format_ms
from toolnexus.mcp_source._config import ServerConfigError, ServerSpec, check_server, is_enabled
from toolnexus.mcp_source._errors import (
    CallCancelled,
    CallTimedOut,
    LoadError,
    ProtocolRefused,
    UpstreamFailed,
)
from toolnexus.mcp_source._process import SpawnError, discard, spawn
from toolnexus.mcp_source._roots import RootInput, server_roots
from toolnexus.mcp_source._sdk import load_sdk, sdk_loaded, start_sdk_import
from toolnexus.mcp_source._sign_in import CallSignIns, resumes_sign_in
from toolnexus.mcp_source._state import McpServerState, ServerStatus, ToolInfo, Transport
from toolnexus.types import Request, Tool, ToolContext, ToolResult, sanitize

if TYPE_CHECKING:
    from anyio.abc import Process

    from toolnexus.mcp_source._connection import Connection
    from toolnexus.oauth import TokenStore
    from toolnexus.oauth._authorization import Authorization
    from toolnexus.types import Answer

D = TypeVar("D")
WaitFor = Callable[[Request], Any]


STILL_STARTING_S = 2.0  # a server not ready by then is reported as still starting
_RECONNECT_EVERY = 5.0  # seconds between reconnect attempts to a lost remote server
# A dead stdio server is respawned at once; after each failed respawn the next waits twice as
# long as the one before, from this many seconds up to the cap.
_RESPAWN_BACKOFF_FIRST = 1.0
_RESPAWN_BACKOFF_MAX = 60.0
_DEATH_REPORT_WAIT = 2.0  # how long a failed call waits to learn whether the server went away


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
        # Set by the source that holds the server: told when the tools changed, and of each
        # resource URI a result names (so a later read knows which server owns it).
        self.on_change: Callable[[str], None] | None = None
        self.remember: Callable[[str, str], None] | None = None
        # a gateway's: the server's change notifications, and each (re)connection adopted
        self.on_notification: Callable[[Any], None] | None = None
        self.on_adopted: Callable[[_Server], None] | None = None
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

    def new_connection(self, process: Process | None, *, list_only: bool = False) -> Connection:
        from toolnexus.mcp_source._connection import Connection  # loaded with the SDK

        assert self.spec is not None
        conn = Connection(
            self.spec,
            process=process,
            wait_for=self._wait_for,
            list_only=list_only,
            on_tools=self._tools_listed,
            on_lost=self._connection_lost,
            roots=server_roots(self.spec.roots, self._roots, self._workspace),
            oauth=self._authorization(),
        )
        conn.on_change = self.on_notification  # the server's change notifications, for a gateway
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
        start_sdk_import()  # first, so a stdio child starts up while the SDK loads
        process: Process | None = None
        if not self.spec.remote:
            try:
                process = await spawn(self.spec.command, env=self.spec.env, cwd=self.spec.cwd)
            except SpawnError as exc:
                self._failed(str(exc), "stdio")
                return False
        try:
            await load_sdk()
        except BaseException:
            if process is not None:
                await discard(process)
            raise
        conn = self.conn = self.new_connection(process, list_only=list_only)
        return await self._settle(conn, list_only=list_only)

    async def _settle(self, conn: Connection, *, list_only: bool = False) -> bool:
        """Finish connecting `conn`: adopted (true), parked for sign-in or failed (false)."""
        try:
            if await self._ready_or_parked(conn):
                self._needs_auth(conn)
                return False
        except LoadError as exc:
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
        oauth, conn = self.oauth, self.conn
        if self.status != "needs_auth" or oauth is None or conn is None or not sdk_loaded():
            return False
        if not oauth.answer(dict(answer) if isinstance(answer, Mapping) else answer):
            return False
        if not await self._settle(conn):
            return False
        if self.on_change is not None:
            self.on_change(self.name)
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
            if self.on_adopted is not None:  # subscriptions held before a reconnect, again
                self.on_adopted(self)

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
            if self.on_change is not None:
                self.on_change(self.name)

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
            if self.on_change is not None:
                self.on_change(self.name)
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
        conn = self.conn
        if conn is None or not sdk_loaded():
            return
        from toolnexus.mcp_source._connection import connection_went_away  # loaded with the SDK

        if isinstance(exc, ProtocolRefused):
            self._refused(conn, exc)
        elif connection_went_away(exc) and await self._gone(conn, exc) and conn is self.conn:
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
        # The SDK side was imported by the connect that made this tool; what only a failure
        # needs is imported where it fails (each import statement costs a little per call).
        from toolnexus.mcp_source._rounds import Call

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
        budget = CallBudget(min(self.spec.timeout, hard), hard, ctx.on_progress)
        try:
            try:
                return self._noted(
                    await Call(self.name, self._wait_for, conn, tool_name, args, ctx, budget).run(
                        resume
                    )
                )
            except Exception as exc:
                from toolnexus.mcp_source._connection import session_expired

                # 2025-11-25 over HTTP: the server forgot the session (a restart). The request
                # was not executed: start a new session and send it once more.
                if not session_expired(exc, conn) or not await self._renew(conn):
                    raise
                renewed = self.conn
                assert renewed is not None
                conn = renewed
                return self._noted(
                    await Call(self.name, self._wait_for, conn, tool_name, args, ctx, budget).run(
                        resume
                    )
                )
        except ProtocolRefused as exc:
            if self._refused(conn, exc):
                return ToolResult(f'MCP server "{self.name}" {self.error}', True, meta)
            return ToolResult(f'MCP server "{self.name}" {exc}', True, meta)
        except CallTimedOut:
            return ToolResult(
                f"MCP tool {tool_name} timed out after {format_ms(budget.ran_out)} ms",
                True,
                meta,
            )
        except CallCancelled:
            return ToolResult(f"MCP tool {tool_name} was cancelled", True, meta)
        except Exception as exc:
            from toolnexus.mcp_source._connection import connection_went_away, readable_error

            if self._closed:
                return ToolResult(
                    f'MCP server "{self.name}" was closed during the call', True, meta
                )
            if connection_went_away(exc) and await self._gone(conn, exc):
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
            return ToolResult(readable_error(exc), True, meta)

    async def _gone(self, conn: Connection, exc: Exception) -> bool:
        """Whether the connection behind a call that lost its answer is gone. A transport that
        ended (a stdio server's death, a refused HTTP connection) is waited for, to report why;
        over HTTP a response stream cut mid-call loses the answer even though the SDK's
        transport lives on, so that connection counts as lost too."""
        from toolnexus.mcp_source._connection import readable_error, transport_ended  # loaded

        assert self.spec is not None
        if not self.spec.remote or transport_ended(exc):
            return await conn.wait_closed(_DEATH_REPORT_WAIT)
        if conn.lost_reason is None:
            conn.lost_reason = readable_error(exc)
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
            if await self.connect() and self.on_change is not None:
                self.on_change(self.name)  # signed in meanwhile (stored credentials)

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
        remember = self.remember
        content = (result.metadata or {}).get("content")
        if remember is not None and isinstance(content, list):
            for block in content:
                uri = block.get("uri") or (block.get("resource") or {}).get("uri")
                if block.get("type") in ("resource_link", "resource") and uri:
                    remember(str(uri), self.name)
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
            if self.on_change is not None and _listing(self.conn) != before:
                self.on_change(self.name)
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
