"""What the MCP gateway forwards: the servers' own (SDK) models of their resources, prompts
and completions, unchanged (the `wire_*` methods `McpSource` inherits from `Forwarding`).

A relayed request reconnects a lost server as a tool call would; a failure there becomes
`UpstreamFailed`, naming the server and what it tried.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus.errors import ConfigError, McpInputError
from toolnexus.mcp_source import _input
from toolnexus.mcp_source._errors import UpstreamFailed

if TYPE_CHECKING:
    from toolnexus.mcp_source._input import Resume
    from toolnexus.mcp_source._server import _Server
    from toolnexus.mcp_source._subscriptions import UpstreamChanges

D = TypeVar("D")


class Forwarding(ABC):
    """The gateway's side of `McpSource`: the servers' listings and answers as they sent them."""

    _servers: dict[str, _Server]
    _owners: OrderedDict[str, str]  # URI -> the server that last named it
    changes: UpstreamChanges  # what a gateway subscribed to upstream, and the changes heard

    @abstractmethod
    def _offering(self, server: str | None, capability: str) -> list[_Server]: ...

    @abstractmethod
    def _named(self, server: str) -> _Server: ...

    @abstractmethod
    def remember(self, uri: str, server: str) -> None: ...

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

    # -- resource subscriptions and change notifications a gateway relays (`_subscriptions.py`) -

    async def subscribe_resource(self, uri: str, among: Collection[str] | None = None) -> str:
        """Subscribe to `uri` at the server owning it (of `among`, when given); its name.
        `UpstreamFailed` when the server refuses or cannot be reached (its cause a
        `SubscriptionsUnsupported` when it does not declare `resources.subscribe`)."""
        owner = await self._subscription_owner(uri, among)
        await _relayed(owner, f"subscribe to {uri}", lambda s: self.changes.subscribe(s, uri))
        return owner.name

    async def unsubscribe_resource(self, server: str, uri: str) -> None:
        """Drop the subscription to `uri` held at `server` (none held: nothing is sent)."""
        found = self._servers.get(server)
        if found is None or uri not in self.changes.held(server):
            return
        if not found.usable:  # nothing is held at a server that went away: not reconnected
            self.changes.forget(server, uri)
            return
        what = f"unsubscribe from {uri}"
        await _relayed(found, what, lambda s: self.changes.unsubscribe(s, uri))

    def watch_changes(self, among: Collection[str] | None = None) -> None:
        """Hear the resource and prompt list changes of the servers (of `among`) that speak
        2026-07-28 too (those at 2025-11-25 send theirs on their session)."""
        servers = self._servers.values()
        self.changes.watch(
            s for s in servers if s.wants_connection and (among is None or s.name in among)
        )

    async def _subscription_owner(self, uri: str, among: Collection[str] | None) -> _Server:
        """The server a subscription to `uri` goes to: the one that last named it, else the
        only one offering resources, else the one listing it, else the first declaring
        `resources.subscribe` (config order)."""
        candidates = self._among(among, "resources") + self._lost_offering(among, "resources")
        if not candidates:
            raise ConfigError("no connected MCP server offers resources")
        for attempt in range(2):
            remembered = self._owners.get(uri)
            named = [s for s in candidates if s.name == remembered]
            if named:
                return named[0]
            if len(candidates) == 1:
                return candidates[0]
            if attempt == 0:
                with contextlib.suppress(UpstreamFailed):
                    await self.wire_resources(among)  # remembers who lists what
        subscribing = [s for s in candidates if s.offers("resources") and _subscribes(s)]
        return (subscribing or candidates)[0]

    async def _relay_target(self, server: str, capability: str, what: str) -> _Server:
        """The server a relayed request names, reconnected when it went away (as for a tool
        call); `UpstreamFailed` when it is not connected."""
        s = self._named(server)
        if s.spec is not None:
            await s.relay_ready(what)
        return self._offering(server, capability)[0]


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


def _subscribes(server: _Server) -> bool:
    """Whether `server` declares `resources.subscribe`."""
    resources = ((server.conn.capabilities if server.conn else None) or {}).get("resources")
    return isinstance(resources, Mapping) and resources.get("subscribe") is True


def _not_found(exc: BaseException) -> bool:
    """Whether a server answered that it has no such resource (-32602, as the SDK's servers
    answer, or the -32002 some others use)."""
    return getattr(exc, "code", None) in (-32602, -32002)


def _asking_server(resume: Resume) -> object:
    """The server that asked the question a resumed Request stands for."""
    mcp = (resume[0].data or {}).get("mcp")
    return mcp.get("server") if isinstance(mcp, Mapping) else None
