"""Asking the gateway's own client a host question (a `Request`), in the form it can answer.

A 2026-07-28 client that declares the elicitation mode gets an `InputRequiredResult` with one
entry keyed by the Request's id and the Request's JSON as `requestState` (sealed by the
server's request-state boundary); its retry carries the answer. A 2025-11-25 client over stdio
that declares it is asked at once (a pushed `elicitation/create`). Any other client cannot be
asked. A `sampling` Request (a tool's `ToolContext.sample`, or an upstream server's sampling
request the gateway relays) is asked the same ways as `sampling/createMessage`. Used for tool
suspensions and for the questions upstream servers ask while the gateway reads their resources
or gets their prompts.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolnexus.types import Answer, Request

__all__ = ["answer_of", "ask_client", "cannot_ask", "resumed"]


def _form_schema(request: Request) -> dict[str, Any]:
    """The Request's own form, else one string field `answer` described by the prompt."""
    schema = (request.data or {}).get("schema")
    if isinstance(schema, Mapping):
        return dict(schema)
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "description": request.prompt}},
        "required": ["answer"],
    }


def _sampling(request: Request) -> types.CreateMessageRequest:
    params = (request.data or {}).get("sampling") or {}
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams.model_validate(params)
    )


async def create_message(ctx: Any, params: types.CreateMessageRequestParams) -> Any:
    """`sampling/createMessage` pushed to the client of the request `ctx` serves, every field
    as given; its result."""
    with warnings.catch_warnings():  # deprecated at 2026-07-28, 2025-11-25's still
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return await ctx.session.create_message(  # type: ignore[call-overload]
            list(params.messages),
            max_tokens=params.max_tokens,
            system_prompt=params.system_prompt,
            include_context=params.include_context,
            temperature=params.temperature,
            stop_sequences=params.stop_sequences,
            metadata=params.metadata,
            model_preferences=params.model_preferences,
            tools=params.tools,
            tool_choice=params.tool_choice,
            related_request_id=ctx.request_id,
        )


def _elicitation(request: Request) -> types.ElicitRequest:
    if request.kind == "authorization" and request.url:
        return types.ElicitRequest(
            params=types.ElicitRequestURLParams(
                message=request.prompt, url=request.url, elicitation_id=request.id
            )
        )
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=request.prompt, requested_schema=_form_schema(request)
        )
    )


def answer_of(request: Request, response: Any) -> Answer:
    """The client's elicitation (or sampling) response as the host's `Answer` to `request`."""
    if request.kind == "sampling":
        dump = getattr(response, "model_dump", None)
        reply = dump(by_alias=True, mode="json", exclude_none=True) if callable(dump) else response
        if not isinstance(reply, Mapping) or "content" not in reply:
            return Answer(request.id, False, reason="cancelled")
        return Answer(request.id, True, dict(reply))
    action = getattr(response, "action", None)
    if action is None and isinstance(response, Mapping):
        action = response.get("action")
    if action == "accept":
        content = getattr(response, "content", None)
        if content is None and isinstance(response, Mapping):
            content = response.get("content")
        return Answer(request.id, True, dict(content or {}) or None)
    return Answer(request.id, False, reason="declined" if action == "decline" else "cancelled")


def resumed(params: Any) -> tuple[Request, Answer] | None:
    """The Request a retried 2026-07-28 request answers (its `requestState`, unsealed by the
    boundary) and the client's answer to it; `None` for a first request."""
    state = getattr(params, "request_state", None)
    responses = getattr(params, "input_responses", None)
    if state is None or not responses:
        return None
    request = Request.from_dict(json.loads(state))
    return request, answer_of(request, responses.get(request.id))


def _can_elicit(capabilities: types.ClientCapabilities | None, request: Request) -> bool:
    if request.kind == "sampling":
        return capabilities is not None and capabilities.sampling is not None
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    if request.kind == "authorization" and request.url:
        return elicitation.url is not None
    return elicitation.form is not None or elicitation.url is None


async def ask_client(ctx: Any, request: Request) -> types.InputRequiredResult | Answer | None:
    """`request` put to the client of the request `ctx` serves: the `InputRequiredResult` to
    answer with (2026-07-28), the client's `Answer` (pushed, 2025-11-25 over stdio), or `None`
    when this client cannot be asked."""
    session = ctx.session
    if not _can_elicit(session.client_capabilities, request):
        return None
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        asking = _sampling(request) if request.kind == "sampling" else _elicitation(request)
        return types.InputRequiredResult(
            input_requests={request.id: asking},
            request_state=json.dumps(request.to_dict(), separators=(",", ":")),
        )
    if not session.can_send_request:
        return None
    if request.kind == "sampling":
        return answer_of(request, await create_message(ctx, _sampling(request).params))
    params = _elicitation(request).params
    if isinstance(params, types.ElicitRequestURLParams):
        response: Any = await session.elicit_url(
            params.message, params.url, params.elicitation_id, related_request_id=ctx.request_id
        )
    else:
        response = await session.elicit_form(
            params.message, params.requested_schema, related_request_id=ctx.request_id
        )
    return answer_of(request, response)


def cannot_ask(ctx: Any, request: Request, message: str) -> MCPError:
    """The error for a client `ask_client` could not ask `request` (`message` says what was
    asked): for a 2026-07-28 client (whose every request declares its capabilities), -32021
    naming the elicitation mode it did not declare, as the SDK's own servers answer; for a
    2025-11-25 one (over stateless HTTP nothing can be pushed to it, whatever it declared), an
    internal error."""
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    if not modern or _can_elicit(ctx.session.client_capabilities, request):
        return MCPError(code=types.INTERNAL_ERROR, message=message)
    if request.kind == "sampling":
        needed: dict[str, Any] = {"sampling": {}}
    else:
        mode = "url" if request.kind == "authorization" and request.url else "form"
        needed = {"elicitation": {mode: {}}}
    required = types.MissingRequiredClientCapabilityErrorData.model_validate(
        {"requiredCapabilities": needed}
    )
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=message,
        data=required.model_dump(by_alias=True, mode="json", exclude_none=True),
    )
