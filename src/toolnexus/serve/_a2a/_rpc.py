"""A2A JSON-RPC: the error codes, which dialect (1.0, 0.3, legacy) a method is, the checks of
common params, and the envelopes of answers, errors and SSE events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from toolnexus.a2a import _wire as wire
from toolnexus.a2a._wire import Dialect

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
EXTENDED_CARD_NOT_CONFIGURED = -32007
VERSION_NOT_SUPPORTED = -32009

# -- methods and dialects -----------------------------------------------------------------------

_V03 = {
    "message/send": "send",
    "message/stream": "stream",
    "tasks/get": "get",
    "tasks/cancel": "cancel",
    "tasks/resubscribe": "subscribe",
    "tasks/pushNotificationConfig/set": "push",
    "tasks/pushNotificationConfig/get": "push",
    "tasks/pushNotificationConfig/list": "push",
    "tasks/pushNotificationConfig/delete": "push",
    "agent/getAuthenticatedExtendedCard": "card",
}
_V10 = {
    "SendMessage": "send",
    "SendStreamingMessage": "stream",
    "GetTask": "get",
    "ListTasks": "list",
    "CancelTask": "cancel",
    "SubscribeToTask": "subscribe",
    "CreateTaskPushNotificationConfig": "push",
    "GetTaskPushNotificationConfig": "push",
    "ListTaskPushNotificationConfigs": "push",
    "DeleteTaskPushNotificationConfig": "push",
    "GetExtendedAgentCard": "card",
}
_LEGACY = frozenset({"SendMessage", "GetTask", "CancelTask"})


class _RpcError(Exception):
    """A JSON-RPC error answer: raised where a request fails; the endpoint answers it as the error
    object."""

    def __init__(self, code: int, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason


def _major(version: str) -> int | None:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def dialect_of(method: str, version: str | None) -> tuple[Dialect, str]:
    """The dialect and operation of a request (raises the error answer for a bad pairing)."""
    if method in _V03:
        return "0.3", _V03[method]
    if method not in _V10:
        raise _RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
    value = (version or "").strip()
    major = _major(value) if value else 0
    if major == 1:
        return "1.0", _V10[method]
    if major == 0 and method in _LEGACY:
        return "legacy", _V10[method]
    shown = value or "0.3"
    raise _RpcError(
        VERSION_NOT_SUPPORTED,
        f"A2A version '{shown}' is not supported by this handler. Expected version '1.0'.",
    )


def history_length(params: Mapping[str, Any], key: str = "historyLength") -> int | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _RpcError(INVALID_PARAMS, "history length must be non-negative")
    return value


def params_of(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise _RpcError(INVALID_PARAMS, "Invalid params: params must be an object")
    return params


def task_id_of(params: Mapping[str, Any]) -> str:
    task_id = params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise _RpcError(INVALID_PARAMS, "Invalid params: params.id must be a task id (a string)")
    return task_id


def task_not_found(task_id: str) -> _RpcError:
    """The one answer for a task that does not exist and for another identity's task."""
    return _RpcError(TASK_NOT_FOUND, f"Task not found: {task_id}")


# -- envelopes ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Reply:
    """What `POST /` answers: a JSON body, or a stream of SSE chunks."""

    body: bytes | None = None
    stream: AsyncIterator[bytes] | None = None


def answer_body(rid: Any, result: Any) -> bytes:
    return wire.dumps({"jsonrpc": "2.0", "id": rid, "result": result})


def error_body(rid: Any, exc: _RpcError, dialect: Dialect) -> bytes:
    error = wire.error_object(exc.code, exc.message, dialect, reason=exc.reason)
    return wire.dumps({"jsonrpc": "2.0", "id": rid, "error": error})


def sse_chunk(data: bytes, *, error: bool = False) -> bytes:
    return (b"event: error\n" if error else b"") + b"data: " + data + b"\n\n"
