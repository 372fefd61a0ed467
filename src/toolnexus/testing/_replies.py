"""Model answers rendered as each wire's providers send them: whole JSON bodies and SSE events.

The test models of `toolnexus.testing` (and the project's own fake HTTP provider) describe an
answer once, as a `ReplySpec`, and get it in the shape of the wire that asked: OpenAI chat
completions, Anthropic messages or OpenAI responses, whole or as server-sent events.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReplyCall", "ReplySpec", "pieces", "render_events", "render_json"]


@dataclass(frozen=True, slots=True)
class ReplyCall:
    """One tool call of an answer: `args` as a dict is JSON-encoded, a str is sent as is."""

    id: str
    name: str
    args: Any = field(default_factory=dict)

    @property
    def arguments(self) -> str:
        """The arguments as the JSON text the OpenAI wires carry."""
        if isinstance(self.args, str):
            return self.args
        return json.dumps(self.args, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class ReplySpec:
    """One answer, whatever the wire.

    `thinking` holds Anthropic blocks sent before the text (`thinking`, `redacted_thinking`);
    `reasoning` holds Responses reasoning items sent first, verbatim. `usage` is
    `(prompt, completion)` tokens, a provider usage dict sent as is, or `None` for none.
    `stop_reason` overrides the finish reason (on Responses, it makes the answer incomplete
    for that reason). `chunk_size` is the characters per streamed delta (0: about three).
    """

    text: str = ""
    calls: Sequence[ReplyCall] = ()
    refusal: str = ""
    thinking: Sequence[dict[str, Any]] = ()
    reasoning: Sequence[dict[str, Any]] = ()
    usage: tuple[int, int] | dict[str, Any] | None = (10, 5)
    stop_reason: str | None = None
    chunk_size: int = 0
    model: str = "fake-model"
    seq: int = 0  # numbers the ids of the answer's envelope
    include_usage: bool = True  # OpenAI chat streams send usage only when asked


def pieces(content: str, size: int) -> list[str]:
    """`content` cut into deltas of `size` characters (`size <= 0`: about three)."""
    if not content:
        return []
    if size <= 0:
        size = max(1, -(-len(content) // 3))
    return [content[i : i + size] for i in range(0, len(content), size)]


def render_json(style: str, spec: ReplySpec) -> dict[str, Any]:
    """The whole (non-streamed) response body of `spec` on the `style` wire."""
    return _RENDERERS[style][0](spec)


def render_events(style: str, spec: ReplySpec) -> list[str]:
    """The SSE events of `spec` streamed on the `style` wire, each without its final blank line."""
    return _RENDERERS[style][1](spec)


def _dumps(value: Any) -> str:
    return json.dumps(value)


def _pair(usage: Any) -> tuple[int, int] | None:
    return usage if isinstance(usage, tuple) else None


# -- OpenAI chat completions ----------------------------------------------------------------------


def _openai_usage(spec: ReplySpec) -> dict[str, Any] | None:
    pair = _pair(spec.usage)
    if pair is not None:
        return {"prompt_tokens": pair[0], "completion_tokens": pair[1], "total_tokens": sum(pair)}
    return spec.usage if isinstance(spec.usage, dict) else None


def _openai_finish(spec: ReplySpec) -> str:
    return spec.stop_reason or ("tool_calls" if spec.calls else "stop")


def _openai_json(spec: ReplySpec) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": spec.text if (spec.text or not (spec.calls or spec.refusal)) else None,
    }
    if spec.refusal:
        message["refusal"] = spec.refusal
    if spec.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in spec.calls
        ]
    out: dict[str, Any] = {
        "id": f"chatcmpl-{spec.seq}",
        "object": "chat.completion",
        "created": 0,
        "model": spec.model,
        "choices": [{"index": 0, "message": message, "finish_reason": _openai_finish(spec)}],
    }
    usage = _openai_usage(spec)
    if usage is not None:
        out["usage"] = usage
    return out


def _openai_events(spec: ReplySpec) -> list[str]:
    base = {"id": f"chatcmpl-{spec.seq}", "object": "chat.completion.chunk", "created": 0}
    base["model"] = spec.model

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return "data: " + _dumps({**base, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"refusal": p}) for p in pieces(spec.refusal, spec.chunk_size)]
    events += [chunk({"content": p}) for p in pieces(spec.text, spec.chunk_size)]
    for i, c in enumerate(spec.calls):
        head = {"index": i, "id": c.id, "type": "function"}
        head["function"] = {"name": c.name, "arguments": ""}
        events.append(chunk({"tool_calls": [head]}))
        for piece in pieces(c.arguments, 0):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    events.append(chunk({}, _openai_finish(spec)))
    usage = _openai_usage(spec)
    if usage is not None and spec.include_usage:
        events.append("data: " + _dumps({**base, "choices": [], "usage": usage}))
    events.append("data: [DONE]")
    return events


# -- Anthropic messages ---------------------------------------------------------------------------


def _anthropic_usage(spec: ReplySpec) -> dict[str, Any] | None:
    pair = _pair(spec.usage)
    if pair is not None:
        return {"input_tokens": pair[0], "output_tokens": pair[1]}
    return spec.usage if isinstance(spec.usage, dict) else None


def _anthropic_stop(spec: ReplySpec) -> str:
    if spec.stop_reason:
        return spec.stop_reason
    return "refusal" if spec.refusal else ("tool_use" if spec.calls else "end_turn")


def _anthropic_text(spec: ReplySpec) -> str:
    return spec.text or spec.refusal


def _anthropic_json(spec: ReplySpec) -> dict[str, Any]:
    content: list[dict[str, Any]] = [dict(b) for b in spec.thinking]
    if _anthropic_text(spec):
        content.append({"type": "text", "text": _anthropic_text(spec)})
    for c in spec.calls:
        content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.args})
    out: dict[str, Any] = {
        "id": f"msg_{spec.seq}",
        "type": "message",
        "role": "assistant",
        "model": spec.model,
        "content": content,
        "stop_reason": _anthropic_stop(spec),
        "stop_sequence": None,
    }
    usage = _anthropic_usage(spec)
    if usage is not None:
        out["usage"] = usage
    return out


def _anthropic_events(spec: ReplySpec) -> list[str]:
    def ev(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: " + _dumps({"type": name, **data})

    def block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        events.append(ev("content_block_start", {"index": index, "content_block": start}))
        events.extend(ev("content_block_delta", {"index": index, "delta": d}) for d in deltas)
        events.append(ev("content_block_stop", {"index": index}))

    usage = _anthropic_usage(spec)
    message: dict[str, Any] = {
        "id": f"msg_{spec.seq}",
        "type": "message",
        "role": "assistant",
        "model": spec.model,
        "content": [],
        "stop_reason": None,
    }
    if usage is not None:
        message["usage"] = {**usage, "output_tokens": 0}
    events = [ev("message_start", {"message": message})]
    index = 0
    for thought in spec.thinking:
        if thought.get("type") == "thinking":
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in pieces(thought.get("thinking", ""), 0)
            ]
            deltas.append({"type": "signature_delta", "signature": thought.get("signature", "")})
            block(index, {"type": "thinking", "thinking": "", "signature": ""}, deltas)
        else:
            block(index, dict(thought), [])
        index += 1
    if _anthropic_text(spec):
        deltas = [
            {"type": "text_delta", "text": p}
            for p in pieces(_anthropic_text(spec), spec.chunk_size)
        ]
        block(index, {"type": "text", "text": ""}, deltas)
        index += 1
    for c in spec.calls:
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(c.arguments, 0)]
        block(index, {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}, deltas)
        index += 1
    delta: dict[str, Any] = {"delta": {"stop_reason": _anthropic_stop(spec), "stop_sequence": None}}
    if usage is not None:
        delta["usage"] = {"output_tokens": usage.get("output_tokens", 0)}
    events.append(ev("message_delta", delta))
    events.append(ev("message_stop", {}))
    return events


# -- OpenAI responses -----------------------------------------------------------------------------


def _responses_usage(spec: ReplySpec) -> dict[str, Any] | None:
    pair = _pair(spec.usage)
    if pair is not None:
        return {
            "input_tokens": pair[0],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": pair[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": sum(pair),
        }
    return spec.usage if isinstance(spec.usage, dict) else None


def _responses_message(spec: ReplySpec, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{spec.seq}",
        "status": "completed",
        "role": "assistant",
        "content": parts,
    }


def _responses_parts(spec: ReplySpec) -> list[dict[str, Any]]:
    if spec.refusal:
        return [{"type": "refusal", "refusal": spec.refusal}]
    if spec.text:
        return [{"type": "output_text", "text": spec.text, "annotations": []}]
    return []


def _responses_call(spec: ReplySpec, i: int, c: ReplyCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{spec.seq}_{i}",
        "call_id": c.id,
        "name": c.name,
        "arguments": c.arguments,
        "status": "completed",
    }


def _responses_output(spec: ReplySpec) -> list[dict[str, Any]]:
    output = [dict(item) for item in spec.reasoning]
    parts = _responses_parts(spec)
    if parts:
        output.append(_responses_message(spec, parts))
    output += [_responses_call(spec, i, c) for i, c in enumerate(spec.calls)]
    return output


def _responses_json(spec: ReplySpec) -> dict[str, Any]:
    incomplete = spec.stop_reason is not None
    out: dict[str, Any] = {
        "id": f"resp_{spec.seq}",
        "object": "response",
        "created_at": 0,
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": spec.stop_reason} if incomplete else None,
        "model": spec.model,
        "output": _responses_output(spec),
    }
    usage = _responses_usage(spec)
    if usage is not None:
        out["usage"] = usage
    return out


def _responses_events(spec: ReplySpec) -> list[str]:
    events: list[str] = []

    def ev(name: str, **data: Any) -> None:
        payload = {"type": name, "sequence_number": len(events), **data}
        events.append(f"event: {name}\ndata: " + _dumps(payload))

    final = _responses_json(spec)
    started = {**final, "status": "in_progress", "output": [], "incomplete_details": None}
    started.pop("usage", None)
    ev("response.created", response=started)
    ev("response.in_progress", response=started)
    for index, item in enumerate(final["output"]):
        kind = item["type"]
        where = {"output_index": index}
        if kind == "message":
            ev("response.output_item.added", **where, item={**item, "content": []})
            for position, part in enumerate(item["content"]):
                at = {"item_id": item["id"], **where, "content_index": position}
                text_key = "refusal" if part["type"] == "refusal" else "text"
                delta_name = "refusal" if part["type"] == "refusal" else "output_text"
                ev("response.content_part.added", **at, part={**part, text_key: ""})
                for piece in pieces(part[text_key], spec.chunk_size):
                    ev(f"response.{delta_name}.delta", **at, delta=piece)
                ev(f"response.{delta_name}.done", **at, **{text_key: part[text_key]})
                ev("response.content_part.done", **at, part=part)
        elif kind == "function_call":
            ev("response.output_item.added", **where, item={**item, "arguments": ""})
            at = {"item_id": item["id"], **where}
            for piece in pieces(item["arguments"], 0):
                ev("response.function_call_arguments.delta", **at, delta=piece)
            ev("response.function_call_arguments.done", **at, arguments=item["arguments"])
        else:
            ev("response.output_item.added", **where, item=item)
        ev("response.output_item.done", **where, item=item)
    ev(
        "response.incomplete" if final["status"] == "incomplete" else "response.completed",
        response=final,
    )
    return events


_RENDERERS: dict[
    str, tuple[Callable[[ReplySpec], dict[str, Any]], Callable[[ReplySpec], list[str]]]
] = {
    "openai": (_openai_json, _openai_events),
    "anthropic": (_anthropic_json, _anthropic_events),
    "openai-responses": (_responses_json, _responses_events),
}
