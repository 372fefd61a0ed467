"""The resource subscriptions a gateway holds at its upstream servers, and the change
notifications those servers send (relayed by `serve/_mcp/_subscriptions.py`).

At 2025-11-25 a subscription is a `resources/subscribe` on the server's session, and its
`notifications/resources/updated` and list-changed notifications arrive on that session
(`Connection._on_message` hands them here). At 2026-07-28 there is no such request: the
gateway holds one `subscriptions/listen` stream per server asking for its resource and prompt
list changes and for every URI subscribed there, and opens it again when those URIs change, or
after it dropped (1 s, doubling up to 30 s). A server that does not declare
`resources.subscribe` is refused at once (`SubscriptionsUnsupported`). After a reconnect the
URIs still held are subscribed again. The SDK is imported only when a request is sent, so
importing this module stays light.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from toolnexus._log import logger
from toolnexus._otel import mcp_request
from toolnexus.errors import NotConnected, ToolnexusError
from toolnexus.types import error_message

__all__ = ["SubscriptionsUnsupported", "UpstreamChange", "UpstreamChanges", "change_of"]

Kind = Literal["updated", "resources", "prompts", "tools"]

_CHANGES: dict[str, Kind] = {
    "notifications/resources/updated": "updated",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
# the `_meta` key of a listen stream's frames (the session hands them to its message handler
# too; the stream reports them)
_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
_RETRY_FIRST = 1.0
_RETRY_MOST = 30.0


@dataclass(frozen=True, slots=True)
class UpstreamChange:
    """Server `server` said that its `kind` list changed, or (`updated`) that `uri` did."""

    server: str
    kind: Kind
    uri: str | None = None


class SubscriptionsUnsupported(ToolnexusError):
    """The server owning a URI does not declare `resources.subscribe`."""


class _Upstream(Protocol):
    """What a subscription needs of a configured server (`_source._Server`)."""

    name: str
    conn: Any

    @property
    def timeout(self) -> float: ...

    def session(self) -> Any: ...


def change_of(message: Any) -> tuple[Kind, str | None] | None:
    """The change a 2025-11-25 notification announces (not `tools`: the connection re-lists
    those itself), or `None`."""
    kind = _CHANGES.get(str(getattr(message, "method", "")))
    if kind is None:
        return None
    uri = getattr(getattr(message, "params", None), "uri", None)
    return kind, None if uri is None else str(uri)


def _legacy(session: Any) -> bool:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    return session.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS


def _declares_subscribe(server: _Upstream) -> bool:
    capabilities = (server.conn.capabilities if server.conn is not None else None) or {}
    resources = capabilities.get("resources")
    return isinstance(resources, dict) and resources.get("subscribe") is True


def _list_changes(capabilities: dict[str, Any], *kinds: str) -> list[bool]:
    """Whether the server says it tells of changes to each of `kinds` (`listChanged`)."""
    return [
        isinstance(capabilities.get(k), dict) and capabilities[k].get("listChanged") is True
        for k in kinds
    ]


class UpstreamChanges:
    """The subscriptions held upstream (server ⇒ URIs) and the listeners of the changes heard.

    A listener is called synchronously, on the event loop, with each `UpstreamChange`; it must
    not raise (one that does is logged and skipped)."""

    def __init__(self) -> None:
        self._listeners: list[weakref.WeakMethod[Callable[[UpstreamChange], None]]] = []
        self._held: dict[str, set[str]] = {}
        self._streams: dict[str, _Stream] = {}
        self._resubscribing: set[asyncio.Task[None]] = set()  # held, so none is collected
        self._closed = False

    def add_listener(self, listener: Callable[[UpstreamChange], None]) -> None:
        """Call the bound method `listener` with each change heard for as long as its object
        lives: held weakly, so a gateway served and stopped over a long-lived toolkit leaves
        nothing behind."""
        self._listeners.append(weakref.WeakMethod(listener))

    def heard(self, change: UpstreamChange) -> None:
        live = [m for ref in self._listeners if (m := ref()) is not None]
        if len(live) != len(self._listeners):
            self._listeners = [ref for ref in self._listeners if ref() is not None]
        for listener in live:
            try:
                listener(change)
            except Exception:
                logger.debug("[toolnexus] a listener of upstream changes raised", exc_info=True)

    def listener_for(self, server: str) -> Callable[[Any], None]:
        """`Connection.on_change` for `server`: its 2025-11-25 change notifications."""

        def on_change(message: Any) -> None:
            change = change_of(message)
            meta = getattr(getattr(message, "params", None), "meta", None) or {}
            if change is not None and _SUBSCRIPTION_ID not in meta:  # else the stream's
                self.heard(UpstreamChange(server, *change))

        return on_change

    def held(self, server: str) -> frozenset[str]:
        return frozenset(self._held.get(server, ()))

    def watch(self, servers: Iterable[_Upstream]) -> None:
        """Hear the list changes of `servers` at 2026-07-28 too (a listen stream each)."""
        for server in servers:
            self._stream(server)

    async def subscribe(self, server: _Upstream, uri: str) -> None:
        """Subscribe to `uri` at `server` (its session's era decides how)."""
        if not _declares_subscribe(server):
            raise SubscriptionsUnsupported(
                f'MCP server "{server.name}" does not offer resource subscriptions '
                "(it does not declare resources.subscribe)"
            )
        session = server.session()
        if _legacy(session):
            await _send(server, session, "resources/subscribe", uri)
            self._held.setdefault(server.name, set()).add(uri)
            return
        self._held.setdefault(server.name, set()).add(uri)
        try:
            honored = await asyncio.wait_for(self._stream(server).reopen(), server.timeout)
        except BaseException:
            self._drop(server.name, uri)
            self._stream(server).restart()
            raise
        if uri not in honored:
            self._drop(server.name, uri)
            raise SubscriptionsUnsupported(
                f'MCP server "{server.name}" did not honour a subscription to {uri}'
            )

    async def unsubscribe(self, server: _Upstream, uri: str) -> None:
        """Drop the subscription to `uri` held at `server`."""
        if uri not in self._held.get(server.name, ()):
            return
        self._drop(server.name, uri)
        try:
            session = server.session()
        except NotConnected:
            return  # nothing is held at a server that went away
        if _legacy(session):
            await _send(server, session, "resources/unsubscribe", uri)
        else:
            self._stream(server).restart()

    def adopted(self, server: _Upstream) -> None:
        """`server` connected again: what was held there is subscribed again."""
        stream = self._streams.get(server.name)
        if stream is not None:
            stream.restart()
        uris = self.held(server.name)
        if uris and not self._closed:
            task = asyncio.get_running_loop().create_task(self._again(server, uris))
            self._resubscribing.add(task)
            task.add_done_callback(self._resubscribing.discard)

    async def _again(self, server: _Upstream, uris: frozenset[str]) -> None:
        try:
            session = server.session()
        except NotConnected:
            return
        if not _legacy(session):
            return  # the stream asks for them when it opens
        for uri in sorted(uris):
            if uri not in self._held.get(server.name, ()):
                continue  # let go meanwhile
            try:
                await _send(server, session, "resources/subscribe", uri)
            except Exception as exc:
                logger.warning(
                    '[toolnexus] MCP server "%s": subscribing again to %s failed: %s',
                    server.name,
                    uri,
                    error_message(exc),
                )

    def forget(self, server: str, uri: str) -> None:
        """Let `uri` go at `server` without a word to it (it went away)."""
        self._drop(server, uri)

    def _drop(self, server: str, uri: str) -> None:
        held = self._held.get(server)
        if held is not None:
            held.discard(uri)

    def _stream(self, server: _Upstream) -> _Stream:
        stream = self._streams.get(server.name)
        if stream is None:
            stream = self._streams[server.name] = _Stream(self, server)
            if not self._closed:
                stream.start()
        return stream

    async def close(self) -> None:
        self._closed = True
        for task in list(self._resubscribing):
            task.cancel()
        for stream in self._streams.values():
            await stream.close()


async def _send(server: _Upstream, session: Any, method: str, uri: str) -> None:
    """`resources/subscribe` or `resources/unsubscribe` of `uri`, bounded by the timeout."""
    from mcp.shared.exceptions import MCPDeprecationWarning

    with warnings.catch_warnings():  # removed at 2026-07-28; sent only at 2025-11-25
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if method == "resources/subscribe":
            sending = session.subscribe_resource(uri)
        else:
            sending = session.unsubscribe_resource(uri)
    with mcp_request(method, uri, server.conn):
        async with asyncio.timeout(server.timeout):
            await sending


class _Stream:
    """The listen stream held on one server while its session speaks 2026-07-28."""

    def __init__(self, changes: UpstreamChanges, server: _Upstream) -> None:
        self._changes = changes
        self._server = server
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._scope: Any = None  # the anyio cancel scope of the open stream
        self._waiting: list[asyncio.Future[frozenset[str]]] = []

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"toolnexus-mcp-changes-{self._server.name}"
        )

    def restart(self) -> None:
        """Open the stream again (with the URIs held now)."""
        self._wake.set()
        if self._scope is not None:
            self._scope.cancel()

    async def reopen(self) -> frozenset[str]:
        """Open the stream again and wait for it: the URIs it honours (raises what opening it
        failed with)."""
        opened: asyncio.Future[frozenset[str]] = asyncio.get_running_loop().create_future()
        self._waiting.append(opened)
        self.restart()
        try:
            return await opened
        finally:
            with contextlib.suppress(ValueError):
                self._waiting.remove(opened)

    def _settle(self, honored: frozenset[str] | None, failure: BaseException | None) -> None:
        waiting, self._waiting = self._waiting, []
        for opened in waiting:
            if opened.done():
                continue
            if failure is not None:
                opened.set_exception(failure)
            else:
                opened.set_result(honored or frozenset())

    async def _run(self) -> None:
        import anyio
        from mcp.client.subscriptions import (
            PromptsListChanged,
            ResourcesListChanged,
            ResourceUpdated,
            listen,
        )

        delay = _RETRY_FIRST
        name = self._server.name
        while True:
            self._wake.clear()
            try:
                session = self._server.session()
            except NotConnected as exc:
                self._settle(None, exc)
                await self._wake.wait()
                continue
            if _legacy(session):
                self._settle(None, NotConnected(name))
                await self._wake.wait()
                continue
            capabilities = (self._server.conn.capabilities if self._server.conn else None) or {}
            uris = sorted(self._changes.held(name))
            resources, prompts = _list_changes(capabilities, "resources", "prompts")
            if not uris and not resources and not prompts:
                self._settle(frozenset(), None)
                await self._wake.wait()  # nothing to hear of
                continue
            failure: BaseException | None = None
            with anyio.CancelScope() as scope:
                self._scope = scope
                try:
                    async with listen(
                        session,
                        resources_list_changed=resources,
                        prompts_list_changed=prompts,
                        resource_subscriptions=uris,
                    ) as stream:
                        delay = _RETRY_FIRST
                        self._settle(frozenset(stream.honored.resource_subscriptions or ()), None)
                        async for event in stream:
                            if isinstance(event, ResourceUpdated):
                                self._changes.heard(UpstreamChange(name, "updated", event.uri))
                            elif isinstance(event, ResourcesListChanged):
                                self._changes.heard(UpstreamChange(name, "resources"))
                            elif isinstance(event, PromptsListChanged):
                                self._changes.heard(UpstreamChange(name, "prompts"))
                except Exception as exc:
                    failure = exc
            self._scope = None
            if scope.cancelled_caught or self._wake.is_set():
                continue  # asked to open again: at once
            self._settle(None, failure or NotConnected(name))
            logger.debug(
                '[toolnexus] MCP server "%s" change stream ended (%s); re-opening in %s s',
                name,
                error_message(failure) if failure is not None else "closed by the server",
                delay,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)
            delay = min(delay * 2, _RETRY_MOST)

    async def close(self) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
