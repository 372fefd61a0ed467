"""Input requests (2026-07-28 `inputRequests`, -32042 URL elicitations) as suspensions.

A round of input requests becomes host `Request`s, one at a time in server order. Without a
`wait_for` the tool returns a suspension whose `Request.data["mcp"]` holds everything needed to
finish the round later, in this process or another: the server and tool, the arguments, the
echoed `requestState`, the whole round in wire form, the entry this Request stands for and the
responses gathered so far. Nothing here talks to a server.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from toolnexus.errors import McpInputError
from toolnexus.mcp_source._elicitation import elicitation_to_request
from toolnexus.types import Answer, Request, ToolResult

ELICIT = "elicitation/create"
ROOTS = "roots/list"
SAMPLING = "sampling/createMessage"
MAX_ROUNDS = 10
_TABLE_SIZE = 1000
_TABLE_TTL = 3600.0
_sampling_seq = itertools.count(1)


class InputPending(McpInputError):
    """A question only the host can answer, with no `wait_for` to ask it. `request` stands for
    it, its `data["mcp"]` holding the round (as a tool call's suspension does), for a caller
    that can ask someone else and resume: the gateway asks its own client."""

    def __init__(self, message: str, request: Request) -> None:
        super().__init__(message)
        self.request = request


class AnswerRefused(McpInputError):
    """The answer a resume carries cannot be sent: it belongs to another request, or it
    breaks the form the server asked for. The answerer is at fault, not the server."""


Resume = tuple[Request, Answer | None]
"""A Request handed out by `InputPending` and the answer to it."""


def wire_requests(input_requests: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A round's input requests (SDK models or wire dicts) as wire dicts, in server order."""
    out: dict[str, dict[str, Any]] = {}
    for key, request in input_requests.items():
        dump = getattr(request, "model_dump", None)
        out[key] = (
            dump(by_alias=True, mode="json", exclude_none=True) if callable(dump) else dict(request)
        )
    return out


def host_request(entry: Mapping[str, Any], key: str | None = None) -> Request:
    """The host `Request` for one wire elicitation entry (form ⇒ `input`, URL ⇒ `authorization`),
    or sampling entry (`sampling`, its params as `data["sampling"]`; only a gateway's client
    answers it).

    At 2026-07-28 a URL entry carries no `elicitationId`: its key in the round stands for it."""
    params = dict(entry.get("params") or {})
    if entry.get("method") == SAMPLING:
        return Request(
            id=f"smp-{int(time.time() * 1000)}-{next(_sampling_seq)}",
            kind="sampling",
            prompt="The MCP server asks the client's model for a reply",
            data={"sampling": params},
        )
    if key is not None and params.get("mode") == "url":
        params.setdefault("elicitationId", key)
    return elicitation_to_request(params)


def round_request(
    origin: Mapping[str, Any],
    *,
    request_state: str | None,
    input_requests: Mapping[str, Mapping[str, Any]],
    key: str,
    responses: Mapping[str, Any],
) -> Request:
    """The host `Request` for entry `key` of a round, its `data["mcp"]` holding `origin` (what
    was asked of which server) and everything needed to finish the round later."""
    request = host_request(input_requests[key], key)
    request.data = {
        **(request.data or {}),
        "mcp": {
            **origin,
            "requestState": request_state,
            "inputRequests": dict(input_requests),
            "key": key,
            "responses": dict(responses),
        },
    }
    return request


def url_suspension(
    *, server: str, tool: str, arguments: Mapping[str, Any], elicitation: Mapping[str, Any]
) -> ToolResult:
    """A pending result for a -32042 URL elicitation."""
    request = elicitation_to_request({**elicitation, "mode": "url"})
    request.data = {
        **(request.data or {}),
        "mcp": {
            "server": server,
            "tool": tool,
            "arguments": dict(arguments),
            "elicitationId": elicitation.get("elicitationId"),
        },
    }
    return pending_result(request, server)


def pending_result(request: Request, server: str) -> ToolResult:
    PENDING.remember(request)
    output = request.prompt if request.url is None else f"{request.prompt}\n{request.url}"
    return ToolResult(output, True, {"pending": request, "server": server})


def next_host_key(
    input_requests: Mapping[str, Mapping[str, Any]], responses: Mapping[str, Any]
) -> str | None:
    """The first entry, in server order, the host (or a gateway's client) still has to
    answer."""
    for key, entry in input_requests.items():
        if entry.get("method") in (ELICIT, SAMPLING) and key not in responses:
            return key
    return None


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def reuse_answers(
    fresh: Mapping[str, Mapping[str, Any]],
    old_requests: Mapping[str, Mapping[str, Any]],
    old_responses: Mapping[str, Any],
) -> dict[str, Any]:
    """Responses for new entries equal (canonical JSON) to ones already answered."""
    answered = {
        canonical(old_requests[key]): response
        for key, response in old_responses.items()
        if key in old_requests
    }
    return {
        key: answered[canonical(entry)]
        for key, entry in fresh.items()
        if canonical(entry) in answered
    }


def invalid_fields(schema: Any, data: Mapping[str, Any] | None) -> list[str]:
    """The fields of a form answer that break the elicitation's `requestedSchema`."""
    if not isinstance(schema, Mapping):
        return []
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    problems: set[str] = set()
    try:
        validator = Draft202012Validator(dict(schema))
    except Exception:
        return []
    for error in validator.iter_errors(dict(data or {})):
        if error.validator == "required" and isinstance(error.instance, Mapping):
            required = error.validator_value if isinstance(error.validator_value, list) else []
            problems.update(str(f) for f in required if f not in error.instance)
        else:
            path = ".".join(str(p) for p in error.absolute_path)
            problems.add(path or "(the answer)")
    return sorted(problems)


def belongs(request: Request | None, answer: Answer | None, server: str, tool: str) -> bool:
    """Whether `answer` answers `request`, a suspension of a call of `tool` on `server`."""
    return answers(request, answer, {"server": server, "tool": tool})


def answers(request: Request | None, answer: Answer | None, origin: Mapping[str, Any]) -> bool:
    """Whether `answer` answers `request`, a suspension of what `origin` names (each of its
    keys as the suspension recorded it)."""
    if request is None or answer is None or answer.id != request.id:
        return False
    mcp = (request.data or {}).get("mcp")
    return isinstance(mcp, Mapping) and all(mcp.get(k) == v for k, v in origin.items())


def describe_url_elicitations(message: str, elicitations: list[Mapping[str, Any]]) -> str:
    return "\n".join([message, *(str(e.get("url", "")) for e in elicitations if e.get("url"))])


class _PendingTable:
    """Requests handed out recently, by id: a host that passes only the answer is served from
    here (same process only)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, tuple[float, Request]] = OrderedDict()

    def remember(self, request: Request) -> None:
        self._items[request.id] = (time.monotonic(), request)
        self._items.move_to_end(request.id)
        while len(self._items) > _TABLE_SIZE:
            self._items.popitem(last=False)

    def get(self, request_id: str) -> Request | None:
        item = self._items.get(request_id)
        if item is None:
            return None
        if time.monotonic() - item[0] > _TABLE_TTL:
            del self._items[request_id]
            return None
        return item[1]


PENDING = _PendingTable()
