"""The a2a-sdk as the oracle: everything our A2A code emits must pass the SDK's own models.

1.0 objects are parsed strictly (`ParseDict(..., ignore_unknown_fields=False)`) into the
method's type, checked with `validate_proto_required_fields` and turned back with
`MessageToDict`, which must give the same JSON; 0.3 and legacy objects round-trip through
`a2a.compat.v0_3.types`. Cards pass `parse_agent_card` (plus the required-field check) and the
0.3 `AgentCard` model.
"""

from __future__ import annotations

import json
import re
from typing import Any

from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2 as pb
from a2a.utils.proto_utils import validate_proto_required_fields
from google.protobuf.json_format import MessageToDict, ParseDict

_V10_RESULT = {
    "SendMessage": pb.SendMessageResponse,
    "SendStreamingMessage": pb.StreamResponse,
    "SubscribeToTask": pb.StreamResponse,
    "GetTask": pb.Task,
    "CancelTask": pb.Task,
    "ListTasks": pb.ListTasksResponse,
}
_V10_PARAMS = {
    "SendMessage": pb.SendMessageRequest,
    "SendStreamingMessage": pb.SendMessageRequest,
    "GetTask": pb.GetTaskRequest,
    "CancelTask": pb.CancelTaskRequest,
    "ListTasks": pb.ListTasksRequest,
    "SubscribeToTask": pb.SubscribeToTaskRequest,
}
_V03_RESULT: dict[str, Any] = {
    "message/send": (v03.Task, v03.Message),
    "message/stream": (
        v03.Task,
        v03.Message,
        v03.TaskStatusUpdateEvent,
        v03.TaskArtifactUpdateEvent,
    ),
    "tasks/resubscribe": (v03.Task, v03.TaskStatusUpdateEvent, v03.TaskArtifactUpdateEvent),
    "tasks/get": (v03.Task,),
    "tasks/cancel": (v03.Task,),
    # the legacy dialect answers 0.3 objects under 1.0 names
    "SendMessage": (v03.Task, v03.Message),
    "GetTask": (v03.Task,),
    "CancelTask": (v03.Task,),
}
_V03_PARAMS: dict[str, Any] = {
    "message/send": v03.MessageSendParams,
    "message/stream": v03.MessageSendParams,
    "tasks/get": v03.TaskQueryParams,
    "tasks/cancel": v03.TaskIdParams,
    "SendMessage": v03.MessageSendParams,
    "GetTask": v03.TaskQueryParams,
    "CancelTask": v03.TaskIdParams,
}

_STAMP = re.compile(r"(\d{2}:\d{2}:\d{2})(?:\.(\d+))?Z")


def _normal(value: Any) -> Any:
    """JSON with timestamps in one spelling (ProtoJSON drops a `.000`) and numbers as floats
    (a Struct holds doubles)."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str):
        return _STAMP.sub(
            lambda m: m.group(1) + "." + (m.group(2) or "").ljust(3, "0") + "Z", value
        )
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


def check_strict_json(raw: bytes | str) -> Any:
    """`raw` parses as JSON without NaN/Infinity and every string is valid UTF-8 text."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw

    def refuse(name: str) -> Any:
        raise AssertionError(f"non-finite number {name} in emitted JSON")

    value = json.loads(text, parse_constant=refuse)
    text.encode("utf-8")  # no lone surrogates survived either
    return value


def check_v10(kind: Any, value: Any, *, required: bool = True, round_trip: bool = True) -> Any:
    message = ParseDict(value, kind(), ignore_unknown_fields=False)
    if required:
        validate_proto_required_fields(message)
    if round_trip:
        again = MessageToDict(message)
        assert _normal(again) == _normal(_drop_defaults(value)), (again, value)
    return message


def _drop_defaults(value: Any) -> Any:
    """ProtoJSON omits fields at their default (false, 0, "", empty lists/objects)."""
    if isinstance(value, dict):
        return {
            k: _drop_defaults(v)
            for k, v in value.items()
            if not (v is False or v == "" or v == [] or (v == 0 and not isinstance(v, bool)))
            or k == "data"
        }
    if isinstance(value, list):
        return [_drop_defaults(v) for v in value]
    return value


def check_v03(models: tuple[Any, ...], value: Any) -> Any:
    errors = []
    for model in models:
        try:
            parsed = model.model_validate(value)
        except Exception as exc:  # try the next shape
            errors.append(exc)
            continue
        dumped = parsed.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert _normal(dumped) == _normal(value), (dumped, value)
        return parsed
    raise AssertionError(f"not a valid 0.3 object: {value!r} ({errors})")


def check_card(card: dict[str, Any]) -> None:
    parsed = parse_agent_card(json.loads(json.dumps(card)))
    validate_proto_required_fields(parsed)
    v03.AgentCard.model_validate(card)


def check_result(method: str, dialect: str, result: Any) -> None:
    """One JSON-RPC `result` (or SSE event result) of `method` in `dialect`."""
    if dialect == "1.0":
        check_v10(
            _V10_RESULT[method],
            result,
            required=method != "ListTasks",
            round_trip=method != "ListTasks",
        )
    else:
        check_v03(_V03_RESULT[method], result)


def check_error(error: Any, dialect: str) -> None:
    assert isinstance(error, dict) and isinstance(error.get("code"), int), error
    assert isinstance(error.get("message"), str), error
    if dialect != "1.0":
        assert "data" not in error, error
        code = error["code"]
        assert -32700 <= code <= -32600 or -32007 <= code <= -32001, error
        v03.JSONRPCError.model_validate(error)
    elif "data" in error:
        [info] = error["data"]
        assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo", info
        assert info["domain"] == "a2a-protocol.org" and isinstance(info["reason"], str), info


def check_request(body: dict[str, Any], dialect: str) -> None:
    """An outbound JSON-RPC request we sent."""
    assert body["jsonrpc"] == "2.0" and isinstance(body["id"], str), body
    method = body["method"]
    if dialect == "1.0":
        check_v10(_V10_PARAMS[method], body["params"])
    else:
        check_v03((_V03_PARAMS[method],), body["params"])


def dialect_of(method: str, version: str | None) -> str:
    if "/" in method:
        return "0.3"
    return "1.0" if version and version.strip().startswith("1") else "legacy"


def check_response(method: str, dialect: str, response: dict[str, Any], rid: Any) -> None:
    assert response.get("jsonrpc") == "2.0" and response.get("id") == rid, response
    if "error" in response:
        # A version refusal names a 1.0 method: it is answered in the 1.0 form.
        refused = isinstance(response["error"], dict) and response["error"].get("code") == -32009
        check_error(response["error"], "1.0" if refused else dialect)
    else:
        check_result(method, dialect, response["result"])
