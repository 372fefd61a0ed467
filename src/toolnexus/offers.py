"""What a toolkit offers as an MCP server besides its tools: resources (static and templated),
prompts and argument completions, declared with `Toolkit.resource`, `Toolkit.prompt` and
`Toolkit.completion`, and the notifications telling connected clients that they changed.

This module holds the declarations and the clients to notify; `serve/_mcp/_offers.py` turns
them into the SDK server's handlers. Template URIs are RFC 6570 templates matched by the MCP
SDK's `UriTemplate`.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Unpack

from toolnexus._log import logger
from toolnexus.errors import ConfigError

if TYPE_CHECKING:
    from mcp.server.subscriptions import InMemorySubscriptionBus

__all__ = ["DeclaredPrompt", "DeclaredResource", "Offers"]

F = TypeVar("F", bound=Callable[..., Any])


class ResourceFields(TypedDict, total=False):
    """What `Toolkit.resource` takes besides the URI (the `DeclaredResource` fields)."""

    name: str | None
    title: str | None
    description: str | None
    mime_type: str | None
    annotations: Mapping[str, Any] | None
    icons: Sequence[Mapping[str, Any]] | None
    meta: Mapping[str, Any] | None
    size: int | None


class PromptFields(TypedDict, total=False):
    """What `Toolkit.prompt` takes besides the name (the `DeclaredPrompt` fields)."""

    title: str | None
    description: str | None
    icons: Sequence[Mapping[str, Any]] | None
    meta: Mapping[str, Any] | None


@dataclass(slots=True)
class DeclaredResource:
    """A resource (or, when `uri` holds `{variables}`, a resource template) and the function
    that reads it: `fn(**variables)` returns `str` (text), `bytes` (a blob) or a wire-form
    contents dict (`text` or `blob`, optional `mimeType`, `_meta`)."""

    uri: str
    fn: Callable[..., Any]
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Mapping[str, Any] | None = None
    icons: Sequence[Mapping[str, Any]] | None = None
    meta: Mapping[str, Any] | None = None
    size: int | None = None

    @property
    def is_template(self) -> bool:
        return "{" in self.uri

    def wire(self) -> dict[str, Any]:
        """The `resources/list` (or `resources/templates/list`) entry."""
        entry: dict[str, Any] = {
            ("uriTemplate" if self.is_template else "uri"): self.uri,
            "name": self.name,
        }
        optional = {
            "title": self.title,
            "description": self.description,
            "mimeType": self.mime_type,
            "annotations": dict(self.annotations) if self.annotations else None,
            "icons": [dict(i) for i in self.icons] if self.icons else None,
            "_meta": dict(self.meta) if self.meta else None,
            "size": None if self.is_template else self.size,
        }
        entry.update({k: v for k, v in optional.items() if v is not None})
        return entry


@dataclass(slots=True)
class DeclaredPrompt:
    """A prompt: `fn(**arguments)` returns a `str` (one user text message) or a list of
    messages (`str`, content parts, or wire-form `{"role", "content"}` dicts). Its arguments
    are the function's parameters; those without a default are required."""

    name: str
    fn: Callable[..., Any]
    title: str | None = None
    description: str | None = None
    arguments: list[dict[str, Any]] = field(default_factory=list)
    icons: Sequence[Mapping[str, Any]] | None = None
    meta: Mapping[str, Any] | None = None

    def wire(self) -> dict[str, Any]:
        """The `prompts/list` entry."""
        entry: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        optional = {
            "title": self.title,
            "description": self.description,
            "icons": [dict(i) for i in self.icons] if self.icons else None,
            "_meta": dict(self.meta) if self.meta else None,
        }
        entry.update({k: v for k, v in optional.items() if v is not None})
        return entry


Completer = Callable[[str, Mapping[str, str]], Any]
"""`(value typed so far, the other arguments already given) -> list[str]` (sync or async)."""


class Offers:
    """A toolkit's declared resources, prompts and completions, and the clients to notify."""

    def __init__(self) -> None:
        self.resources: dict[str, DeclaredResource] = {}
        self.prompts: dict[str, DeclaredPrompt] = {}
        # (("prompt", name) | ("template", uri template), argument) ⇒ completer
        self.completers: dict[tuple[tuple[str, str], str], Completer] = {}
        # the SDK connections of the 2025-11-25 clients that talked to a served toolkit, and
        # the URIs each subscribed to
        self.sessions: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        self._bus: InMemorySubscriptionBus | None = None

    def __bool__(self) -> bool:
        return bool(self.resources or self.prompts)

    @property
    def bus(self) -> InMemorySubscriptionBus:
        """The fan-out of events to 2026-07-28 clients listening (`subscriptions/listen`)."""
        if self._bus is None:
            from mcp.server.subscriptions import InMemorySubscriptionBus

            self._bus = InMemorySubscriptionBus()
        return self._bus

    def resource(self, uri: str, **fields: Unpack[ResourceFields]) -> Callable[[F], F]:
        """The `Toolkit.resource` decorator (which documents `fields`)."""
        if not isinstance(uri, str) or not uri:
            raise ConfigError("a resource needs a URI (or a URI template)")
        if "{" in uri:
            from mcp.shared.uri_template import UriTemplate

            try:
                UriTemplate.parse(uri)
            except ValueError as exc:
                raise ConfigError(f"bad resource template {uri!r}: {exc}") from None

        def declare(fn: F) -> F:
            if uri in self.resources:
                raise ConfigError(f"resource {uri!r} is declared twice")
            description = fields.get("description")
            self.resources[uri] = DeclaredResource(
                uri,
                fn,
                fields.get("name") or str(getattr(fn, "__name__", uri)),
                fields.get("title"),
                description if description is not None else _summary(fn),
                fields.get("mime_type"),
                fields.get("annotations"),
                fields.get("icons"),
                fields.get("meta"),
                fields.get("size"),
            )
            return fn

        return declare

    def prompt(self, name: str | None = None, **fields: Unpack[PromptFields]) -> Callable[[F], F]:
        """The `Toolkit.prompt` decorator (which documents `fields`)."""

        def declare(fn: F) -> F:
            served = name or fn.__name__
            if served in self.prompts:
                raise ConfigError(f"prompt {served!r} is declared twice")
            description = fields.get("description")
            self.prompts[served] = DeclaredPrompt(
                served,
                fn,
                fields.get("title"),
                description if description is not None else _summary(fn),
                _arguments(fn),
                fields.get("icons"),
                fields.get("meta"),
            )
            return fn

        return declare

    def completion(
        self, argument: str, *, prompt: str | None = None, template: str | None = None
    ) -> Callable[[F], F]:
        if (prompt is None) == (template is None):
            raise ConfigError(
                "a completion completes a prompt's or a template's argument: give one"
            )
        ref = ("prompt", prompt) if prompt is not None else ("template", str(template))

        def declare(fn: F) -> F:
            self.completers[(ref, argument)] = fn
            return fn

        return declare

    async def notify_resource_updated(self, uri: str) -> None:
        from mcp.shared.subscriptions import ResourceUpdated

        for session, subscribed in list(self.sessions.items()):
            if uri in subscribed:
                await _quietly(session.send_resource_updated(uri))
        await self.bus.publish(ResourceUpdated(uri=uri))

    async def notify_list_changed(self, what: str) -> None:
        from mcp.shared.subscriptions import (
            PromptsListChanged,
            ResourcesListChanged,
            ToolsListChanged,
        )

        events: dict[str, tuple[str, Any]] = {
            "resources": ("send_resource_list_changed", ResourcesListChanged),
            "prompts": ("send_prompt_list_changed", PromptsListChanged),
            "tools": ("send_tool_list_changed", ToolsListChanged),
        }
        if what not in events:
            raise ConfigError(f'what changed is "resources", "prompts" or "tools", not {what!r}')
        method, event = events[what]
        for session in list(self.sessions):
            await _quietly(getattr(session, method)())
        await self.bus.publish(event())


async def _quietly(send: Any) -> None:
    """A notification to one client; a client gone away does not stop the others'."""
    try:
        await send
    except Exception:
        logger.debug("[toolnexus] a notification to an MCP client failed", exc_info=True)


def _summary(fn: Callable[..., Any]) -> str | None:
    doc = inspect.getdoc(fn)
    return doc.strip() if doc else None


def _arguments(fn: Callable[..., Any]) -> list[dict[str, Any]]:
    """A prompt's arguments: the function's named parameters, required when without default."""
    arguments = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        arguments.append({"name": param.name, "required": param.default is param.empty})
    return arguments
