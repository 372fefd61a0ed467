"""The elicitation bridge: an MCP `elicitation/create` as a `Request`, an `Answer` back."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolnexus._aio import call_in_thread_maybe_async
from toolnexus._log import warn
from toolnexus.types import Answer, Request, error_message

if TYPE_CHECKING:
    from mcp_types import ElicitResult

_seq = itertools.count(1)


def elicitation_to_request(params: Any) -> Request:
    """Form mode ⇒ `kind="input"` with `data={"schema": ...}`; URL mode ⇒ `kind="authorization"`.

    `params` is the SDK's elicitation params model (or any object with those attributes) or
    the wire dict; the schema is read as `requested_schema` or `requestedSchema` from either.
    """
    mode = _field(params, "mode")
    message = _field(params, "message") or ""
    request_id = f"elc-{int(time.time() * 1000)}-{next(_seq)}"
    if mode == "url":
        elicitation_id = _field(params, "elicitation_id", "elicitationId")
        return Request(
            id=request_id,
            kind="authorization",
            prompt=str(message),
            url=_field(params, "url"),
            data={"elicitationId": elicitation_id} if elicitation_id is not None else None,
        )
    schema = _field(params, "requested_schema", "requestedSchema")
    return Request(
        id=request_id,
        kind="input",
        prompt=str(message),
        data={"schema": schema} if schema is not None else None,
    )


def elicit_result_fields(answer: Answer | None) -> dict[str, Any]:
    """`ok` ⇒ accept with `answer.data`; `declined` ⇒ decline; otherwise (or no answer) cancel."""
    if answer is not None and answer.ok:
        return {"action": "accept", "content": dict(answer.data or {})}
    if answer is not None and answer.reason == "declined":
        return {"action": "decline"}
    return {"action": "cancel"}


def elicit_response(request: Request, answer: Answer | None) -> dict[str, Any]:
    """The wire `ElicitResult` for the host's answer to `request` (a URL elicitation's carries
    no form content)."""
    result = elicit_result_fields(answer)
    if request.kind == "authorization":
        result.pop("content", None)
    return result


async def ask_host(
    wait_for: Callable[[Request], Any], request: Request, server: str, answering: str
) -> Answer | None:
    """The host's answer to `request` (asked for by `server`, while `answering` it); `None`,
    with a warning, when `wait_for` raises."""
    try:
        return Answer.coerce(await call_in_thread_maybe_async(wait_for, request))
    except Exception as exc:
        warn(
            f'MCP server "{server}": wait_for raised while answering {answering}: '
            f"{error_message(exc)}"
        )
        return None


def answer_to_elicit_result(answer: Answer | None) -> ElicitResult:
    """The SDK's `ElicitResult` for an answer (`.action`, `.content`), as the bridge sends it:
    `ok` ⇒ accept with `answer.data`; `declined` ⇒ decline; otherwise (or no answer) cancel.

    Raises `ValueError` (pydantic's `ValidationError`) when the data is not flat form content.
    """
    from mcp_types import ElicitResult  # the SDK loads with the first use, not with the package

    return ElicitResult.model_validate(elicit_result_fields(answer))


def _field(params: Any, name: str, wire_name: str | None = None) -> Any:
    """A field of the params, from a dict or an object, by its Python or its wire name."""
    if isinstance(params, Mapping):
        if name in params:
            return params[name]
        return params.get(wire_name) if wire_name else None
    value = getattr(params, name, None)
    if value is None and wire_name:
        value = getattr(params, wire_name, None)
    return value
