"""A model running in this process, wrapped as an OpenAI chat-completions endpoint."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

from toolnexus._aio import as_async
from toolnexus._json import compact_json
from toolnexus.client._transport import StreamBody
from toolnexus.errors import ConfigTypeError, StreamingUnsupported

__all__ = ["STREAM_UNSUPPORTED", "InProcessModel", "generate_request", "to_completion"]

STREAM_UNSUPPORTED = (
    "an in-process client does not support streaming: generate() returns whole answers; "
    "use run(), or ask() without on_text"
)

_ids = itertools.count(1)


_CAMEL_USAGE = {
    "promptTokens": "prompt_tokens",
    "completionTokens": "completion_tokens",
    "totalTokens": "total_tokens",
}


def _usage(raw: Any) -> dict[str, Any] | None:
    """A reply's `usage` with camelCase names accepted; the OpenAI parsing does the rest."""
    if not isinstance(raw, Mapping):
        return None
    usage = {k: v for k, v in raw.items() if k not in _CAMEL_USAGE}
    for camel, snake in _CAMEL_USAGE.items():
        if camel in raw and snake not in usage:
            usage[snake] = raw[camel]
    return usage


def to_completion(reply: Any, model: str) -> dict[str, Any]:
    """Wrap one `generate()` reply as a chat-completions response."""
    if not isinstance(reply, Mapping):
        raise ConfigTypeError(
            "generate() must return a dict: {'content': str} or {'tool_calls': [...]}, "
            f"not {type(reply).__name__}"
        )
    raw_calls = reply.get("tool_calls", reply.get("toolCalls"))
    message: dict[str, Any] = {"role": "assistant"}
    if raw_calls:
        if not isinstance(raw_calls, list):
            raise ConfigTypeError("generate(): tool_calls must be a list")
        calls = []
        for index, call in enumerate(raw_calls):
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                raise ConfigTypeError(f"generate(): tool_calls[{index}] needs a string 'name'")
            arguments = call.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = compact_json(arguments if arguments is not None else {})
            calls.append(
                {
                    "id": str(call.get("id") or f"call_{index}"),
                    "type": "function",
                    "function": {"name": call["name"], "arguments": arguments},
                }
            )
        content = reply.get("content")
        message["content"] = content if isinstance(content, str) and content else None
        message["tool_calls"] = calls
        finish = "tool_calls"
    else:
        content = reply.get("content")
        if content is None:
            raise ConfigTypeError(
                "generate() must return {'content': str} or {'tool_calls': [...]}"
            )
        if not isinstance(content, str):
            raise ConfigTypeError(
                f"generate(): content must be a string, not {type(content).__name__}"
            )
        message["content"] = content
        finish = "stop"
    completion: dict[str, Any] = {
        "id": f"inproc-{next(_ids)}",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    usage = _usage(reply.get("usage"))
    if usage is not None:
        completion["usage"] = usage
    return completion


def generate_request(body: dict[str, Any]) -> dict[str, Any]:
    """What `generate(request)` is given for one request body."""
    # A snapshot: the live transcript keeps growing after this call returns.
    body = {**body, "messages": list(body.get("messages") or ())}
    return {
        "messages": body["messages"],
        "tools": body.get("tools") or None,
        "model": body.get("model"),
        "body": body,
    }


class InProcessModel:
    """Calls `generate(request)` instead of an HTTP endpoint (sync ones run in a worker thread).

    Not `toolnexus.InProcessTransport`, the published blocking seam in `_blocking.py`."""

    transport_errors: tuple[type[BaseException], ...] = (Exception,)
    can_stream = False
    unwinds_promptly = False  # `generate` is the caller's code

    def __init__(self, generate: Callable[[dict[str, Any]], Any]) -> None:
        # A local model may compute for seconds: a sync one runs in a worker thread.
        self._generate = as_async(generate)

    async def post(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> tuple[int, Any, bytes]:
        request = generate_request(body)
        reply = await self._generate(request)
        return 200, to_completion(reply, str(request["model"])), b""

    async def open_stream(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> StreamBody:
        raise StreamingUnsupported(STREAM_UNSUPPORTED)

    async def aclose(self) -> None:
        return None
