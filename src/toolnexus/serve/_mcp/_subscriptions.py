"""The gateway's resource subscriptions and change notifications, relayed between its callers
and the upstream MCP servers (`mcp_source/_subscriptions.py` holds the upstream side).

A subscription belongs to the caller's session (2025-11-25): `resources/subscribe` goes to the
server owning the URI when the first session subscribes to it, and `resources/unsubscribe` when
the last one goes (its unsubscribe, or the session's end: `DELETE`, idle expiry, stdio closed).
An upstream `notifications/resources/updated` reaches exactly the sessions subscribed to that
URI. A 2026-07-28 caller has no session: it opens a `subscriptions/listen` stream naming the
URIs, which hold their upstream subscriptions while it stays open; its acknowledgment honours
the URIs whose server took the subscription. Upstream list changes (resources, prompts, tools)
reach every open session and listen stream asking for them; the tools only after the gateway
listed them again, and only when what it serves changed.

A session-less 2025-11-25 request (plain HTTP, no `Mcp-Session-Id`) cannot subscribe: -32600,
there is nowhere to send an update. A URI whose server does not declare `resources.subscribe`
gets -32602 naming the server; other upstream failures are told as for a read (`_mcp_relay`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolnexus._log import logger
from toolnexus.errors import ConfigError
from toolnexus.mcp_source._errors import UpstreamFailed
from toolnexus.mcp_source._subscriptions import SubscriptionsUnsupported, UpstreamChange
from toolnexus.serve._mcp._caller import connection_of
from toolnexus.serve._mcp._relay import upstream_error
from toolnexus.types import error_message

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.subscriptions import SubscriptionBus

    from toolnexus.mcp_source import McpSource
    from toolnexus.offers import Offers

__all__ = ["RelayedChanges", "relayed_changes"]

_SEND = {
    "resources": "send_resource_list_changed",
    "prompts": "send_prompt_list_changed",
    "tools": "send_tool_list_changed",
}
_EVENTS: dict[str, ServerEvent] = {
    "resources": ResourcesListChanged(),
    "prompts": PromptsListChanged(),
    "tools": ToolsListChanged(),
}


def relayed_changes(
    source: McpSource | None,
    cfg: Mapping[str, Any],
    among: Collection[str] | None,
    *,
    offers: Offers | None = None,
    refresh_tools: Callable[[], bool] | None = None,
) -> RelayedChanges | None:
    """The relay of the upstream servers (of `among`) of `source`, or `None` without one. With
    the toolkit's `offers`, the relay listens on their bus and leaves their URIs to them."""
    if source is None:
        return None
    resources = cfg.get("resources", True) is not False and source.offers_any("resources", among)
    prompts = cfg.get("prompts", True) is not False and source.offers_any("prompts", among)
    return RelayedChanges(
        source,
        among,
        bus=offers.bus if offers is not None else None,
        own=_declared_in(offers) if offers is not None else None,
        resources=resources,
        prompts=prompts,
        refresh_tools=refresh_tools,
    )


class RelayedChanges:
    """Subscriptions by the gateway's callers, held upstream, and the changes relayed back."""

    def __init__(
        self,
        source: McpSource,
        among: Collection[str] | None,
        *,
        bus: SubscriptionBus | None,
        own: Callable[[str], bool] | None,
        resources: bool,
        prompts: bool,
        refresh_tools: Callable[[], bool] | None,
    ) -> None:
        self._source = source
        self._among = among
        self._resources = resources
        self._prompts = prompts
        self._refresh_tools = refresh_tools
        self._own = own
        self._bus: SubscriptionBus = bus if bus is not None else InMemorySubscriptionBus()
        self._listen = ListenHandler(self._bus)
        self._sessions: dict[Any, set[str]] = {}  # open sessions ⇒ the URIs each subscribed to
        self._subscribers: dict[str, set[object]] = {}  # URI ⇒ sessions and listen streams
        self._owners: dict[str, str] = {}  # URI subscribed upstream ⇒ its server
        self._locks: dict[str, asyncio.Lock] = {}  # one per URI ever subscribed, kept
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def subscribes(self) -> bool:
        """Whether a served upstream server declares `resources.subscribe`."""
        return self._resources and any(
            (s.capabilities or {}).get("resources", {}).get("subscribe") is True
            for name, s in self._source.servers.items()
            if self._among is None or name in self._among
        )

    def handlers(self) -> dict[str, Any]:
        """The lowlevel `Server` handlers: `resources/subscribe` and `/unsubscribe` when a
        served server takes subscriptions, and `subscriptions/listen`."""
        handlers: dict[str, Any] = {"on_subscriptions_listen": self.listen}
        if self.subscribes:
            handlers["on_subscribe_resource"] = self.subscribe
            handlers["on_unsubscribe_resource"] = self.unsubscribe
        return handlers

    def install(self, server: Server[Any]) -> None:
        """Follow the sessions of `server` and start hearing the upstream changes."""
        server.middleware.append(self._follow)
        self._source.changes.add_listener(self._heard)
        self._source.watch_changes(self._among)
        from mcp.server.lowlevel.server import NotificationOptions

        # 2025-11-25 capabilities: `listChanged` where changes are relayed. The SDK's runner
        # asks the server for its options with no arguments, so the defaults are set here.
        told = NotificationOptions(
            prompts_changed=self._prompts,
            resources_changed=self._resources,
            tools_changed=self._refresh_tools is not None,
        )
        options = server.create_initialization_options

        def with_changes(notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
            return options(notification_options or told, *args, **kwargs)

        server.create_initialization_options = with_changes  # type: ignore[method-assign]

    # -- sessions -------------------------------------------------------------------------------

    async def _follow(self, ctx: Any, call_next: Any) -> Any:
        """Middleware: remember each 2025-11-25 session with a way back to its caller, until it
        ends."""
        connection = connection_of(ctx)
        if (
            connection is not None
            and connection not in self._sessions
            and self._lasting(ctx, connection)
        ):
            self._sessions[connection] = set()
            connection.exit_stack.push_async_callback(self._ended, connection)
        return await call_next(ctx)

    @staticmethod
    def _lasting(ctx: Any, connection: Any) -> bool:
        """A session that outlives the request: stdio, or HTTP with an `Mcp-Session-Id`."""
        if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return False
        if not connection.has_standalone_channel:
            return False
        return getattr(ctx, "request", None) is None or connection.session_id is not None

    async def _ended(self, connection: Any) -> None:
        await self._release_all(list(self._sessions.pop(connection, ())), connection)

    # -- handlers -------------------------------------------------------------------------------

    async def subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        connection = connection_of(ctx)
        subscribed = None if connection is None else self._sessions.get(connection)
        if subscribed is None:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message="resources/subscribe needs a session (initialize first): without one "
                "there is nowhere to send the updates",
            )
        if uri not in subscribed:
            await self._acquire(uri, connection)
            subscribed.add(uri)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: Any, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        connection = connection_of(ctx)
        subscribed = None if connection is None else self._sessions.get(connection)
        if subscribed is not None and uri in subscribed:
            subscribed.discard(uri)
            await self._release(uri, connection)
        return types.EmptyResult()

    async def listen(
        self, ctx: Any, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """`subscriptions/listen`: the URIs it names are subscribed upstream while it is open;
        those that could not be are left out of its acknowledgment."""
        wanted = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        stream = object()
        held: list[str] = []
        try:
            for uri in wanted:
                if self._own is not None and self._own(uri):
                    continue  # the toolkit's own: its notifications go on the same bus
                try:
                    await self._acquire(uri, stream)
                except MCPError as exc:
                    logger.debug("[toolnexus] listen: %s not subscribed: %s", uri, exc.message)
                    continue
                held.append(uri)
            if len(held) != len(wanted):
                kept = [u for u in wanted if u in held or (self._own and self._own(u))]
                notifications = params.notifications.model_copy(
                    update={"resource_subscriptions": kept or None}
                )
                params = params.model_copy(update={"notifications": notifications})
            return await self._listen(ctx, params)
        finally:  # all let go, even when the stream is cancelled (its caller went away)
            await asyncio.shield(self._release_all(held, stream))

    async def _release_all(self, uris: list[str], subscriber: object) -> None:
        for uri in uris:
            await self._release(uri, subscriber)

    # -- upstream subscriptions -----------------------------------------------------------------

    def _lock(self, uri: str) -> asyncio.Lock:
        lock = self._locks.get(uri)
        if lock is None:
            lock = self._locks[uri] = asyncio.Lock()
        return lock

    async def _acquire(self, uri: str, subscriber: object) -> None:
        """`subscriber` holds `uri`: the first one subscribes upstream."""
        async with self._lock(uri):
            subscribers = self._subscribers.get(uri)
            if not subscribers:
                self._owners[uri] = await self._subscribe_upstream(uri)
                subscribers = self._subscribers[uri] = set()
            subscribers.add(subscriber)

    async def _release(self, uri: str, subscriber: object) -> None:
        """`subscriber` lets `uri` go: the last one unsubscribes upstream."""
        async with self._lock(uri):
            subscribers = self._subscribers.get(uri)
            if subscribers is None:
                return
            subscribers.discard(subscriber)
            if subscribers:
                return
            del self._subscribers[uri]
            server = self._owners.pop(uri, None)
            if server is None:
                return
            try:
                await self._source.unsubscribe_resource(server, uri)
            except Exception as exc:  # the caller is gone or done: nothing to tell it
                logger.debug(
                    '[toolnexus] unsubscribing from %s at MCP server "%s" failed: %s',
                    uri,
                    server,
                    error_message(exc),
                )

    async def _subscribe_upstream(self, uri: str) -> str:
        try:
            return await self._source.subscribe_resource(uri, self._among)
        except UpstreamFailed as exc:
            if isinstance(exc.cause, SubscriptionsUnsupported):
                raise MCPError(
                    code=types.INVALID_PARAMS, message=f"cannot subscribe to {uri}: {exc.cause}"
                ) from None
            raise upstream_error(exc) from None
        except ConfigError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None

    # -- changes heard upstream -----------------------------------------------------------------

    def _heard(self, change: UpstreamChange) -> None:
        if self._among is not None and change.server not in self._among:
            return
        task = asyncio.get_running_loop().create_task(self._relay(change))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _relay(self, change: UpstreamChange) -> None:
        try:
            if change.kind == "updated":
                await self._updated(change)
            else:
                await self._list_changed(change.kind)
        except Exception:
            logger.debug("[toolnexus] relaying %s failed", change, exc_info=True)

    async def _updated(self, change: UpstreamChange) -> None:
        uri = change.uri
        if uri is None or self._owners.get(uri) != change.server:
            return  # not subscribed here (or another server's URI of the same name)
        for subscriber in list(self._subscribers.get(uri, ())):
            if subscriber in self._sessions:  # a session (else a listen stream: the bus's)
                connection: Any = subscriber
                await _quietly(connection.send_resource_updated(uri))
        await self._bus.publish(ResourceUpdated(uri=uri))

    async def _list_changed(self, kind: str) -> None:
        if not {"resources": self._resources, "prompts": self._prompts}.get(kind, True):
            return  # not served here
        if kind == "tools" and (self._refresh_tools is None or not self._refresh_tools()):
            return  # what the gateway serves did not change
        for connection in list(self._sessions):
            await _quietly(getattr(connection, _SEND[kind])())
        await self._bus.publish(_EVENTS[kind])


def _declared_in(offers: Offers) -> Callable[[str], bool]:
    """Whether the toolkit declares a URI (a resource, or a template matching it)."""
    from mcp.shared.uri_template import UriTemplate

    def declared(uri: str) -> bool:
        found = offers.resources.get(uri)
        if found is not None and not found.is_template:
            return True
        return any(
            UriTemplate.parse(r.uri).match(uri) is not None
            for r in list(offers.resources.values())
            if r.is_template
        )

    return declared


async def _quietly(send: Any) -> None:
    """A notification to one caller; one gone away does not stop the others'."""
    try:
        await send
    except Exception:
        logger.debug("[toolnexus] a notification to an MCP client failed", exc_info=True)
