"""Tool listings the SDK would reject because of one tool's schema.

The SDK validates a `tools/list` result strictly: a tool listed without `inputSchema`, or with
one whose root is not `"type": "object"`, fails the whole listing — and so the whole server.
The contract wants such a tool kept: no `inputSchema` means `{"type": "object",
"properties": {}}`, and any other schema is passed through unchanged.

`ListingRepair` sits between the transport and the `ClientSession`: it notes the ids of the
`tools/list` requests the session sends, and in the responses to them gives each tool a schema
the SDK accepts. A schema that was replaced is kept aside and put back by `restore` once the
SDK has validated the page, so what the toolkit exposes is what the server sent.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

import mcp_types as types
from mcp.client._transport import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

from toolnexus._log import warn

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
# What the SDK sees in place of a schema it would reject; the original is restored after.
_PLACEHOLDER: dict[str, Any] = {"type": "object"}


class ListingRepair:
    """Watches one session's streams and repairs the tools of its `tools/list` responses."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._listing_ids: set[types.RequestId] = set()
        self._originals: dict[str, dict[str, Any]] = {}
        self._warned: set[str] = set()  # tools already reported: a re-listing repeats nothing

    def wrap(
        self,
        read: ReadStream[SessionMessage | Exception],
        write: WriteStream[SessionMessage],
    ) -> tuple[_RepairingReader, _WatchingWriter]:
        """The session's streams, with the repair in the path."""
        return _RepairingReader(read, self), _WatchingWriter(write, self)

    def restore(self, tools: list[types.Tool]) -> list[types.Tool]:
        """Put back the schemas the SDK saw placeholders for (in place); returns `tools`."""
        if self._originals:
            for tool in tools:
                original = self._originals.pop(tool.name, None)
                if original is not None:
                    tool.input_schema = original
        return tools

    def _sent(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/list":
            self._listing_ids.add(message.id)

    def _received(self, item: SessionMessage | Exception) -> None:
        if not self._listing_ids or isinstance(item, Exception):
            return
        message = item.message
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return
        if message.id not in self._listing_ids:
            return
        self._listing_ids.discard(message.id)
        if isinstance(message, types.JSONRPCResponse):
            tools = message.result.get("tools")
            if isinstance(tools, list):
                for tool in tools:
                    if isinstance(tool, dict):
                        self._repair(tool)

    def _repair(self, tool: dict[str, Any]) -> None:
        schema = tool.get("inputSchema")
        if isinstance(schema, dict):
            if not _sdk_accepts(schema):
                self._originals[str(tool.get("name"))] = schema
                tool["inputSchema"] = dict(_PLACEHOLDER)
            return
        if schema is not None and str(tool.get("name")) not in self._warned:
            self._warned.add(str(tool.get("name")))
            warn(
                f'MCP server "{self._server}" tool "{tool.get("name")}": inputSchema is not a '
                'JSON object; using {"type":"object","properties":{}}'
            )
        tool["inputSchema"] = dict(EMPTY_SCHEMA)


def _sdk_accepts(schema: dict[str, Any]) -> bool:
    """What the SDK's `InputSchema` models require (2025-11-25 is the strictest revision)."""
    if schema.get("type") != "object" or not isinstance(schema.get("$schema", ""), str | None):
        return False
    properties = schema.get("properties")
    if properties is not None and not (
        isinstance(properties, dict)
        and all(isinstance(p, dict | bool) for p in properties.values())
    ):
        return False
    required = schema.get("required")
    return required is None or (
        isinstance(required, list) and all(isinstance(r, str) for r in required)
    )


class _Proxy:
    """What a wrapped stream only passes through: closing, and use as a context manager."""

    def __init__(self, inner: Any, repair: ListingRepair) -> None:
        self._inner = inner
        self._repair = repair

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _RepairingReader(_Proxy):
    """The session's read stream; repairs `tools/list` responses as they go by."""

    _inner: ReadStream[SessionMessage | Exception]

    @property
    def last_context(self) -> Any:
        """The inner stream's: the SDK's dispatcher runs each message's handler in it."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        self._repair._received(item)
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        item = await self._inner.__anext__()
        self._repair._received(item)
        return item


class _WatchingWriter(_Proxy):
    """The session's write stream; notes the ids of `tools/list` requests."""

    _inner: WriteStream[SessionMessage]

    async def send(self, item: SessionMessage, /) -> None:
        self._repair._sent(item)
        await self._inner.send(item)
