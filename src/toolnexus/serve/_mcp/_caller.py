"""The MCP client of a served tool call, as the tool's `ToolContext.caller`: log messages,
sampling and elicitation through the SDK server session of the request being served.

Log messages honour the level a 2025-11-25 client set with `logging/setLevel` (kept per
session; everything before it does); for a 2026-07-28 client the SDK delivers only what the
request's `_meta` opted in to. Sampling needs a client that declared `sampling`: a 2026-07-28
client is asked in a later round (the call suspends), a 2025-11-25 one over a connection with a
way back to it (stdio, or a request answered over SSE); anything else raises
`CallerUnavailable` naming the reason. Every field of the request is passed on as given. A
question (`ask`) is put to the client as `_asking.ask_client` does: pushed at once over a back
channel, else the call suspends.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolnexus.errors import CallerUnavailable
from toolnexus.serve._mcp._asking import ask_client, create_message
from toolnexus.types import LOG_LEVELS, Answer, Request

__all__ = ["LogLevels", "McpCaller", "connection_of"]


def connection_of(ctx: Any) -> Any:
    """The SDK's per-client `Connection` behind a request context (its `ServerSession` is made
    per request). The lowlevel handlers get no public handle on it, hence the private read."""
    session = getattr(ctx, "session", None)
    return getattr(session, "_connection", None)


class LogLevels:
    """The least severe level each 2025-11-25 session asked for with `logging/setLevel`."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    async def set_level(self, ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        connection = connection_of(ctx)
        if connection is not None:
            self._levels[connection] = LOG_LEVELS.index(params.level)
        return types.EmptyResult()

    def allows(self, ctx: Any, level: str) -> bool:
        return LOG_LEVELS.index(level) >= self._least(ctx)

    def level(self, ctx: Any) -> str:
        """The least severe level the session of `ctx` takes."""
        return LOG_LEVELS[self._least(ctx)]

    def _least(self, ctx: Any) -> int:
        connection = connection_of(ctx)
        return 0 if connection is None else self._levels.get(connection, 0)


class McpCaller:
    """`ToolContext.caller` for one request served over MCP (`ctx`: the SDK's request context)."""

    def __init__(self, ctx: Any, levels: LogLevels) -> None:
        self._ctx = ctx
        self._levels = levels

    @property
    def capabilities(self) -> dict[str, Any] | None:
        declared = self._ctx.session.client_capabilities
        if declared is None:
            return None
        wire: dict[str, Any] = declared.model_dump(by_alias=True, mode="json", exclude_none=True)
        return wire

    @property
    def log_level(self) -> str | None:
        ctx = self._ctx
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:  # the request's own opt-in
            level = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
            return level if level in LOG_LEVELS else None
        return self._levels.level(ctx)

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        session = self._ctx.session
        if not self._levels.allows(self._ctx, level):
            return
        with warnings.catch_warnings():  # deprecated at 2026-07-28, 2025-11-25's still
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sending = session.send_log_message(
                level,  # type: ignore[arg-type]  # checked against LOG_LEVELS by ToolContext.log
                data,
                logger,
                related_request_id=self._ctx.request_id,
            )
        await sending

    async def sample(
        self, messages: list[dict[str, Any]], options: dict[str, Any]
    ) -> dict[str, Any] | None:
        ctx = self._ctx
        session = ctx.session
        wanted = types.ClientCapabilities(sampling=types.SamplingCapability())
        if not session.check_client_capability(wanted):
            raise CallerUnavailable("cannot sample: the MCP client did not declare sampling")
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None  # asked as an input-required round (`_asking.ask_client`)
        if not session.can_send_request:
            raise CallerUnavailable(
                "cannot sample: this MCP connection has no way back to the client "
                "(stdio, or a request answered over SSE, has one)"
            )
        params = types.CreateMessageRequestParams.model_validate({"messages": messages, **options})
        try:
            result = await create_message(ctx, params)
        except NoBackChannelError:
            raise CallerUnavailable(
                "cannot sample: this MCP connection has no way back to the client"
            ) from None
        except MCPError as exc:
            raise CallerUnavailable(f"the MCP client refused to sample: {exc.message}") from None
        reply: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return reply

    async def ask(self, request: Request) -> Answer | None:
        if request.kind == "sampling":  # `sample` is the way to ask for one
            return None
        try:
            asked = await ask_client(self._ctx, request)
        except NoBackChannelError:
            return None
        return asked if isinstance(asked, Answer) else None
