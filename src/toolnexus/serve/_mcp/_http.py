"""The MCP profile over streamable HTTP: the `/mcp` ASGI app.

Two modes, chosen by the profile's `"stateless"` key:

- **stateful** (the default): a 2025-11-25 client that sends `initialize` gets a session
  (`Mcp-Session-Id`), served by the SDK's `StreamableHTTPSessionManager`: one SSE stream per
  request, the standalone `GET` stream for what the server starts (log messages, sampling and
  elicitation requests, list-changed and resource-updated notifications), resumption with
  `Last-Event-ID` from `SessionEvents` (a bounded per-session event log), `DELETE` ending the
  session. A session belongs to the credential that opened it (the SDK compares the OAuth
  principal: another token on its id gets `404`); the open sessions, their idle time and their
  queues are bounded (`503` beyond `maxSessions`, `404` once expired). A request without a
  session id that is not `initialize` is still served on its own, as in the stateless mode, so
  one-shot callers keep working.
- **stateless**: no sessions.

In both modes a `GET` outside a session is `405` (there is no session to push anything to).

A 2026-07-28 request is stateless by design in both modes (the SDK's modern entry).

`SessionEvents` is our own event store because the SDK's interface is shared by all the
sessions of a manager and keyed by stream ids that repeat from session to session (request ids,
the `GET` stream's fixed key): it keeps each session's events apart (a session can only replay
its own) and bounds them (per session, and the sessions held). It learns whose events it
stores from a context variable set for each request before the SDK serves it, which the
session's server task inherits from the request that opened the session.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

from toolnexus._aio import CancelSignal
from toolnexus._log import logger
from toolnexus.errors import ConfigError
from toolnexus.serve._mcp._profile import REQUEST_SIGNAL

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_EVENTS",
    "DEFAULT_SESSION_IDLE_MS",
    "McpHttpEndpoint",
    "SessionEvents",
    "SessionPolicy",
    "session_policy",
]

DEFAULT_MAX_SESSIONS = 1000
DEFAULT_SESSION_IDLE_MS = 30 * 60 * 1000
DEFAULT_SESSION_EVENTS = 256
DEFAULT_RETRY_MS = 1000
_SESSION_HEADER = b"mcp-session-id"


@dataclass(frozen=True)
class SessionPolicy:
    """The bounds of the stateful mode: open sessions, idle time before a session ends (s),
    events kept per session for resumption, and the `retry` (ms) the priming events advise."""

    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_timeout: float = DEFAULT_SESSION_IDLE_MS / 1000
    events: int = DEFAULT_SESSION_EVENTS
    retry_ms: int = DEFAULT_RETRY_MS


def _positive_int(cfg: Mapping[str, Any], key: str, default: int) -> int:
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f'the MCP profile\'s "{key}" must be a positive integer, not {value!r}')
    return value


def session_policy(cfg: Mapping[str, Any] | None) -> SessionPolicy | None:
    """The profile's session bounds, or `None` when it asks for `"stateless": true`."""
    cfg = cfg or {}
    stateless = cfg.get("stateless", False)
    if not isinstance(stateless, bool):
        raise ConfigError(
            f'the MCP profile\'s "stateless" must be true or false, not {stateless!r}'
        )
    policy = SessionPolicy(
        max_sessions=_positive_int(cfg, "maxSessions", DEFAULT_MAX_SESSIONS),
        idle_timeout=_positive_int(cfg, "sessionIdleTimeout", DEFAULT_SESSION_IDLE_MS) / 1000,
        events=_positive_int(cfg, "sessionEvents", DEFAULT_SESSION_EVENTS),
    )
    return None if stateless else policy


class _Log:
    """One session's events: `(event id, stream id, message)`, the oldest dropped first."""

    __slots__ = ("__weakref__", "count", "entries", "key")

    def __init__(self, limit: int) -> None:
        self.key = secrets.token_hex(8)
        self.count = 0
        self.entries: deque[tuple[str, str, types.JSONRPCMessage | None]] = deque(maxlen=limit)


# The log of the session the current task serves: set for each HTTP request before the SDK
# handles it, and so inherited by the session's server task, which the opening request starts.
_CURRENT: ContextVar[_Log | None] = ContextVar("toolnexus_mcp_session_events", default=None)


class SessionEvents(EventStore):
    """The SDK's `EventStore`, one bounded log per session (`limit` events each) for at most
    `sessions` sessions.

    A session's log is dropped when the session is deleted, and the oldest log when a new
    session would exceed `sessions` (the manager admits no more sessions than that, so the
    oldest then belongs to a session already ended, e.g. expired). Event ids carry the log's
    random key; an id from another session, or one already dropped, replays nothing."""

    def __init__(
        self, limit: int = DEFAULT_SESSION_EVENTS, sessions: int = DEFAULT_MAX_SESSIONS
    ) -> None:
        self._limit = limit
        self._sessions = sessions
        self._by_session: dict[str, _Log] = {}

    def __len__(self) -> int:
        """The sessions whose events are held."""
        return len(self._by_session)

    def new_log(self) -> _Log:
        return _Log(self._limit)

    def bind(self, session_id: str, log: _Log) -> None:
        """`log` is the log of the session just opened as `session_id`."""
        self._by_session[session_id] = log
        while len(self._by_session) > self._sessions:
            del self._by_session[next(iter(self._by_session))]

    def forget(self, session_id: str) -> None:
        self._by_session.pop(session_id, None)

    def log_of(self, session_id: str) -> _Log | None:
        return self._by_session.get(session_id)

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        log = _CURRENT.get()
        if log is None:  # not reached: every request the SDK serves here has its log set
            return "-"
        log.count += 1
        event_id = f"{log.key}-{log.count}"
        log.entries.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        log = _CURRENT.get()
        if log is None or not last_event_id.startswith(log.key + "-"):
            return None
        entries = list(log.entries)  # a copy: sending awaits while the session adds events
        index = next((i for i, e in enumerate(entries) if e[0] == last_event_id), None)
        if index is None:
            return None
        stream_id = entries[index][1]
        for event_id, stream, message in entries[index + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


class McpHttpEndpoint:
    """The `/mcp` ASGI app; `run()` is its lifespan. With `sessions`, stateful as the module
    says; without, stateless.

    Session-less, a 2025-11-25 request is answered as plain JSON unless it asks for progress
    (then SSE, so progress can stream); a 2026-07-28 request goes through the SDK's modern
    entry with SSE enabled (plain JSON unless the handler sends a notification). A well-formed
    2025-11-25 request answered as JSON is served as one exchange: the SDK's `serve_one` kernel
    (negotiated version, middleware, request-state boundary, result sieve) without the
    per-POST transport, dispatcher and task group of its stateless transport, and answered the
    bytes that transport would answer. Everything else (notifications, malformed bodies, wrong
    headers) goes through the SDK's transport itself."""

    def __init__(
        self,
        server: Server[Any],
        *,
        security_settings: Any,
        max_body: int,
        sessions: SessionPolicy | None = None,
    ) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        def manager(json_response: bool) -> StreamableHTTPSessionManager:
            return StreamableHTTPSessionManager(
                app=server,
                stateless=True,
                json_response=json_response,
                security_settings=security_settings,
                max_request_body_size=max_body,
            )

        self._server = server
        self._max_body = max_body
        self._lifespan_state: Any = None
        self._plain = manager(True)
        self._streaming = manager(False)
        self._handshake = {v.encode() for v in HANDSHAKE_PROTOCOL_VERSIONS}
        self.events: SessionEvents | None = None
        self._sessions: StreamableHTTPSessionManager | None = None
        if sessions is not None:
            self.events = SessionEvents(sessions.events, sessions.max_sessions)
            self._sessions = StreamableHTTPSessionManager(
                app=server,
                event_store=self.events,
                security_settings=security_settings,
                retry_interval=sessions.retry_ms,
                session_idle_timeout=sessions.idle_timeout,
                max_request_body_size=max_body,
                max_sessions=sessions.max_sessions,
            )

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        server = self._server
        async with AsyncExitStack() as stack:
            self._lifespan_state = await stack.enter_async_context(server.lifespan(server))
            await stack.enter_async_context(self._plain.run())
            await stack.enter_async_context(self._streaming.run())
            if self._sessions is not None:
                await stack.enter_async_context(self._sessions.run())
            yield

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        streaming = self._streaming
        method = scope.get("method")
        version = session_id = None
        for key, value in scope["headers"]:
            if key == b"mcp-protocol-version":
                version = value
            elif key == _SESSION_HEADER:
                session_id = value
        if version is not None and version not in self._handshake:
            await streaming.handle_request(scope, receive, send)  # stateless by design
            return
        if self._sessions is not None and session_id is not None:
            await self._in_session(scope, receive, send, session_id)
            return
        if method == "GET":
            await _no_stream(scope, receive, send)
            return
        if method != "POST":
            await streaming.handle_request(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its request
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if self._sessions is not None and _is_initialize(body):
            await self._in_session(scope, _replay(bytes(body), receive), send, None)
            return
        if b'"progressToken"' in body:
            await streaming.handle_request(scope, _replay(bytes(body), receive), send)
            return
        exchange = (
            _one_exchange(scope, bytes(body), version) if len(body) <= self._max_body else None
        )
        await self._plain_call(scope, bytes(body), exchange, receive, send)

    async def _in_session(
        self, scope: Any, receive: Any, send: Any, session_id: bytes | None
    ) -> None:
        """A request the session manager serves, with its session's event log current: a
        request opening a session gets a new log, named after the session id it is answered;
        a session deleted takes its log along."""
        assert self._sessions is not None and self.events is not None
        events = self.events
        answer = send
        if session_id is None:
            log = events.new_log()

            async def send(message: Any) -> None:
                if message["type"] == "http.response.start":
                    for key, value in message.get("headers", ()):
                        if key.lower() == _SESSION_HEADER:
                            events.bind(value.decode("latin-1"), log)
                await answer(message)

        else:
            name = session_id.decode("latin-1")
            found = events.log_of(name)
            if scope.get("method") == "DELETE":

                async def send(message: Any) -> None:
                    if message["type"] == "http.response.start" and message["status"] < 300:
                        events.forget(name)
                    await answer(message)

        token = _CURRENT.set(log if session_id is None else found)
        try:
            await self._sessions.handle_request(scope, receive, send)
        finally:
            _CURRENT.reset(token)

    async def _plain_call(
        self, scope: Any, body: bytes, exchange: _Exchange | None, receive: Any, send: Any
    ) -> None:
        """A JSON-answered request, cancelled when the client goes away (an SSE answer notices
        that itself): closing the request is how a stateless caller cancels."""
        after_body: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        async def rest() -> Any:
            return await asyncio.shield(after_body)

        signal = CancelSignal()
        token = REQUEST_SIGNAL.set(signal)  # seen by the handler's task, made just below
        try:
            if exchange is None:
                handler = asyncio.ensure_future(
                    self._plain.handle_request(scope, _replay(body, rest), send)
                )
            else:
                exchange.receive = rest
                handler = asyncio.ensure_future(self._answer(exchange, send))
        finally:
            REQUEST_SIGNAL.reset(token)

        async def watch() -> None:
            message = await receive()
            after_body.set_result(message)
            if message.get("type") == "http.disconnect":
                signal.set()  # before the cancellation reaches the tool
                handler.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await handler
        except asyncio.CancelledError:
            if not handler.cancelled() or asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
        finally:
            watcher.cancel()

    async def _answer(self, exchange: _Exchange, send: Any) -> None:
        """Serve one request with the SDK's kernel; answer as its JSON-response transport does."""
        import pydantic_core
        from mcp.server.runner import serve_one
        from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data

        request = exchange.request
        try:
            result = await serve_one(
                self._server,
                exchange,
                request.method,
                request.params,
                connection=exchange.connection(),
                lifespan_state=self._lifespan_state,
            )
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:  # the code the SDK's dispatcher answers an unmapped failure with
                logger.debug("[toolnexus] MCP handler for %r raised", request.method, exc_info=True)
                error = types.ErrorData(code=0, message=str(exc))
            message = types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
            payload = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        else:
            # The bytes `JSONRPCResponse(...).model_dump_json(by_alias=True, exclude_unset=True)`
            # gives for the SDK's JSON result, without building and validating the model.
            payload = pydantic_core.to_json(
                {"jsonrpc": "2.0", "id": request.id, "result": result}, inf_nan_mode="null"
            )
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-length", str(len(payload)).encode()),
                    (b"content-type", b"application/json"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


class _Exchange:
    """The dispatch context of one JSON-answered 2025-11-25 request over stateless HTTP: no
    back-channel (a server request raises `NoBackChannelError`, as on the SDK's transport),
    and notifications, progress included, have no wire in a JSON answer."""

    can_send_request = False

    def __init__(self, scope: Any, request: types.JSONRPCRequest, version: str) -> None:
        from mcp.shared.transport_context import TransportContext

        self.scope = scope
        self.request = request
        self.version = version
        self.request_id = request.id
        self.transport = TransportContext(kind="streamable-http", can_send_request=False)
        self.receive: Callable[[], Awaitable[Any]] | None = None
        self._metadata: Any = None
        self._cancel: Any = None

    def connection(self) -> Any:
        from mcp.server.connection import Connection

        return Connection.from_envelope(self.version, None, None)

    @property
    def message_metadata(self) -> Any:
        if self._metadata is None:  # built only when a handler looks (the HTTP request)
            from mcp.shared.message import ServerMessageMetadata
            from starlette.requests import Request as HttpRequest

            self._metadata = ServerMessageMetadata(
                request_context=HttpRequest(self.scope, self.receive),  # type: ignore[arg-type]
                can_send_request=False,
            )
        return self._metadata

    @property
    def cancel_requested(self) -> Any:
        if self._cancel is None:  # nothing can cancel it but the client going away
            import anyio

            self._cancel = anyio.Event()
        return self._cancel

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        from mcp.shared.exceptions import NoBackChannelError

        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        return None

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None


def _one_exchange(scope: Any, body: bytes, version: bytes | None) -> _Exchange | None:
    """The request as one exchange, or `None` when the SDK's transport must answer it (its
    checks fail, it is not one request, or it is `initialize`)."""
    import pydantic_core
    from mcp_types import DEFAULT_NEGOTIATED_VERSION
    from pydantic import ValidationError

    accept: bytes | None = None
    content_type: bytes | None = None
    for key, value in scope["headers"]:  # the first of each, as the SDK's transport reads them
        if key == b"accept":
            if accept is None:
                accept = value
        elif key == b"content-type" and content_type is None:
            content_type = value
    if not _accepts_json(accept or b"") or not _is_json_type(content_type or b""):
        return None
    try:  # the SDK transport's parser, so both read every body alike
        decoded = pydantic_core.from_json(body)
    except ValueError:
        return None
    if (
        not isinstance(decoded, dict)
        or "id" not in decoded
        or decoded.get("method") == "initialize"
    ):
        return None
    try:
        request = types.JSONRPCRequest.model_validate(decoded, by_name=False)
    except ValidationError:
        return None
    negotiated = DEFAULT_NEGOTIATED_VERSION if version is None else version.decode("latin-1")
    return _Exchange(scope, request, negotiated)


def _accepts_json(accept: bytes) -> bool:
    """The SDK transport's rule: `application/json`, `application/*` or `*/*` is accepted."""
    kinds = {part.split(b";")[0].strip().lower() for part in accept.split(b",")}
    return not kinds.isdisjoint((b"application/json", b"application/*", b"*/*"))


def _is_json_type(content_type: bytes) -> bool:
    """The SDK transport's two rules: the value starts with `application/json` (any case), and
    its media type (before `;`) lists `application/json` exactly."""
    media = content_type.decode("latin-1")
    if not media.lower().startswith("application/json"):
        return False
    return any(part.strip() == "application/json" for part in media.split(";")[0].split(","))


def _replay(body: bytes, receive: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    """`receive` for an ASGI app: the body already read, then what `receive` gives."""
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _is_initialize(body: bytearray) -> bool:
    """Whether the body is one `initialize` request (read only when it names the method)."""
    if b'"initialize"' not in body:
        return False
    import pydantic_core

    try:
        decoded = pydantic_core.from_json(bytes(body))
    except ValueError:
        return False
    return isinstance(decoded, dict) and decoded.get("method") == "initialize"


async def _no_stream(scope: Any, receive: Any, send: Any) -> None:
    """`405` for a `GET` outside a session: the streamable HTTP transport lets a server that
    offers no such event stream say so, and without a session there is nothing to push."""
    from starlette.responses import PlainTextResponse

    response = PlainTextResponse("method not allowed", status_code=405, headers={"Allow": "POST"})
    await response(scope, receive, send)
