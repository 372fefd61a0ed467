"""The OpenAI Responses wire: `POST …/responses` with input items, output items and their events.

The transcript (`RunResult.messages`) is a list of Responses input items, so it can be passed
back as `history` or to any Responses endpoint as `input`: the user prompt as
`{"role": "user", "content": ...}`, every output item of an answer as the endpoint returned it
(messages, `function_call`s and `reasoning` items, encrypted content included, carried back
verbatim on the next request), and one `{"type": "function_call_output", "call_id", "output"}`
per tool call. The system prompt travels as the body's `instructions` on every request.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from toolnexus.adapters import ToolCall, parse_arguments
from toolnexus.client._errors import ProviderError, is_error_payload
from toolnexus.client._model_settings import refuse_thinking_budget
from toolnexus.client._parts import PartPolicy, part_dict
from toolnexus.client._wire import (
    StreamAssembler,
    Turn,
    Wire,
    append_path,
    as_int,
    decode_event,
    endpoint_given,
    response_error,
    token_usage,
)
from toolnexus.types import ToolResult

if TYPE_CHECKING:
    from toolnexus.client._model_settings import ModelSettings
    from toolnexus.client._output import OutputSpec
    from toolnexus.toolkit import Toolkit

__all__ = ["RESPONSES", "ResponsesStream", "ResponsesWire", "responses_usage"]

STYLE = "openai-responses"


def responses_usage(raw: Any) -> dict[str, int] | None:
    """Normalise a Responses `usage` object (cached input and reasoning tokens kept)."""
    if not isinstance(raw, dict):
        return None
    usage = token_usage(raw.get("input_tokens"), raw.get("output_tokens"), raw.get("total_tokens"))
    details = raw.get("input_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        usage["cache_read_tokens"] = as_int(details["cached_tokens"])
    details = raw.get("output_tokens_details")
    if isinstance(details, dict) and details.get("reasoning_tokens") is not None:
        usage["reasoning_tokens"] = as_int(details["reasoning_tokens"])
    return usage


def _message_text(item: dict[str, Any], kind: str, key: str) -> str:
    """The `key` of every `kind` content part of an output message, joined."""
    out: list[str] = []
    for i, part in enumerate(item.get("content") or ()):
        if isinstance(part, dict) and part.get("type") == kind:
            value = part.get(key, "")
            if not isinstance(value, str):
                raise ValueError(f"content[{i}].{key} is not a string (got {type(value).__name__})")
            out.append(value)
    return "".join(out)


def _read_output(output: list[Any]) -> tuple[list[dict[str, Any]], str, str, list[ToolCall]]:
    """An answer's output items, its text, its refusal and its function calls."""
    items = [item for item in output if isinstance(item, dict)]
    text: list[str] = []
    refusal: list[str] = []
    calls: list[ToolCall] = []
    for item in items:
        kind = item.get("type")
        if kind == "message":
            text.append(_message_text(item, "output_text", "text"))
            refusal.append(_message_text(item, "refusal", "refusal"))
        elif kind == "function_call":
            call_id = str(item.get("call_id") or item.get("id") or f"call_{len(calls)}")
            args, error = parse_arguments(item.get("arguments"))
            calls.append(
                ToolCall(id=call_id, name=str(item.get("name") or ""), args=args, error=error)
            )
    return items, "".join(text), "".join(refusal), calls


def _item_reasoning(item: dict[str, Any]) -> str:
    """The shown text of one `reasoning` item: its summary, else its reasoning text."""
    for key, kind in (("summary", "summary_text"), ("content", "reasoning_text")):
        parts = item.get(key)
        if isinstance(parts, list):
            found = [
                p["text"]
                for p in parts
                if isinstance(p, dict) and p.get("type") == kind and isinstance(p.get("text"), str)
            ]
            if any(found):
                return "\n\n".join(found)
    return ""


def items_reasoning(items: list[dict[str, Any]]) -> tuple[str | None, bool]:
    """The reasoning text of an answer's items, and whether it reasoned only encrypted."""
    reasoning = [item for item in items if item.get("type") == "reasoning"]
    text = "\n\n".join(t for t in map(_item_reasoning, reasoning) if t)
    return text or None, bool(reasoning) and not text


def _turn(response: dict[str, Any], output: list[Any], usage: Any) -> Turn:
    items, text, refusal, calls = _read_output(output)
    reasoning, redacted = items_reasoning(items)
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        finish = str(reason or "incomplete")
    else:
        finish = "tool_calls" if calls else "stop"
    summary: dict[str, Any] = {"role": "assistant", "content": text}
    if refusal:
        summary["refusal"] = refusal
    return Turn(
        message=summary,
        text=text,
        calls=calls,
        usage=responses_usage(usage),
        finish_reason=finish,
        raw=None,
        refusal=refusal or None,
        items=items,
        reasoning=reasoning,
        reasoning_redacted=redacted,
    )


def _failure(status: int, response: Any, raw: str) -> ProviderError:
    """The error of a response whose `status` is `failed` (or that carries an `error`)."""
    error = response.get("error") if isinstance(response, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return ProviderError(status, raw[:2000], provider_message=str(message or "the response failed"))


def _event_error(status: int, data: str) -> ProviderError:
    """The error of an `error` stream event (its `message` is at the top level)."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        obj = None
    message = obj.get("message") if isinstance(obj, dict) else None
    if not isinstance(message, str) or not message:
        return ProviderError(status, data[:2000])
    return ProviderError(status, data[:2000], provider_message=message)


class ResponsesWire(Wire):
    """`POST …/responses` with a bearer key; the system prompt is the body's `instructions`."""

    style = STYLE
    provider = "openai"
    native_tool_search = True
    credential_header = "Authorization"
    credential_prefix = "Bearer "
    base_headers = MappingProxyType({"Content-Type": "application/json"})
    system_in_messages = False
    transcript_key = "input"
    tool_keys = MappingProxyType({"tool_choice": "auto"})
    stream_keys = MappingProxyType({"stream": True})

    def endpoint(self, base_url: str) -> str:
        if endpoint_given(base_url, STYLE):  # `…/v1/responses` as it is
            return append_path(base_url, "")
        return append_path(base_url, "/responses")

    def declarations(
        self, toolkit: Toolkit, strict: bool = False, defer: bool = False
    ) -> list[dict[str, Any]]:
        return toolkit.to_openai_responses(strict, defer=defer)

    def check_settings(self, settings: ModelSettings) -> None:
        refuse_thinking_budget(settings, self.style)

    def apply_settings(self, body: dict[str, Any], settings: ModelSettings) -> None:
        if "tools" in body:
            if settings.tool_choice is not None:
                name = settings.named_tool
                body["tool_choice"] = (
                    settings.tool_choice if name is None else {"type": "function", "name": name}
                )
            if settings.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = settings.parallel_tool_calls
        if settings.reasoning_effort is not None:
            body["reasoning"] = {"effort": settings.reasoning_effort}
        if settings.prompt_cache_key is not None:
            body["prompt_cache_key"] = settings.prompt_cache_key

    def preamble(self, system: str) -> dict[str, Any]:
        return {"instructions": system} if system else {}

    def output_keys(self, spec: OutputSpec) -> dict[str, Any]:
        native = spec.response_format()["json_schema"]
        return {"text": {"format": {"type": "json_schema", **native}}}

    def parse(self, status: int, data: Any, raw: bytes) -> Turn:
        output = data.get("output") if isinstance(data, dict) else None
        if isinstance(data, dict) and data.get("status") == "failed":
            raise _failure(status, data, raw.decode("utf-8", "replace"))
        if is_error_payload(data) or not isinstance(output, list):
            raise response_error(status, data, raw, "output items")
        assert isinstance(data, dict)
        turn = _turn(data, output, data.get("usage"))
        turn.raw = data
        return turn

    def stream(self, status: int) -> ResponsesStream:
        return ResponsesStream(status)

    def request_messages(
        self,
        system: str,
        messages: list[dict[str, Any]],
        parts: PartPolicy,
        seen: list[dict[str, Any]],
    ) -> tuple[str, list[dict[str, Any]]]:
        if not any(_needs_encoding(m) for m in messages):
            return system, messages
        return system, [_encoded(m, parts, seen) for m in messages]

    def tool_results(self, answered: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for call, result in answered:
            item: dict[str, Any] = {
                "type": "function_call_output",
                "call_id": call.id,
                "output": result.output,
            }
            if result.parts:
                item["parts"] = result.parts  # laid out as content on each request
            out.append(item)
        return out


def _needs_encoding(item: dict[str, Any]) -> bool:
    if item.get("type") == "function_call_output":
        return "parts" in item
    return item.get("role") in ("user", "system", "developer") and isinstance(
        item.get("content"), list
    )


def _input_block(block: dict[str, Any]) -> dict[str, Any]:
    # A text placeholder for a part the wire cannot take is a Chat Completions text block.
    if block.get("type") == "text":
        return {"type": "input_text", "text": block.get("text", "")}
    return block


def _encoded(item: dict[str, Any], policy: PartPolicy, seen: list[dict[str, Any]]) -> Any:
    """One transcript item as sent: content parts become Responses input content."""
    if not _needs_encoding(item):
        return item
    if item.get("type") == "function_call_output":
        sent = {k: v for k, v in item.items() if k != "parts"}
        content: list[dict[str, Any]] = []
        if isinstance(item.get("output"), str) and item["output"]:
            content.append({"type": "input_text", "text": item["output"]})
        for part in item.get("parts") or ():
            found = part_dict(part)
            if found is None or (found.get("type") == "text" and not found.get("text")):
                continue
            block = policy.block(found, STYLE, attached=False, seen=seen)
            content.append(_input_block(block))
        sent["output"] = content
        return sent
    attached = item.get("role") == "user"
    blocks: list[Any] = []
    for entry in item["content"]:
        found = part_dict(entry)
        if found is None:
            blocks.append(entry)  # already a Responses content block
        elif found.get("type") == "text" and not found.get("text"):
            continue
        else:
            blocks.append(_input_block(policy.block(found, STYLE, attached=attached, seen=seen)))
    return {**item, "content": blocks}


# -- OpenAI chat shapes in (for `translate`) --------------------------------------------------


def chat_to_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat Completions messages as Responses input items (content parts are encoded later).

    An assistant message's tool calls become `function_call` items, a `tool` message a
    `function_call_output`; system, developer and user messages keep their role.
    """
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            item: dict[str, Any] = {
                "type": "function_call_output",
                "call_id": str(message.get("tool_call_id") or ""),
                "output": content if isinstance(content, str) else _chat_text(content),
            }
            if message.get("parts"):
                item["parts"] = message["parts"]
            items.append(item)
        elif role == "assistant":
            text = _chat_text(content)
            if text:
                items.append({"role": "assistant", "content": text})
            for index, call in enumerate(message.get("tool_calls") or ()):
                fn = call.get("function") or {}
                arguments = fn.get("arguments")
                items.append(
                    {
                        "type": "function_call",
                        "call_id": str(call.get("id") or f"call_{index}"),
                        "name": str(fn.get("name") or ""),
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments or {}, separators=(",", ":")),
                    }
                )
        elif isinstance(content, list):
            items.append({**message, "content": [_chat_block(b) for b in content]})
        else:
            items.append(dict(message))
    return items


def _chat_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b.get("text") or "")
            for b in content
            if isinstance(b, dict) and b.get("type") in ("text", "input_text", "output_text")
        )
    return ""


def _chat_block(block: Any) -> Any:
    """A Chat Completions content block as Responses input content (part dicts pass through)."""
    if not isinstance(block, dict) or part_dict(block) is not None:
        return block
    kind = block.get("type")
    if kind == "text":
        return {"type": "input_text", "text": block.get("text", "")}
    if kind == "image_url":
        url = block.get("image_url")
        detail = url.get("detail") if isinstance(url, dict) else None
        return {
            "type": "input_image",
            "image_url": url.get("url") if isinstance(url, dict) else url,
            "detail": detail or "auto",  # required by the Responses request type
        }
    if kind == "file" and isinstance(block.get("file"), dict):
        return {"type": "input_file", **block["file"]}
    return block


def chat_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat Completions tool declarations made flat (flat ones pass through)."""
    out = []
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict):
            # Responses makes a function strict unless told (the request type requires the
            # key); a Chat Completions declaration without it is not.
            out.append({"type": "function", **fn, "strict": bool(fn.get("strict", False))})
        else:
            out.append(tool)
    return out


def chat_tool_choice(choice: Any) -> Any:
    """A Chat Completions `tool_choice` in the Responses shape."""
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


class ResponsesStream(StreamAssembler):
    """Assembles one streamed answer from `response.*` events.

    Output items are kept by `output_index` as they are added, grown by their deltas and replaced
    by their `output_item.done` form; the final `response.completed` (or `incomplete`) carries
    the usage and, when it lists them, the authoritative items.
    """

    __slots__ = ("_items", "_response", "_shown")

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self._items: dict[int, dict[str, Any]] = {}
        self._response: dict[str, Any] = {}
        self._shown: set[int] = set()  # reasoning items whose text streamed

    def feed(self, event: str, data: str) -> str | None:
        """Take one SSE event; return its text delta, if any."""
        try:
            obj = decode_event(self._status, data)
        except ProviderError:
            raise _event_error(self._status, data) from None
        if not isinstance(obj, dict):
            return None
        kind = obj.get("type") or event
        if kind == "response.output_text.delta":
            delta = obj.get("delta")
            if not isinstance(delta, str) or not delta:
                return None
            self._grow(obj, "output_text", "text", delta)
            return delta
        if kind == "response.refusal.delta":
            delta = obj.get("delta")
            if isinstance(delta, str) and delta:
                self._grow(obj, "refusal", "refusal", delta)
                self.add_refusal(delta)
        elif kind == "response.function_call_arguments.delta":
            item = self._items.get(_index(obj))
            delta = obj.get("delta")
            if item is not None and isinstance(delta, str):
                item["arguments"] = str(item.get("arguments") or "") + delta
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            delta = obj.get("delta")
            if isinstance(delta, str) and delta:
                self._shown.add(_index(obj))
                self.add_reasoning(delta)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = obj.get("item")
            if isinstance(item, dict):
                index = _index(obj)
                self._items[index] = dict(item)
                if (
                    kind == "response.output_item.done"
                    and item.get("type") == "reasoning"
                    and index not in self._shown
                    and not _item_reasoning(item)
                ):
                    self.add_redacted()  # reasoning that came only encrypted (or not at all)
        elif kind in ("response.completed", "response.incomplete"):
            response = obj.get("response")
            self._response = response if isinstance(response, dict) else {}
            usage = responses_usage(self._response.get("usage"))
            if usage is not None:
                self.usage.append(usage)
            self.finish_reason = "stop"
            self.done = True
        elif kind == "response.failed":
            raise _failure(self._status, obj.get("response"), data)
        return None

    def _grow(self, obj: dict[str, Any], kind: str, key: str, delta: str) -> None:
        """Append a delta to the content part it belongs to (made when not announced)."""
        item = self._items.setdefault(
            _index(obj), {"type": "message", "role": "assistant", "content": []}
        )
        content = item.setdefault("content", [])
        position = obj.get("content_index", 0)
        while len(content) <= position:
            content.append({"type": kind, key: ""})
        part = content[position]
        part[key] = str(part.get(key) or "") + delta

    def turn(self) -> Turn:
        output = self._response.get("output")
        if not isinstance(output, list) or not output:
            output = [self._items[i] for i in sorted(self._items)]
        turn = _turn(self._response, output, None)
        turn.usage = self.usage_total()
        if turn.refusal is None:
            turn.refusal = self.refusal()
        return self.reasoned(turn)


def _index(obj: dict[str, Any]) -> int:
    index = obj.get("output_index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"a stream event has an output_index that is not a number: {index!r}")
    return index


RESPONSES = ResponsesWire()
