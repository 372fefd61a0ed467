"""The A2A wire in three dialects (1.0, 0.3, the legacy toolnexus hybrid), without the a2a-sdk.

Tasks and messages live in the 1.0 form inside toolnexus (ProtoJSON names, ``TASK_STATE_*``,
``ROLE_*``, parts without ``kind``). Readers here accept any spelling of a part, role or state;
writers render exactly one dialect. JSON crossing the wire goes through `dumps`/`loads`: output
never holds NaN/Infinity or a lone surrogate, input with either is refused.
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from toolnexus.errors import ToolnexusError

__all__ = [
    "INTERRUPTED_STATES",
    "TERMINAL_STATES",
    "Dialect",
    "WireError",
    "agent_message",
    "dumps",
    "error_object",
    "is_interrupted",
    "is_terminal",
    "loads",
    "message_text",
    "new_id",
    "now",
    "proto_state",
    "read_message",
    "read_part",
    "read_task",
    "render_event",
    "render_message",
    "render_task",
    "repair",
    "state_name",
]

Dialect: TypeAlias = Literal["1.0", "0.3", "legacy"]

# -- states and roles ---------------------------------------------------------------------------

# toolnexus spelling (= 0.3) -> 1.0 enum name
_STATE_TO_PROTO = {
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "auth-required": "TASK_STATE_AUTH_REQUIRED",
    "completed": "TASK_STATE_COMPLETED",
    "failed": "TASK_STATE_FAILED",
    "canceled": "TASK_STATE_CANCELED",
    "rejected": "TASK_STATE_REJECTED",
    "unknown": "TASK_STATE_UNSPECIFIED",
}
_PROTO_TO_STATE = {proto: name for name, proto in _STATE_TO_PROTO.items()}
TERMINAL_STATES = frozenset({"completed", "failed", "canceled", "rejected"})
INTERRUPTED_STATES = frozenset({"input-required", "auth-required"})


def state_name(value: Any) -> str:
    """The toolnexus spelling of a state written in any dialect (`"unknown"` when unreadable)."""
    if not isinstance(value, str):
        return "unknown"
    if value in _STATE_TO_PROTO:
        return value
    named = _PROTO_TO_STATE.get(value.upper())
    if named is not None:
        return named
    lowered = value.lower().replace("_", "-")
    if lowered == "cancelled":
        return "canceled"
    return lowered if lowered in _STATE_TO_PROTO else "unknown"


def proto_state(value: Any) -> str:
    """The 1.0 enum name of a state written in any dialect."""
    return _STATE_TO_PROTO[state_name(value)]


def is_terminal(state: Any) -> bool:
    return state_name(state) in TERMINAL_STATES


def is_interrupted(state: Any) -> bool:
    return state_name(state) in INTERRUPTED_STATES


def role_name(value: Any) -> str:
    """`user` or `agent` from either spelling (anything else reads as `user`)."""
    if isinstance(value, str) and value.lower() in ("agent", "role_agent"):
        return "agent"
    return "user"


def new_id() -> str:
    return str(uuid.uuid4())


def now() -> str:
    """UTC now as A2A writes it: `2026-12-01T09:29:58.986Z`."""
    stamp = datetime.now(UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


# -- JSON in and out ----------------------------------------------------------------------------


class WireError(ToolnexusError, ValueError):
    """A body that is not acceptable JSON (the caller answers a parse error)."""


_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _fix_str(text: str) -> str:
    if not _has_surrogate(text):
        return text
    return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)


def repair(value: Any) -> Any:
    """`value` with every lone surrogate replaced by U+FFFD and every non-finite number by
    `None`, so that it always encodes as valid JSON (plain JSON data in, plain JSON data out)."""
    if isinstance(value, str):
        return _fix_str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {_fix_str(str(k)): repair(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [repair(v) for v in value]
    return value


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON that is always valid (see `repair`); fast when nothing needs fixing."""
    try:
        return _encoder.encode(value).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return _encoder.encode(repair(value)).encode("utf-8")


def _refuse_constant(name: str) -> Any:
    raise WireError(f"{name} is not JSON")


def _check_strings(value: Any) -> None:
    # Iterative: a deeply nested document must not exhaust the stack here either.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _has_surrogate(item):
                raise WireError("a lone surrogate escape")
        elif isinstance(item, dict):
            for key, child in item.items():
                if _has_surrogate(key):
                    raise WireError("a lone surrogate escape")
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


def loads(body: bytes | str) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, no lone surrogate escape, parsable depth.

    Raises `WireError` for anything else.
    """
    try:
        text = body.decode("utf-8") if isinstance(body, (bytes, bytearray)) else body
        value = json.loads(text, parse_constant=_refuse_constant)
    except WireError:
        raise
    except (ValueError, RecursionError, TypeError) as exc:
        raise WireError(str(exc) or "not JSON") from None
    _check_strings(value)
    return value


# -- errors -------------------------------------------------------------------------------------

_REASONS = {
    -32600: "INVALID_REQUEST",
    -32601: "METHOD_NOT_FOUND",
    -32602: "INVALID_PARAMS",
    -32603: "INTERNAL_ERROR",
    -32001: "TASK_NOT_FOUND",
    -32002: "TASK_NOT_CANCELABLE",
    -32003: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    -32004: "UNSUPPORTED_OPERATION",
    -32005: "CONTENT_TYPE_NOT_SUPPORTED",
    -32006: "INVALID_AGENT_RESPONSE",
    -32007: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    -32009: "VERSION_NOT_SUPPORTED",
}


def error_object(
    code: int, message: str, dialect: Dialect, *, reason: str | None = None
) -> dict[str, Any]:
    """A JSON-RPC `error` member in `dialect`: 1.0 adds the `ErrorInfo` entry the SDK reads;
    0.3 and legacy have no `data` and only know -32700..-32600 and -32001..-32007."""
    if dialect == "1.0":
        error: dict[str, Any] = {"code": code, "message": message}
        why = reason or _REASONS.get(code)
        if why is not None:
            error["data"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": why,
                    "domain": "a2a-protocol.org",
                    "metadata": {},
                }
            ]
        return error
    if not (-32700 <= code <= -32600 or -32007 <= code <= -32001):
        code = -32603
    return {"code": code, "message": message}


# -- parts --------------------------------------------------------------------------------------


def _b64(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def read_part(part: Any) -> dict[str, Any] | None:
    """One part of any dialect in the 1.0 form (`text`, `raw`, `url` or `data`, with
    `mediaType`/`filename`/`metadata` when given); `None` for something that is not a part."""
    if not isinstance(part, Mapping):
        return None
    kind = part.get("kind")
    out: dict[str, Any]
    if kind == "file" or (kind is None and isinstance(part.get("file"), Mapping)):
        file = part.get("file")
        if not isinstance(file, Mapping):
            return None
        if isinstance(file.get("bytes"), str):
            out = {"raw": file["bytes"]}
        elif isinstance(file.get("uri"), str):
            out = {"url": file["uri"]}
        else:
            return None
        if isinstance(file.get("mimeType"), str):
            out["mediaType"] = file["mimeType"]
        if isinstance(file.get("name"), str):
            out["filename"] = file["name"]
    elif kind == "data":
        if "data" not in part:
            return None
        data = part["data"]
        meta = part.get("metadata")
        if (
            isinstance(meta, Mapping)
            and meta.get("data_part_compat") is True
            and isinstance(data, Mapping)
            and "value" in data
        ):
            data = data["value"]
        out = {"data": data}
    elif kind == "text" or kind is None:
        if isinstance(part.get("text"), str):
            out = {"text": part["text"]}
        elif kind is None and isinstance(_b64(part.get("raw")), str):
            out = {"raw": part["raw"]}
        elif kind is None and isinstance(part.get("url"), str):
            out = {"url": part["url"]}
        elif kind is None and "data" in part:
            out = {"data": part["data"]}
        else:
            return None
        for key in ("mediaType", "filename"):
            if isinstance(part.get(key), str) and part[key]:
                out[key] = part[key]
    else:
        return None
    meta = part.get("metadata")
    if isinstance(meta, Mapping) and meta and kind != "data":
        out["metadata"] = dict(meta)
    return out


def _render_part(part: Mapping[str, Any], dialect: Dialect) -> dict[str, Any]:
    if dialect == "1.0":
        return dict(part)
    meta = part.get("metadata")
    if "text" in part:
        out: dict[str, Any] = {"kind": "text", "text": part["text"]}
    elif "raw" in part or "url" in part:
        file: dict[str, Any] = {"bytes": part["raw"]} if "raw" in part else {"uri": part["url"]}
        if part.get("mediaType"):
            file["mimeType"] = part["mediaType"]
        if part.get("filename"):
            file["name"] = part["filename"]
        out = {"kind": "file", "file": file}
    else:
        data = part.get("data")
        if isinstance(data, Mapping):
            out = {"kind": "data", "data": dict(data)}
        else:
            out = {"kind": "data", "data": {"value": data}}
            meta = {**(meta or {}), "data_part_compat": True}
    if meta:
        out["metadata"] = dict(meta)
    return out


def text_part(text: str) -> dict[str, Any]:
    return {"text": text}


def part_texts(parts: Any) -> list[str]:
    """The texts of the text parts of a part list of any dialect."""
    texts = []
    for part in parts if isinstance(parts, list) else []:
        read = read_part(part)
        if read is not None and "text" in read:
            texts.append(read["text"])
    return texts


def message_text(message: Any, sep: str = "\n") -> str:
    if not isinstance(message, Mapping):
        return ""
    return sep.join(part_texts(message.get("parts")))


def bytes_of(part: Mapping[str, Any]) -> bytes:
    return base64.b64decode(part.get("raw") or "")


# -- messages and tasks -------------------------------------------------------------------------


def read_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message of any dialect in the 1.0 form (unreadable parts dropped; ids kept if strings)."""
    parts = [p for p in (read_part(x) for x in message.get("parts") or []) if p is not None]
    out: dict[str, Any] = {
        "messageId": message.get("messageId")
        if isinstance(message.get("messageId"), str) and message.get("messageId")
        else new_id(),
        "role": "ROLE_AGENT" if role_name(message.get("role")) == "agent" else "ROLE_USER",
        "parts": parts,
    }
    for key in ("contextId", "taskId"):
        if isinstance(message.get(key), str) and message.get(key):
            out[key] = message[key]
    meta = message.get("metadata")
    if isinstance(meta, Mapping) and meta:
        out["metadata"] = dict(meta)
    return out


def agent_message(
    text: str,
    *,
    context_id: str,
    task_id: str,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A 1.0 agent message with one text part."""
    out: dict[str, Any] = {
        "messageId": new_id(),
        "role": "ROLE_AGENT",
        "parts": [{"text": text}],
        "contextId": context_id,
        "taskId": task_id,
    }
    if metadata:
        out["metadata"] = dict(metadata)
    return out


def _read_status(status: Any, context_id: str, task_id: str) -> dict[str, Any]:
    status = status if isinstance(status, Mapping) else {}
    out: dict[str, Any] = {"state": proto_state(status.get("state", "submitted"))}
    message = status.get("message")
    if isinstance(message, Mapping):
        msg = read_message(message)
        msg.setdefault("contextId", context_id)
        msg.setdefault("taskId", task_id)
        out["message"] = msg
    if isinstance(status.get("timestamp"), str):
        out["timestamp"] = status["timestamp"]
    return out


def _read_artifact(artifact: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "artifactId": artifact.get("artifactId")
        if isinstance(artifact.get("artifactId"), str) and artifact.get("artifactId")
        else new_id(),
        "parts": [p for p in (read_part(x) for x in artifact.get("parts") or []) if p is not None],
    }
    for key in ("name", "description"):
        if isinstance(artifact.get(key), str):
            out[key] = artifact[key]
    if isinstance(artifact.get("metadata"), Mapping) and artifact["metadata"]:
        out["metadata"] = dict(artifact["metadata"])
    return out


def read_artifact(artifact: Mapping[str, Any]) -> dict[str, Any]:
    return _read_artifact(artifact)


def read_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """A task of any dialect (a stored one of the previous contract too) in the 1.0 form;
    a missing `contextId` becomes the task id."""
    task_id = str(task.get("id") or "")
    context_id = task.get("contextId")
    if not isinstance(context_id, str) or not context_id:
        context_id = task_id
    out: dict[str, Any] = {
        "id": task_id,
        "contextId": context_id,
        "status": _read_status(task.get("status"), context_id, task_id),
    }
    artifacts = task.get("artifacts")
    if isinstance(artifacts, list) and artifacts:
        out["artifacts"] = [_read_artifact(a) for a in artifacts if isinstance(a, Mapping)]
    history = task.get("history")
    if isinstance(history, list) and history:
        out["history"] = [read_message(m) for m in history if isinstance(m, Mapping)]
    if isinstance(task.get("metadata"), Mapping) and task["metadata"]:
        out["metadata"] = dict(task["metadata"])
    return out


def render_message(message: Mapping[str, Any], dialect: Dialect) -> dict[str, Any]:
    """A stored 1.0 message in `dialect`."""
    parts = [_render_part(p, dialect) for p in message.get("parts") or []]
    if dialect == "1.0":
        out = {key: value for key, value in message.items() if key != "parts"}
        out["parts"] = parts
        # ProtoJSON order is free; keep the documented one for readability.
        return {
            "messageId": out.pop("messageId"),
            "role": out.pop("role"),
            "parts": out.pop("parts"),
            **out,
        }
    rendered: dict[str, Any] = {
        "kind": "message",
        "messageId": message["messageId"],
        "role": "agent" if role_name(message.get("role")) == "agent" else "user",
        "parts": parts,
    }
    for key in ("contextId", "taskId", "metadata"):
        if key in message:
            rendered[key] = message[key]
    return rendered


def _render_status(status: Mapping[str, Any], dialect: Dialect) -> dict[str, Any]:
    out: dict[str, Any] = {
        "state": proto_state(status.get("state"))
        if dialect == "1.0"
        else state_name(status.get("state"))
    }
    if isinstance(status.get("message"), Mapping):
        out["message"] = render_message(status["message"], dialect)
    if "timestamp" in status:
        out["timestamp"] = status["timestamp"]
    return out


def render_artifact(artifact: Mapping[str, Any], dialect: Dialect) -> dict[str, Any]:
    out = dict(artifact)
    out["parts"] = [_render_part(p, dialect) for p in artifact.get("parts") or []]
    return out


def render_task(
    task: Mapping[str, Any],
    dialect: Dialect,
    *,
    history_length: int | None = None,
    artifacts: bool = True,
) -> dict[str, Any]:
    """A stored 1.0 task in `dialect`; `history_length` keeps the last n messages (0: none)."""
    out: dict[str, Any] = {}
    if dialect != "1.0":
        out["kind"] = "task"
    out["id"] = task["id"]
    out["contextId"] = task.get("contextId") or task["id"]
    out["status"] = _render_status(task.get("status") or {}, dialect)
    if artifacts and task.get("artifacts"):
        out["artifacts"] = [render_artifact(a, dialect) for a in task["artifacts"]]
    history = list(task.get("history") or [])
    if history_length is not None:
        history = history[len(history) - history_length :] if history_length > 0 else []
    if history:
        out["history"] = [render_message(m, dialect) for m in history]
    if task.get("metadata"):
        out["metadata"] = task["metadata"]
    return out


def render_event(
    event: Mapping[str, Any], dialect: Dialect, *, final: bool = False
) -> dict[str, Any]:
    """One stream event in `dialect`. `event` is `{"task": <task>}`, `{"statusUpdate": {taskId,
    contextId, status}}` or `{"artifactUpdate": {taskId, contextId, artifact, append?,
    lastChunk?}}` (1.0 forms); 0.3 events are unwrapped and `kind`-tagged."""
    if "task" in event:
        task = render_task(event["task"], dialect)
        return {"task": task} if dialect == "1.0" else task
    if "statusUpdate" in event:
        update = event["statusUpdate"]
        status = _render_status(update["status"], dialect)
        if dialect == "1.0":
            return {
                "statusUpdate": {
                    "taskId": update["taskId"],
                    "contextId": update["contextId"],
                    "status": status,
                }
            }
        return {
            "kind": "status-update",
            "taskId": update["taskId"],
            "contextId": update["contextId"],
            "status": status,
            "final": final,
        }
    update = event["artifactUpdate"]
    artifact = render_artifact(update["artifact"], dialect)
    if dialect == "1.0":
        body: dict[str, Any] = {
            "taskId": update["taskId"],
            "contextId": update["contextId"],
            "artifact": artifact,
        }
        if update.get("append"):
            body["append"] = True
        if update.get("lastChunk"):
            body["lastChunk"] = True
        return {"artifactUpdate": body}
    return {
        "kind": "artifact-update",
        "taskId": update["taskId"],
        "contextId": update["contextId"],
        "artifact": artifact,
        "append": bool(update.get("append")),
        "lastChunk": bool(update.get("lastChunk")),
    }


def texts_and_data(parts: Iterable[Mapping[str, Any]]) -> list[str]:
    """Output lines of 1.0 parts: a text part's text, a data part's compact JSON."""
    lines = []
    for part in parts:
        if "text" in part:
            lines.append(part["text"])
        elif "data" in part:
            lines.append(dumps(part["data"]).decode("utf-8"))
    return lines
