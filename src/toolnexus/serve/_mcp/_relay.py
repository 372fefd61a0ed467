"""The gateway's upstream resources and prompts: what the toolkit's MCP servers offer, served on.

Without this a gateway client could never follow a `resource_link` an upstream tool returned.
Resource and template lists merge the servers' lists in config order with URIs unchanged (a URI
two servers list is the first one's); `resources/read` goes to the URI's owner. Prompts are
renamed like tools (the server's `"prefix"`, default `sanitize(server) + "_"`, before
`sanitize(prompt)`) and `prompts/get` goes to their
server; completions follow the prompt or the template they complete. Everything is asked of the
servers when the gateway's client asks: nothing is cached, so upstream changes show at once.

A failure upstream reaches the client as an error naming the server and what it could not do
(`MCP server "<name>" could not read <uri>: <why>`): the server's own error code and data when
it answered with an error (an unknown resource stays -32602, a -32042 URL elicitation keeps its
URLs), -32001 when it did not answer within its `timeout`, and -32603 when it is not connected,
its connection was lost, or its error concerns the gateway's own session with it (a protocol
version, a header, a capability toolnexus does not declare). A client answer that breaks the
form asked for, or that belongs to another request, is -32602. Never a traceback or a secret.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolnexus._log import warn
from toolnexus._numbers import format_number
from toolnexus._secrets import redact
from toolnexus.errors import McpInputError, NotConnected
from toolnexus.mcp_source._errors import UpstreamFailed
from toolnexus.mcp_source._input import AnswerRefused, InputPending, Resume
from toolnexus.serve._mcp._asking import ask_client, cannot_ask, resumed
from toolnexus.types import error_message, sanitize

if TYPE_CHECKING:
    from toolnexus.mcp_source import McpSource

__all__ = ["relay_handlers"]

T = TypeVar("T")


def relay_handlers(
    source: McpSource | None, cfg: Mapping[str, Any], among: Collection[str] | None
) -> dict[str, Any]:
    """The lowlevel `Server` handlers (keyword arguments) that re-serve the upstream resources
    and prompts of the servers in `among` (every server when `None`), each unless the profile
    turns it off (`resources: false`, `prompts: false`) or no connected server offers it. A
    capability is declared only when its handlers are there."""
    if source is None:
        return {}
    resources = cfg.get("resources", True) is not False and source.offers_any("resources", among)
    prompts = cfg.get("prompts", True) is not False and source.offers_any("prompts", among)
    relay = _Relay(source, among)
    handlers: dict[str, Any] = {}
    if resources:
        handlers["on_list_resources"] = relay.list_resources
        handlers["on_list_resource_templates"] = relay.list_templates
        handlers["on_read_resource"] = relay.read_resource
    if prompts:
        handlers["on_list_prompts"] = relay.list_prompts
        handlers["on_get_prompt"] = relay.get_prompt
    if (resources or prompts) and source.offers_any("completions", among):
        relay.completes_prompts, relay.completes_templates = prompts, resources
        handlers["on_completion"] = relay.complete
    return handlers


# Errors about the gateway's own session with the upstream server: relayed as they are, they
# would tell the gateway's client something false about its session with the gateway.
_SESSION_CODES = frozenset(
    {types.UNSUPPORTED_PROTOCOL_VERSION, types.HEADER_MISMATCH, types.REQUEST_TIMEOUT}
)


def upstream_error(failure: UpstreamFailed) -> MCPError:
    """What the gateway's client is told of a request that failed at an upstream server."""
    cause, said = failure.cause, str(failure)
    if isinstance(cause, TimeoutError):
        waited = format_number((failure.timeout or 0.0) * 1000)
        return MCPError(code=types.REQUEST_TIMEOUT, message=f"{said}: timed out after {waited} ms")
    if isinstance(cause, NotConnected):
        why = failure.reason or "not connected"
        return MCPError(code=types.INTERNAL_ERROR, message=f"{said}: {redact(why)}")
    if not isinstance(cause, MCPError):
        why = redact(error_message(cause))
        return MCPError(code=types.INTERNAL_ERROR, message=f"{said}: {why}")
    if cause.code == types.CONNECTION_CLOSED:
        return MCPError(code=types.INTERNAL_ERROR, message=f"{said}: connection lost")
    text = redact(cause.message or f"error {cause.code}")
    if cause.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY:
        data = cause.error.data if isinstance(cause.error.data, Mapping) else {}
        needed = data.get("requiredCapabilities")
        if isinstance(needed, Mapping) and needed:
            text = "it needs client capabilities toolnexus does not declare: " + ", ".join(
                sorted(str(k) for k in needed)
            )
        return MCPError(code=types.INTERNAL_ERROR, message=f"{said}: {text}")
    if cause.code in _SESSION_CODES:
        return MCPError(code=types.INTERNAL_ERROR, message=f"{said}: {text}")
    return MCPError(code=cause.code, message=f"{said}: {text}", data=cause.error.data)


async def _upstream(call: Awaitable[T]) -> T:
    """`call`, its upstream failure told as `upstream_error`."""
    try:
        return await call
    except UpstreamFailed as exc:
        raise upstream_error(exc) from None


class _Relay:
    def __init__(self, source: McpSource, among: Collection[str] | None) -> None:
        self.source = source
        self.among = among
        self.completes_prompts = False
        self.completes_templates = False
        self._prompts: dict[str, tuple[str, str]] = {}  # served name ⇒ (server, prompt name)
        self._warned: set[str] = set()

    async def list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        listed = await _upstream(self.source.wire_resources(self.among))
        return types.ListResourcesResult(resources=self._first_of_each(listed, "uri"))

    async def list_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        listed = await _upstream(self.source.wire_resource_templates(self.among))
        return types.ListResourceTemplatesResult(
            resource_templates=self._first_of_each(listed, "uri_template")
        )

    def _first_of_each(self, listed: list[tuple[str, Any]], key: str) -> list[Any]:
        """The listed items, the first server's where two list the same URI (warned once)."""
        owners: dict[str, str] = {}
        kept: list[Any] = []
        for server, item in listed:
            uri = str(getattr(item, key))
            first = owners.setdefault(uri, server)
            if first == server:
                kept.append(item)
            elif uri not in self._warned:
                self._warned.add(uri)
                warn(
                    f'MCP servers "{first}" and "{server}" both list {uri}; '
                    f'the gateway serves "{first}"\'s'
                )
        return kept

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        uri = str(params.uri)

        async def read(resume: Resume | None) -> types.ReadResourceResult:
            result: types.ReadResourceResult = await self.source.wire_read_resource(
                uri, self.among, resume=resume
            )
            return result

        return await _asking_through(ctx, params, read)

    async def list_prompts(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=await self._served_prompts())

    async def _served_prompts(self) -> list[types.Prompt]:
        served: list[types.Prompt] = []
        names: dict[str, tuple[str, str]] = {}
        for server, prompt in await _upstream(self.source.wire_prompts(self.among)):
            name = self.source.prefix_of(server) + sanitize(prompt.name)
            if name in names:
                continue
            names[name] = (server, prompt.name)
            served.append(prompt.model_copy(update={"name": name}))
        self._prompts = names
        return served

    async def _prompt(self, name: str) -> tuple[str, str]:
        found = self._prompts.get(name)
        if found is None:  # not listed yet, or new upstream: list again
            await self._served_prompts()
            found = self._prompts.get(name)
        if found is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {name}")
        return found

    async def get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        server, name = await self._prompt(params.name)

        async def get(resume: Resume | None) -> types.GetPromptResult:
            result: types.GetPromptResult = await self.source.wire_get_prompt(
                server, name, params.arguments, resume=resume
            )
            return result

        return await _asking_through(ctx, params, get)

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context is not None else None
        if isinstance(ref, types.PromptReference):
            if not self.completes_prompts:
                raise MCPError(code=types.INVALID_PARAMS, message="prompts are not served")
            server, name = await self._prompt(ref.name)
            upstream: Any = types.PromptReference(name=name)
        else:
            if not self.completes_templates:
                raise MCPError(code=types.INVALID_PARAMS, message="resources are not served")
            templates = await _upstream(self.source.wire_resource_templates(self.among))
            owner = next((s for s, t in templates if t.uri_template == ref.uri), None)
            if owner is None:
                raise MCPError(
                    code=types.INVALID_PARAMS, message=f"Unknown resource template: {ref.uri}"
                )
            server, upstream = owner, ref
        try:
            result: types.CompleteResult = await _upstream(
                self.source.wire_complete(server, upstream, argument, context)
            )
        except ValueError as exc:  # that server does not complete
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return result


async def _asking_through(
    ctx: Any, params: Any, send: Callable[[Resume | None], Awaitable[T]]
) -> T | types.InputRequiredResult:
    """`send` to the upstream server, relaying what it asks for (as a tool's suspension is): a
    question only a person can answer goes to the gateway's client, as an input request
    (2026-07-28; its retry resumes the upstream round) or pushed (2025-11-25 over stdio,
    once); a client that cannot be asked, and anything toolnexus cannot answer (sampling,
    roots none are configured for), gets an error naming what the server asked (-32021 when
    the client did not declare the elicitation mode needed)."""
    resume: Resume | None = resumed(params)
    pushed = False
    while True:
        try:
            return await send(resume)
        except InputPending as exc:
            request = exc.request
            if pushed:
                raise MCPError(
                    code=types.INTERNAL_ERROR, message=f"unresolved: {request.prompt}"
                ) from None
            asked = await ask_client(ctx, request)
            if asked is None:
                raise cannot_ask(ctx, request, str(exc)) from None
            if isinstance(asked, types.InputRequiredResult):
                return asked
            resume, pushed = (request, asked), True
        except AnswerRefused as exc:  # the client's answer is at fault
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        except McpInputError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        except UpstreamFailed as exc:
            raise upstream_error(exc) from None
        except ValueError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
