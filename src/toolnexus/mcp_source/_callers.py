"""Which caller an upstream server's message belongs to, when a gateway calls for one.

A toolkit served as an MCP server (the gateway) calls upstream tools on behalf of its own
callers, over one shared session per server. What a server sends during such a call (a log
message, a sampling or elicitation request) belongs to that call's caller and to no one else.

Over streamable HTTP the SDK runs each incoming message's handler in the context of the
request whose response stream carried it, so the caller set around the call (`CALLER`) is
found there; a message on the standalone stream belongs to no call. Over stdio and SSE
nothing on the wire says which request a message belongs to: it is taken to be the call's
only while that call is the one request awaiting its answer on the connection (the common
case); otherwise it belongs to no caller (a log stays in the host's log, a request is refused).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import mcp_types as types

from toolnexus.types import LOG_LEVELS

if TYPE_CHECKING:
    from mcp.client._transport import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

    from toolnexus.types import Caller

__all__ = ["CALLER", "CallerRoutes", "calling_for"]

CALLER: ContextVar[Caller | None] = ContextVar("toolnexus_mcp_caller", default=None)

# A request that stays open for the connection's life, not a call's.
_LONG_LIVED = frozenset({"subscriptions/listen"})


@contextmanager
def calling_for(caller: Caller | None) -> Iterator[None]:
    """Requests sent inside this block are sent for `caller`."""
    token = CALLER.set(caller)
    try:
        yield
    finally:
        CALLER.reset(token)


class CallerRoutes:
    """Watches one session's streams: which requests await an answer, and for which caller.
    `associated`: the transport hands each message the context of its request (streamable
    HTTP)."""

    def __init__(self, associated: bool) -> None:
        self.associated = associated
        self._awaiting: dict[Any, Caller | None] = {}

    def wrap(self, read: ReadStream[Any], write: WriteStream[Any]) -> tuple[Any, Any]:
        return _Reader(read, self), _Writer(write, self)

    def caller(self) -> Caller | None:
        """The caller of the message being handled, or `None` when it is nobody's (see the
        module docstring)."""
        if self.associated:
            return CALLER.get()
        if len(self._awaiting) == 1:
            return next(iter(self._awaiting.values()))
        return None

    def _sent(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            if message.method not in _LONG_LIVED:
                caller = CALLER.get()
                if not self.associated:  # the only way to tell whose a message is
                    self._awaiting[message.id] = caller
                if caller is not None and isinstance(message.params, dict):
                    _stamp_for(caller, message.params.get("_meta"))
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and isinstance(message.params, dict)
        ):
            self._awaiting.pop(message.params.get("requestId"), None)

    def _received(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._awaiting.pop(message.id, None)


def _stamp_for(caller: Caller, meta: Any) -> None:
    """A 2026-07-28 request's `_meta` (which carries the client's capabilities and log level
    on every request) adjusted to the caller it is sent for: sampling declared when the caller
    declared it, and log messages asked for down to the caller's level."""
    if not isinstance(meta, dict) or types.CLIENT_CAPABILITIES_META_KEY not in meta:
        return  # 2025-11-25: declared once for the session
    sampling = (caller.capabilities or {}).get("sampling")
    if sampling is not None:
        declared = dict(meta[types.CLIENT_CAPABILITIES_META_KEY] or {})
        declared["sampling"] = sampling
        meta[types.CLIENT_CAPABILITIES_META_KEY] = declared
    level = caller.log_level
    if level is not None:
        current = meta.get(types.LOG_LEVEL_META_KEY)
        if current not in LOG_LEVELS or LOG_LEVELS.index(level) < LOG_LEVELS.index(current):
            meta[types.LOG_LEVEL_META_KEY] = level


class _Reader:
    """The session's read stream; notes the answers. `last_context` is passed through: the
    SDK's dispatcher runs each message's handler in it."""

    def __init__(self, inner: Any, routes: CallerRoutes) -> None:
        self._inner = inner
        self._routes = routes

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._routes._received(item)
        return item

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> Any:
        item = await self._inner.__anext__()
        self._routes._received(item)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Reader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Writer:
    """The session's write stream; notes the requests and the caller each is sent for."""

    def __init__(self, inner: Any, routes: CallerRoutes) -> None:
        self._inner = inner
        self._routes = routes

    async def send(self, item: SessionMessage, /) -> None:
        self._routes._sent(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Writer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
