"""One live MCP session with one server, held by a long-lived owner task.

The SDK's transports and `ClientSession` are anyio context managers: they must be entered and
left by the same task, inside properly nested cancel scopes. So each connection gets an owner
task that opens the transport and the session, runs the load phases (connect, initialize,
tools/list) under one outer cancel scope whose deadline is re-armed per phase, then idles until
it is told to close, the tool list changes, or the server goes away. Tool calls, made from any
task, only send requests through the session.

Over 600 lines on purpose: `Connection` is the state of one owner task (open, negotiate, list,
listen, idle, renegotiate, close) and of the server-to-client handlers that run inside it;
split apart, each piece would reach into the others' private state. The readers of the SDK's
errors (`readable_error` and the like) stay beside `Connection._reason`, which uses them.
Negotiation is `_negotiation`'s, the per-call budget `_budget`'s, the errors `_errors`'.
"""

from __future__ import annotations

import asyncio
import math
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AsyncExitStack,
    ExitStack,
    asynccontextmanager,
    contextmanager,
)
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.client.subscriptions import listen as listen_for
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from toolnexus._aio import (
    mark_seen,
)
from toolnexus._body_limit import bounding_hook
from toolnexus._env import EnvVarError, expand_env_headers
from toolnexus._log import logger, warn
from toolnexus._otel import mcp_request, request_hooks
from toolnexus._secrets import redact, remember_url
from toolnexus._tls import ssl_context
from toolnexus._version import __version__
from toolnexus.errors import CallerUnavailable, HeaderValueError
from toolnexus.mcp_source._budget import _CALL_BUDGET, CallBudget, format_ms
from toolnexus.mcp_source._callers import CallerRoutes, calling_for
from toolnexus.mcp_source._config import MODERN, ServerSpec
from toolnexus.mcp_source._elicitation import ask_host, elicit_response, elicitation_to_request
from toolnexus.mcp_source._errors import LoadError, ProtocolRefused
from toolnexus.mcp_source._extensions import client_extensions
from toolnexus.mcp_source._listing import ListingRepair
from toolnexus.mcp_source._negotiation import _Session, negotiate
from toolnexus.mcp_source._process import SpawnError, kill_tree_now
from toolnexus.mcp_source._results import wire
from toolnexus.mcp_source._server_log import ServerLog
from toolnexus.mcp_source._sign_in import park_for
from toolnexus.mcp_source._state import Transport
from toolnexus.mcp_source._stdio import ChildState, TransportStreams, stdio_transport
from toolnexus.mcp_source._tasks import session_options
from toolnexus.oauth._errors import SignInFailed, SignInRequired
from toolnexus.types import Caller, Request, Signal, error_message

if TYPE_CHECKING:
    from toolnexus.oauth._authorization import Authorization  # the OAuth flow: loaded on use

T = TypeVar("T")
WaitFor = Callable[[Request], Any]

MAX_PAGES = 1000
CLOSE_BOUND = 5.0  # seconds an orderly close may take (e.g. the HTTP session DELETE)
CLIENT_INFO = types.Implementation(name="toolnexus", version=__version__)
# Stand-in messages the SDK's streamable-HTTP transport makes up for a bare HTTP error status.
_SYNTHETIC_HTTP_ERRORS = frozenset(
    {"Server returned an error response", "Not Found", "Session terminated"}
)


_CLOSED = "Connection closed"  # the SDK dispatcher's error for requests its transport outlived
_RESPONSES: TypeAdapter[dict[str, Any]] = TypeAdapter(types.InputResponses)


async def _tls_context() -> ssl.SSLContext:
    """The process's TLS context (`toolnexus._tls.ssl_context`), built in a thread the first
    time: loading the certificates costs tens of milliseconds."""
    return await asyncio.to_thread(ssl_context)


class _NotStreamable(Exception):
    """The endpoint rejected the streamable-HTTP POST with 404/405: try legacy SSE."""


_NEGOTIATION_PHASES = frozenset({"discover", "initialize"})


class Connection:
    """A connection attempt and, once ready, the live session with one server."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        process: anyio.abc.Process | None = None,
        wait_for: WaitFor | None = None,
        list_only: bool = False,
        on_tools: Callable[[Connection], None] | None = None,
        on_lost: Callable[[Connection], None] | None = None,
        roots: list[dict[str, str]] | None = None,
        oauth: Authorization | None = None,
    ) -> None:
        """`process` is the stdio server's child, already spawned; the connection owns it.
        `oauth` signs the requests of a server configured with `auth`."""
        self.spec = spec
        self.oauth = oauth
        self.needs_sign_in = False  # it went away because a person must sign in again
        self.roots = roots or []
        self.protocol: str | None = None
        self.negotiation = 0  # how many times a version was negotiated on this connection
        self.server_info: dict[str, Any] | None = None
        self.capabilities: dict[str, Any] | None = None
        self.instructions: str | None = None
        self._log = ServerLog(spec.name)
        self._routes = CallerRoutes(associated=False)
        self._process = process
        self.transport: Transport | None = None
        self.session_id: str | None = None  # the HTTP session's `Mcp-Session-Id`, if any
        self.session: ClientSession | None = None
        self.tools: list[types.Tool] = []
        self.child: ChildState | None = None
        self.lost_reason: str | None = None
        self._wait_for = wait_for
        self._list_only = list_only
        self._on_tools = on_tools
        self._on_lost = on_lost
        loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[None] = loop.create_future()
        self._ready.add_done_callback(mark_seen)
        self._done = asyncio.Event()
        self._wake = asyncio.Event()
        self._stopping = False
        self._relist = False
        self._scope: anyio.CancelScope | None = None
        self._phase: str | None = None
        self._post_status: tuple[int, str] | None = None
        self._task: asyncio.Task[None] | None = None
        self._listing: ListingRepair | None = None
        self._renegotiating = asyncio.Lock()
        self._in_flight: set[CallBudget] = set()  # the budgets of the calls awaiting an answer
        self._era_changed = asyncio.Event()  # wakes the listener after a new negotiation
        self._listen_scope: anyio.CancelScope | None = None
        self.refused: str | None = None  # why negotiating again failed (the loss reason)
        # a gateway's listener of the server's change notifications (`_subscriptions.py`)
        self.on_change: Callable[[Any], None] | None = None

    # -- life cycle (any task) ------------------------------------------------------------------

    def start(self) -> None:
        """Start the owner task (connect, initialize, list, then idle)."""
        self._task = asyncio.get_running_loop().create_task(
            self._main(), name=f"toolnexus-mcp-{self.spec.name}"
        )
        self._task.add_done_callback(self._kill_unadopted)

    def _kill_unadopted(self, _task: object) -> None:
        """A task cancelled before it ran (e.g. at loop shutdown) never reached the transport's
        teardown: kill the child it was given."""
        if self._process is not None and self._process.returncode is None:
            kill_tree_now(self._process)

    async def wait_ready(self) -> None:
        """Wait until the tools are listed; raise `LoadError` (the reason) when loading failed."""
        await asyncio.shield(self._ready)

    @property
    def ready(self) -> bool:
        return self._ready.done() and self._ready.exception() is None

    @property
    def alive(self) -> bool:
        return self.ready and self.session is not None and not self._done.is_set()

    async def wait_closed(self, within: float) -> bool:
        """Wait (bounded) for the owner task to finish; true when it has."""
        try:
            await asyncio.wait_for(self._done.wait(), within)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        """End the session and its transport (stdio: the whole process tree). Idempotent."""
        if self._task is None:
            return
        if not self._stopping:
            self._stopping = True
            self._wake.set()
            scope = self._scope
            if scope is not None:
                if self.alive:
                    scope.deadline = min(scope.deadline, anyio.current_time() + CLOSE_BOUND)
                else:
                    scope.cancel()  # still loading (or stuck): stop now
        await self._done.wait()

    # -- calls (any task) -----------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        args: dict[str, Any],
        budget: CallBudget,
        signal: Signal | None,
        *,
        responses: dict[str, Any] | None = None,
        request_state: str | None = None,
        caller: Caller | None = None,
    ) -> Any:
        """One `tools/call` round (with a progress token), bounded by `budget` and cancelled
        when `signal` is set: a `CallToolResult`, an `InputRequiredResult` (2026-07-28) or an
        extension's result. What the server sends during it (log messages, sampling and
        elicitation requests) goes to `caller`, the gateway's client the call is made for."""
        session = self.session
        if session is None:
            raise LoadError("not connected")
        call = session.call_tool(
            name,
            args,
            progress_callback=budget.progress,
            input_responses=input_responses(responses),
            request_state=request_state,
            allow_input_required=True,
            allow_claimed=True,
        )
        in_flight = self._in_flight
        in_flight.add(budget)
        try:
            with mcp_request("tools/call", name, self) as traced, calling_for(caller):
                result = await budget.run(call, signal)
                traced.result(result)
        finally:
            in_flight.discard(budget)
        return result

    async def with_renegotiation(self, send: Callable[[], Awaitable[T]]) -> T:
        """What `send()` answers, sent once more when the server refused the version it was
        sent under (see `renegotiated`)."""
        negotiation = self.negotiation
        try:
            return await send()
        except MCPError as exc:
            if not await self.renegotiated(exc, negotiation):
                raise
        return await send()

    async def renegotiated(self, exc: BaseException, negotiation: int) -> bool:
        """Whether `exc` is the server refusing the version of `negotiation` (-32022: it was
        upgraded or restarted, and did not execute the request), negotiated again now: the
        request may be sent once more. Raises `ProtocolRefused` when negotiating fails."""
        if not isinstance(exc, MCPError) or exc.code != types.UNSUPPORTED_PROTOCOL_VERSION:
            return False
        await self._renegotiate(negotiation)
        return True

    async def _renegotiate(self, negotiation: int) -> None:
        """The server answered a request sent under `negotiation` (see `self.negotiation`)
        with -32022: it no longer accepts that version (upgraded or restarted). Negotiate again
        on the same transport, as the server's `protocol` allows (`auto`: the SDK's probe,
        which may change the era; 2026-07-28: `server/discover` again; `legacy`: nothing to
        fall back to). Calls refused under the same negotiation share one new negotiation.
        Raises `ProtocolRefused` with the reason on failure."""
        session = self.session
        if session is None:
            raise LoadError("not connected")
        async with self._renegotiating:
            if self.negotiation != negotiation:
                return  # another call already negotiated again
            refused = self.protocol
            protocol = self.spec.protocol
            if protocol == "legacy" or not isinstance(session, _Session):
                raise ProtocolRefused(f"no longer accepts protocol {refused}")
            session.forget_negotiation()
            try:
                async with asyncio.timeout(self.spec.timeout):
                    await negotiate(session, protocol)
                    if self._sets_log_level(session):
                        await self._set_log_level(session)
            except TimeoutError:
                reason = self._timeout_text("discover" if protocol == MODERN else "negotiation")
                raise ProtocolRefused(f"no longer accepts protocol {refused}: {reason}") from None
            except Exception as exc:
                raise ProtocolRefused(
                    f"no longer accepts protocol {refused}: {self._describe(exc)}"
                ) from None
            self._adopt_negotiation(session)
            logger.info(
                '[toolnexus] MCP server "%s" refused protocol %s; negotiated %s',
                self.spec.name,
                refused,
                self.protocol,
            )
            if self.protocol != refused:
                self._era_changed.set()
                scope = self._listen_scope
                if scope is not None:
                    scope.cancel()  # a stream opened in the old era
                self._ask_relist()  # what a server lists may differ between eras

    async def relist(self) -> None:
        """List the tools again now (a 2026-07-28 call answered -32020: the listed schema the
        request's headers were built from is missing or stale); tell the owner when they
        changed."""
        session, listing = self.session, self._listing
        if session is None or listing is None:
            raise LoadError("not connected")
        async with asyncio.timeout(self.spec.timeout):
            tools = await list_all_tools(session, listing)
        self._listed(tools)

    def _listed(self, tools: list[types.Tool]) -> None:
        """A new listing of the tools: tell the owner only if it differs from the last one (a
        `list_changed` sent without a change rebuilds nothing and repeats no warning)."""
        if [wire(t) for t in tools] != [wire(t) for t in self.tools]:
            self.tools = tools
            if self._on_tools is not None:
                self._on_tools(self)

    def lost_text(self) -> str:
        """Why a connection that was ready went away."""
        if self.refused is not None:
            return self.refused
        if self.child is not None and self.child.exited:
            return self.child.exit_text()
        return f"connection lost: {self.lost_reason or 'closed by the server'}"

    # -- the owner task -------------------------------------------------------------------------

    async def _main(self) -> None:
        failure: str | None = None
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._stopping:
                    scope.cancel()
                await self._run()
            if scope.cancelled_caught and not self._ready.done():
                failure = "cancelled" if self._stopping else self._load_timeout_text()
        except Exception as exc:  # includes the task groups' ExceptionGroups
            failure = self._describe(exc)
            self.needs_sign_in = _find(exc, SignInRequired) is not None
        finally:
            self.session = None
            if not self._ready.done():
                self._ready.set_exception(LoadError(failure or "closed before it was ready"))
            elif not self._stopping and not self._list_only:
                self.lost_reason = failure
                if self._on_lost is not None:
                    self._on_lost(self)
            self._done.set()

    async def _run(self) -> None:
        spec = self.spec
        self._arm("connect")
        if not spec.remote:
            self.transport = "stdio"
            await self._serve(self._open_stdio)
            return
        oauth = self.oauth
        try:
            remember_url(spec.url)
            headers = expand_env_headers(spec.headers)
            auth = oauth.httpx_auth if oauth is not None else None
        except (EnvVarError, HeaderValueError) as exc:
            raise LoadError(str(exc)) from None
        if oauth is not None:
            oauth.hold = True  # while connecting, a sign-in may wait for its answer
            oauth.pause = self._person_pause
            oauth.park_for = park_for  # a call without wait_for hands its sign-in to its host
        tls = await _tls_context()

        def http_client(
            headers: dict[str, str] | None = None,
            timeout: httpx2.Timeout | None = None,
            auth: httpx2.Auth | None = None,
        ) -> httpx2.AsyncClient:
            hooks = request_hooks()
            # A reply, or one event of a stream, is bounded once decoded, as a stdio message is.
            hint = f'raise it with "maxMessageBytes" in the config of server "{spec.name}"'
            hooks["response"] = [bounding_hook(spec.max_message_bytes, hint, per_event=True)]
            return httpx2.AsyncClient(
                headers=headers, timeout=timeout, auth=auth, verify=tls, event_hooks=hooks
            )

        self.transport = "streamable-http"
        try:
            await self._serve(lambda: self._open_streamable(http_client(headers, auth=auth)))
            return
        except Exception as exc:
            rejected = _find(exc, _NotStreamable)
            if rejected is None:
                raise
            first = str(rejected)
        self.transport = "sse"
        try:
            await self._serve(
                lambda: sse_client(
                    spec.url,
                    headers=headers,
                    timeout=spec.timeout,
                    httpx_client_factory=http_client,
                    auth=auth,
                )
            )
        except Exception as exc:
            raise LoadError(f"streamable HTTP: {first}; SSE: {self._describe(exc)}") from None

    async def _serve(
        self, open_transport: Callable[[], AbstractAsyncContextManager[TransportStreams]]
    ) -> None:
        self._arm("connect")
        async with AsyncExitStack() as stack:
            streams = await stack.enter_async_context(open_transport())
            listing = ListingRepair(self.spec.name)
            read, write = listing.wrap(*streams)
            self._routes = CallerRoutes(associated=self.transport == "streamable-http")
            read, write = self._routes.wrap(read, write)
            spec = self.spec
            # SSE speaks only the handshake era (never tried when `protocol` is 2026-07-28)
            protocol = "legacy" if self.transport == "sse" else spec.protocol
            tasks = session_options(spec)  # the Tasks extension and its result claim, or none
            extensions = {**client_extensions(), **tasks.pop("extensions", {})}
            session = _Session(
                read,
                write,
                elicitation_callback=self._elicit,
                sampling_callback=self._sample,
                list_roots_callback=self._list_roots if self.roots else None,
                logging_callback=self._on_log,
                message_handler=self._on_message,
                client_info=CLIENT_INFO,
                log_level=spec.log_level,  # type: ignore[arg-type]
                extensions=extensions,
                **tasks,
            )
            session.peer = self
            await stack.enter_async_context(session)
            self._arm("discover" if protocol == MODERN else "initialize")
            try:
                await negotiate(session, protocol)
            except MCPError:
                status = self._post_status
                if (
                    self.transport == "streamable-http"
                    and status
                    and status[0] in (404, 405)
                    and session.protocol_version is None
                ):
                    if protocol != MODERN:
                        raise _NotStreamable(_status_text(*status)) from None
                    if status[0] == 405:  # no POST at all: an SSE-only endpoint, most likely
                        raise LoadError(
                            f"{_status_text(*status)}; not tried over SSE, which speaks only "
                            "the handshake era (protocol is 2026-07-28)"
                        ) from None
                raise
            except RuntimeError as exc:  # the SDK's "no mutual version" verdicts
                raise LoadError(str(exc)) from None
            if self._sets_log_level(session):
                self._arm("logging/setLevel")
                await self._set_log_level(session)
            self._adopt_negotiation(session)
            self._arm("tools/list")
            self._listing = listing
            self.tools = await self._first_listing(session, listing)
            self._arm(None)
            self.session = session
            if self.child is not None:
                self.child.graceful = True
            if self.oauth is not None:
                self.oauth.hold = False  # serving calls: a sign-in now fails the call at once
            self._ready.set_result(None)
            if not self._list_only:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._listen, session)
                    await self._idle(session, listing)
                    group.cancel_scope.cancel()

    def _sets_log_level(self, session: ClientSession) -> bool:
        """At 2025-11-25 `logging/setLevel` goes to a server declaring `logging`, and only
        for a `logLevel` the config chose (2026-07-28 stamps it on every request instead)."""
        spec = self.spec
        return (
            self.era_is_legacy(session)
            and spec.log_level_explicit
            and spec.log_level is not None
            and (session.server_capabilities or types.ServerCapabilities()).logging is not None
        )

    async def _set_log_level(self, session: ClientSession) -> None:
        with mcp_request("logging/setLevel", None, self):
            await session.set_logging_level(self.spec.log_level)  # type: ignore[arg-type]

    @staticmethod
    async def _first_listing(session: ClientSession, listing: ListingRepair) -> list[types.Tool]:
        """The tools; none for a server that declares no `tools` and does not know the method
        (one offering only resources or prompts)."""
        try:
            return await list_all_tools(session, listing)
        except MCPError as exc:
            capabilities = session.server_capabilities
            if (
                exc.code == types.METHOD_NOT_FOUND
                and capabilities is not None
                and capabilities.tools is None
            ):
                return []
            raise

    def _adopt_negotiation(self, session: ClientSession) -> None:
        """Record what `session` negotiated (what `mcp_servers()` shows)."""
        self.negotiation += 1
        self.protocol = session.protocol_version
        info = session.server_info
        self.server_info = wire(info) if info is not None else None
        capabilities = session.server_capabilities
        self.capabilities = wire(capabilities) if capabilities is not None else {}
        self.instructions = session.instructions

    @staticmethod
    def era_is_legacy(session: ClientSession) -> bool:
        return session.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS

    def listens(self, session: ClientSession) -> bool:
        """At 2026-07-28 tool-list changes arrive only on a `subscriptions/listen` stream."""
        capabilities = session.server_capabilities
        return (
            not self.era_is_legacy(session)
            and capabilities is not None
            and capabilities.tools is not None
            and bool(capabilities.tools.list_changed)
        )

    async def _listen(self, session: ClientSession) -> None:
        """While the era and the server call for it, hold one listen stream. A dropped one is
        re-opened after the server's `listenRetry` (1 s), doubling while re-opening fails up
        to `listenRetryMax` (30 s); each successful re-open lists the tools again (events
        sent meanwhile are lost: there is no replay). A new negotiation re-decides at once."""
        first, most = self.spec.listen_retry, self.spec.listen_retry_max
        delay = first
        reopened = False
        while True:
            if not self.listens(session):
                await self._era_changed.wait()
                self._era_changed.clear()
                delay, reopened = first, False
                continue
            ended = "closed by the server"
            with anyio.CancelScope() as scope:
                self._listen_scope = scope
                try:
                    async with listen_for(session, tools_list_changed=True) as stream:
                        delay = first
                        if reopened:
                            self._ask_relist()
                        async for event in stream:
                            if isinstance(event, ToolsListChanged):
                                self._ask_relist()
                except Exception as exc:
                    ended = self._describe(exc) or type(exc).__name__
            self._listen_scope = None
            if scope.cancelled_caught:  # negotiated again: decide afresh, at once
                self._era_changed.clear()
                reopened = False
                continue
            reopened = True
            logger.debug(
                '[toolnexus] MCP server "%s" listen stream ended (%s); re-opening in %s ms',
                self.spec.name,
                ended,
                format_ms(delay),
            )
            await anyio.sleep(delay)
            delay = min(delay * 2, most)

    def _ask_relist(self) -> None:
        self._relist = True
        self._wake.set()

    async def _idle(self, session: ClientSession, listing: ListingRepair) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._stopping or (self.child is not None and self.child.exited):
                return
            if self._relist:
                self._relist = False
                await self._refresh(session, listing)

    async def _refresh(self, session: ClientSession, listing: ListingRepair) -> None:
        name = self.spec.name
        with anyio.move_on_after(self.spec.timeout) as scope:
            try:
                tools = await self.with_renegotiation(lambda: list_all_tools(session, listing))
            except Exception as exc:
                warn(f'MCP server "{name}" tool list refresh failed: {self._describe(exc)}')
                return
        if scope.cancelled_caught:
            warn(f'MCP server "{name}" tool list refresh {self._timeout_text("tools/list")}')
            return
        self._listed(tools)

    @contextmanager
    def _person_pause(self) -> Iterator[None]:
        """Stop the clock while a person signs in: the load phase's, or the budget of the tool
        call the sign-in interrupted (a step-up, an expired sign-in)."""
        scope, phase = self._scope, self._phase
        budget = _CALL_BUDGET.get()
        if phase is None and budget is not None:
            with budget.paused():
                yield
            return
        if scope is None or phase is None:
            yield
            return
        left = scope.deadline - anyio.current_time()
        scope.deadline = math.inf
        try:
            yield
        finally:
            if self._phase == phase and not self._stopping:
                scope.deadline = anyio.current_time() + left

    @property
    def phase(self) -> str | None:
        """What the load is waiting for (`connect`, `discover`, `initialize`, `tools/list`);
        `None` once ready."""
        return self._phase

    def negotiation_phase(self, phase: str) -> None:
        """The load's negotiation moved on to `phase` (`discover` or `initialize`): give it a
        fresh budget. Nothing while serving calls (a renegotiation has its own budget)."""
        if self._phase in _NEGOTIATION_PHASES and self._phase != phase:
            self._arm(phase)

    def _arm(self, phase: str | None) -> None:
        """Give the next load phase a fresh budget of the server's timeout (none once ready)."""
        self._phase = phase
        assert self._scope is not None
        self._scope.deadline = (
            math.inf if phase is None else anyio.current_time() + self.spec.timeout
        )

    # -- transports -----------------------------------------------------------------------------

    def _open_stdio(self) -> AbstractAsyncContextManager[TransportStreams]:
        process, self._process = self._process, None
        assert process is not None, "a stdio connection is given its spawned child"
        self.child = ChildState()
        return stdio_transport(
            process,
            state=self.child,
            on_exit=self._wake.set,
            label=f'"{self.spec.name}"',
            max_message=self.spec.max_message_bytes,
        )

    @asynccontextmanager
    async def _open_streamable(self, client: httpx2.AsyncClient) -> AsyncIterator[Any]:
        async def record_status(response: httpx2.Response) -> None:
            # The first POST is `initialize`: its status tells "not streamable HTTP" (404/405)
            # and auth failures (401/403) apart from everything else. With OAuth a 401 only
            # starts the sign-in: what follows it is what counts.
            first = self._post_status is None or (
                self.oauth is not None and self._post_status[0] == 401
            )
            if first and response.request.method == "POST":
                self._post_status = (response.status_code, response.reason_phrase)
            session_id = response.headers.get("mcp-session-id")
            if session_id:
                self.session_id = session_id  # recorded on the requests' spans

        hooks = client.event_hooks
        client.event_hooks = {
            "request": hooks["request"],
            "response": [record_status, *hooks["response"]],
        }
        # Connecting is bounded by the server timeout; reads are bounded per request by the
        # phase deadlines and per-call timeouts (the event stream stays open on purpose).
        client.timeout = httpx2.Timeout(self.spec.timeout, read=None)
        # One event is bounded by the server's `maxMessageBytes` (as a stdio line is), in the SDK's
        # parser as in the client's own bound on decoded bytes.
        async with (
            client,
            streamable_http_client(
                self.spec.url, http_client=client, max_sse_event_size=self.spec.max_message_bytes
            ) as streams,
        ):
            yield streams

    # -- session callbacks ----------------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        if self.on_change is not None and not isinstance(message, Exception):
            self.on_change(message)  # resource and prompt changes, for a gateway
        if isinstance(message, types.ToolListChangedNotification):
            self._ask_relist()
        elif isinstance(message, types.ElicitCompleteNotification):
            logger.debug(
                '[toolnexus] MCP server "%s" completed elicitation %s',
                self.spec.name,
                message.params.elicitation_id,
            )
        elif isinstance(message, Exception):
            logger.debug(
                "[toolnexus] MCP server %s sent an unreadable message: %s",
                self.spec.name,
                error_message(message),
            )

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self._log.emit(params.level, params.data, params.logger)
        caller = self._routes.caller()
        if caller is not None:  # relayed to the gateway's client the call is made for
            try:
                await caller.log(params.level, params.data, params.logger)
            except Exception as exc:
                logger.debug("[toolnexus] relaying a log message failed: %s", error_message(exc))

    async def _sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        """A pushed `sampling/createMessage`: asked of the gateway's client the call is made
        for; an error when there is none or it cannot answer during the call."""
        caller = self._routes.caller()
        if caller is None:  # as a 2026-07-28 server asking in a round is told
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f'MCP server "{self.spec.name}" asked for sampling, which toolnexus '
                "does not provide",
            )
        wire = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        wire.pop("_meta", None)
        messages = wire.pop("messages")
        try:
            with self._paused():
                reply = await caller.sample(messages, wire)
        except CallerUnavailable as exc:
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(exc))
        if reply is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="sampling unavailable: the MCP client calling through toolnexus answers "
                "sampling only in a later round (2026-07-28), not during a call",
            )
        kind = (
            types.CreateMessageResultWithTools
            if params.tools or params.tool_choice
            else types.CreateMessageResult
        )
        try:
            return kind.model_validate(reply)
        except ValidationError as exc:
            return types.ErrorData(
                code=types.INTERNAL_ERROR,
                message=f"the MCP client's sampling reply is invalid: {exc.error_count()} "
                "problem(s)",
            )

    @contextmanager
    def _paused(self) -> Iterator[None]:
        """Neither budget of the calls waiting on this server runs inside this block (someone
        answers a pushed request, which names no call)."""
        with ExitStack() as paused:
            for budget in list(self._in_flight):
                paused.enter_context(budget.paused())
            yield

    async def _list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult.model_validate({"roots": self.roots})

    async def _elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        request = elicitation_to_request(params)
        caller = self._routes.caller()
        if caller is not None:  # the gateway's client the call is made for is asked
            with self._paused():
                try:
                    answer = await caller.ask(request)
                except Exception as exc:
                    return types.ErrorData(code=types.INTERNAL_ERROR, message=error_message(exc))
            if answer is None:
                return types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message="elicitation unavailable: the MCP client calling through toolnexus "
                    "cannot be asked during a call",
                )
        elif self._wait_for is None:  # never declared at 2025-11-25 without a wait_for
            return types.ErrorData(code=types.INVALID_REQUEST, message="elicitation unavailable")
        else:
            # A person answers: no call's budget runs meanwhile. A pushed request names no
            # call, so every call waiting on this server is paused.
            with self._paused():
                answer = await ask_host(self._wait_for, request, self.spec.name, "an elicitation")
        result = elicit_response(request, answer)
        try:
            return types.ElicitResult.model_validate(result)
        except ValidationError as exc:
            return types.ErrorData(
                code=types.INVALID_PARAMS,
                message=f"the answer's data does not fit the elicitation form: {exc.error_count()} "
                "invalid value(s)",
            )

    # -- reasons --------------------------------------------------------------------------------

    def _load_timeout_text(self) -> str:
        """Why the load failed on a phase's deadline, and what in the server's entry fixes it."""
        text = self._timeout_text()
        if self._phase == "discover":
            return (
                f'{text}; a server older than MCP {MODERN} needs "protocol": "legacy" in its '
                'entry, a slow one a larger "timeout" (ms)'
            )
        return f'{text}; a slow server needs a larger "timeout" (ms) in its entry'

    def _timeout_text(self, phase: str | None = None) -> str:
        return (
            f"{phase or self._phase or 'connect'} timed out after {format_ms(self.spec.timeout)} ms"
        )

    def _describe(self, exc: BaseException) -> str:
        """A readable reason for a failure, never containing header values or other secrets."""
        return redact(self._reason(exc))

    def _reason(self, exc: BaseException) -> str:
        root = _root(exc)
        if isinstance(root, LoadError | SpawnError | EnvVarError | SignInFailed):
            return str(root)
        if isinstance(root, SignInRequired):
            return f"authorization required: {root}"
        if self.oauth is not None and _is_oauth_flow_error(root):
            return f"authorization failed: {error_message(root)}"
        if self.child is not None and self.child.exited:
            return self.child.exit_text()
        status = self._post_status
        if (
            isinstance(root, MCPError)
            and self.transport == "streamable-http"
            and status is not None
            and status[0] >= 400
        ):
            text = _status_text(*status)
            return text if root.message in _SYNTHETIC_HTTP_ERRORS else f"{text}: {root.message}"
        if isinstance(root, httpx2.HTTPStatusError):
            return _status_text(root.response.status_code, root.response.reason_phrase)
        if isinstance(root, httpx2.ConnectError):
            return f"cannot connect to {_safe_url(self.spec.url)}: {error_message(root)}"
        if isinstance(root, httpx2.TimeoutException):
            return f"HTTP request to {_safe_url(self.spec.url)} timed out"
        if isinstance(root, httpx2.HTTPError):
            return f"{type(root).__name__}: {error_message(root)}"
        return readable_error(root)


def input_responses(responses: dict[str, Any] | None) -> Any:
    """Wire responses as the SDK's typed `InputResponses` (`None` for none)."""
    if responses is None:
        return None
    return _RESPONSES.validate_python(responses)


def session_expired(exc: BaseException, conn: Connection) -> bool:
    """A 2025-11-25 HTTP request answered 404 for its session id: the server restarted."""
    return (
        isinstance(exc, MCPError)
        and exc.code == types.INVALID_REQUEST
        # the SDK transport's stand-in for a bare 404, or the SDK server's own 404 body
        and exc.message in ("Session terminated", "Session not found")
        and conn.transport == "streamable-http"
        and conn.protocol in HANDSHAKE_PROTOCOL_VERSIONS
    )


def connection_went_away(exc: BaseException) -> bool:
    """The call failed because the connection closed (the server may have gone away)."""
    return isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED


def transport_ended(exc: BaseException) -> bool:
    """`connection_went_away` because the whole transport ended (the SDK's dispatcher closing),
    not just the one request's response stream."""
    return connection_went_away(exc) and isinstance(exc, MCPError) and exc.message == _CLOSED


def readable_error(exc: BaseException) -> str:
    """One line for an error: an MCP error's message, a validation error's first problem."""
    if isinstance(exc, MCPError):
        return exc.message or f"MCP error {exc.code}"
    if isinstance(exc, ValidationError):
        problems = exc.errors(include_url=False, include_input=False)
        if problems:
            first = problems[0]
            where = ".".join(str(part) for part in first["loc"])
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            return f"invalid {exc.title} from the server: {where}: {first['msg']}{more}"
    return error_message(exc)


async def list_all_tools(session: ClientSession, listing: ListingRepair) -> list[types.Tool]:
    """Every tool, following `nextCursor`; a repeated cursor or more than 1000 pages fails.

    Schemas are the server's own (`listing` restores those the SDK would have rejected).
    """
    tools: list[types.Tool] = []
    seen: set[str] = set()
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        with mcp_request("tools/list", None, getattr(session, "peer", None)):
            page = await session.list_tools(params=params)
        tools.extend(listing.restore(page.tools))
        cursor = page.next_cursor or None
        if cursor is None:
            return tools
        if cursor in seen:
            raise LoadError(f"MCP list returned duplicate cursor: {cursor}")
        seen.add(cursor)
    raise LoadError(f"MCP list returned more than {MAX_PAGES} pages")


def _is_oauth_flow_error(exc: BaseException) -> bool:
    """Whether `exc` is the SDK's OAuth flow failure (its module loads with the OAuth flow)."""
    from mcp.client.auth import OAuthFlowError

    return isinstance(exc, OAuthFlowError)


def _root(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = inner[0] if inner else exc.exceptions[0]
    return exc


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _find(inner, kind)
            if found is not None:
                return found
    return None


def _status_text(status: int, reason: str) -> str:
    return f"HTTP {status} {reason}".rstrip()


def _safe_url(url: str) -> str:
    """The URL without credentials, query or fragment (they may hold secrets)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return "the server"
