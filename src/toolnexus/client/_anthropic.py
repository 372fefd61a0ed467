"""The Anthropic messages wire: endpoint, headers, body, response and stream parsing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from toolnexus._json import compact_json
from toolnexus.adapters import (
    ToolCall,
    anthropic_tool_result,
    parse_anthropic_tool_calls,
    parse_arguments,
)
from toolnexus.client._errors import is_error_payload
from toolnexus.client._openai import content_text
from toolnexus.client._parts import (
    PartPolicy,
    anthropic_request_messages,
    anthropic_translated_content,
    anthropic_translated_result,
)
from toolnexus.client._results import TranslatedToolCall
from toolnexus.client._wire import (
    StreamAssembler,
    Turn,
    Wire,
    append_path,
    as_int,
    decode_event,
    endpoint_given,
    response_error,
    texts,
    token_usage,
    url_path,
)
from toolnexus.errors import ConfigError
from toolnexus.types import ToolResult

if TYPE_CHECKING:
    from toolnexus.client._model_settings import ModelSettings
    from toolnexus.toolkit import Toolkit

__all__ = [
    "ANTHROPIC",
    "ANTHROPIC_VERSION",
    "AnthropicStream",
    "AnthropicWire",
    "anthropic_calls",
    "anthropic_usage",
    "to_anthropic_messages",
    "to_anthropic_tool_choice",
    "to_anthropic_tools",
]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
# A prompt-cache breakpoint (Anthropic's prompt caching: five-minute ephemeral cache).
_BREAKPOINT = MappingProxyType({"type": "ephemeral"})
MAX_BREAKPOINTS = 4  # per request (Anthropic's prompt caching)
# Content blocks that take no `cache_control`.
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})
_CHOICES = MappingProxyType({"auto": "auto", "required": "any", "none": "none"})


def anthropic_usage(raw: Any) -> dict[str, int] | None:
    """Normalise an Anthropic `usage` object (cache read/creation counts kept when reported)."""
    if not isinstance(raw, dict):
        return None
    usage = token_usage(raw.get("input_tokens"), raw.get("output_tokens"))
    if raw.get("cache_read_input_tokens") is not None:
        usage["cache_read_tokens"] = as_int(raw["cache_read_input_tokens"])
    if raw.get("cache_creation_input_tokens") is not None:
        usage["cache_write_tokens"] = as_int(raw["cache_creation_input_tokens"])
    return usage


def blocks_text(content: Sequence[Any]) -> str:
    return texts(content, "content")


def blocks_reasoning(content: Sequence[Any]) -> tuple[str | None, bool]:
    """The text of a turn's `thinking` blocks, and whether it reasoned only redacted."""
    shown: list[str] = []
    hidden = False
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "thinking":
            thought = block.get("thinking")
            if isinstance(thought, str) and thought:
                shown.append(thought)
            else:  # thinking shown as omitted: only its signature came
                hidden = True
        elif block.get("type") == "redacted_thinking":
            hidden = True
    text = "\n\n".join(shown)
    return text or None, hidden and not text


class AnthropicWire(Wire):
    """`POST …/v1/messages` with `x-api-key`; the system prompt travels as the body's `system`."""

    style = "anthropic"
    provider = "anthropic"
    native_tool_search = True
    credential_header = "x-api-key"
    credential_prefix = ""
    base_headers = MappingProxyType(
        {"anthropic-version": ANTHROPIC_VERSION, "Content-Type": "application/json"}
    )
    system_in_messages = False
    tool_keys: Mapping[str, Any] = MappingProxyType({})
    stream_keys = MappingProxyType({"stream": True})

    def endpoint(self, base_url: str) -> str:
        if endpoint_given(base_url, "anthropic"):  # `…/v1/messages` as it is
            return append_path(base_url, "")
        path = "/messages" if url_path(base_url).endswith("/v1") else "/v1/messages"
        return append_path(base_url, path)

    def declarations(
        self, toolkit: Toolkit, strict: bool = False, defer: bool = False
    ) -> list[dict[str, Any]]:
        return toolkit.to_anthropic(strict, defer=defer)

    def check_settings(self, settings: ModelSettings) -> None:
        if settings.reasoning_effort is not None:
            raise ConfigError(
                "reasoning_effort is OpenAI's; the anthropic wire sets thinking_budget "
                "(tokens of extended thinking, >= 1024) instead"
            )
        if settings.prompt_cache_key is not None:
            raise ConfigError(
                "prompt_cache_key is OpenAI's; the anthropic wire caches with prompt_cache=True "
                "(cache_control breakpoints) instead"
            )
        if settings.thinking_budget is not None and settings.forced_tool:
            raise ConfigError(
                "Anthropic's extended thinking does not allow a forced tool_choice "
                f"({settings.tool_choice!r}): use tool_choice 'auto' or 'none' with "
                "thinking_budget"
            )

    def apply_settings(self, body: dict[str, Any], settings: ModelSettings) -> None:
        if "tools" in body:
            choice = _tool_choice(settings)
            if choice is not None:
                body["tool_choice"] = choice
        if settings.thinking_budget is not None:
            budget = settings.thinking_budget
            # `budget_tokens` must be below `max_tokens` (request_params may still set it).
            if body.get("max_tokens", 0) <= budget:
                body["max_tokens"] = budget + DEFAULT_MAX_TOKENS
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if settings.prompt_cache:
            _place_breakpoints(body)

    def preamble(self, system: str) -> dict[str, Any]:
        return {"max_tokens": DEFAULT_MAX_TOKENS, "system": system}

    def parse(self, status: int, data: Any, raw: bytes) -> Turn:
        content = data.get("content") if isinstance(data, dict) else None
        if is_error_payload(data) or not isinstance(content, list):
            raise response_error(status, data, raw, "content blocks")
        reasoning, redacted = blocks_reasoning(content)
        calls = parse_anthropic_tool_calls([b for b in content if isinstance(b, dict)])
        return Turn(
            message={"role": "assistant", "content": _object_inputs(content, calls)},
            text=blocks_text(content),
            calls=calls,
            usage=anthropic_usage(data.get("usage")),
            finish_reason=data.get("stop_reason"),
            raw=data,
            refusal=(blocks_text(content) or "refused")
            if data.get("stop_reason") == "refusal"
            else None,
            reasoning=reasoning,
            reasoning_redacted=redacted,
        )

    def stream(self, status: int) -> AnthropicStream:
        return AnthropicStream(status)

    def request_messages(
        self,
        system: str,
        messages: list[dict[str, Any]],
        parts: PartPolicy,
        seen: list[dict[str, Any]],
    ) -> tuple[str, list[dict[str, Any]]]:
        # System-role messages (an OpenAI-shaped history, a hook) belong in the body's `system`.
        sent, moved = anthropic_request_messages(messages, parts, seen)
        if moved:
            system = "\n\n".join(t for t in (system, *moved) if t)
        return system, sent

    def tool_results(self, answered: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        if not answered:
            return []
        blocks = [anthropic_tool_result(call.id, result) for call, result in answered]
        return [{"role": "user", "content": blocks}]


def _tool_choice(settings: ModelSettings) -> dict[str, Any] | None:
    """The `tool_choice` object: the choice, with `disable_parallel_tool_use` when set."""
    choice = settings.tool_choice
    parallel = settings.parallel_tool_calls
    if choice is None and parallel is None:
        return None
    name = settings.named_tool
    if name is not None:
        mapped: dict[str, Any] = {"type": "tool", "name": name}
    else:
        mapped = {"type": _CHOICES[choice or "auto"]}
    if parallel is not None and mapped["type"] != "none":  # "none" takes no other field
        mapped["disable_parallel_tool_use"] = not parallel
    return mapped


def _cached_block(block: Any) -> Any:
    """A copy of `block` ending a cached prefix; a block that cannot carry one, as it is."""
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    if not isinstance(block, dict) or block.get("type") in _UNCACHEABLE:
        return block
    return {**block, "cache_control": dict(_BREAKPOINT)}


def _breakpoints_in(body: dict[str, Any]) -> int:
    """The cache breakpoints `body` already carries (a history's or a provider tool's own)."""
    blocks: list[Any] = []
    for key in ("system", "tools"):
        if isinstance(body.get(key), list):
            blocks += body[key]
    for message in body.get("messages") or ():
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            blocks += message["content"]
    return sum(1 for b in blocks if isinstance(b, dict) and b.get("cache_control") is not None)


def _place_breakpoints(body: dict[str, Any]) -> None:
    """Cache breakpoints on the system prompt, the last tool and the last message, in that
    order while Anthropic's limit of 4 per request allows, so the next request of the run, or
    of the conversation, reads the prefix this one wrote. The body's lists are replaced, never
    changed: they are the transcript's and the toolkit's."""
    room = MAX_BREAKPOINTS - _breakpoints_in(body)
    system = body.get("system")
    if room > 0 and isinstance(system, str) and system:
        body["system"] = [_cached_block(system)]
        room -= 1
    tools = body.get("tools")
    if room > 0 and tools and not isinstance(tools[-1].get("cache_control"), dict):
        body["tools"] = [*tools[:-1], _cached_block(tools[-1])]
        room -= 1
    messages = body.get("messages")
    if room > 0 and messages and isinstance(messages[-1], dict):
        last = messages[-1]
        content = last.get("content")
        if isinstance(content, str) and content:
            content = [content]
        if isinstance(content, list) and content:
            cached = {**last, "content": [*content[:-1], _cached_block(content[-1])]}
            body["messages"] = [*messages[:-1], cached]


def _object_inputs(content: list[Any], calls: list[ToolCall]) -> list[Any]:
    """`content` with every `tool_use` input an object, as the next request must send it: one
    that is not (a gateway's raw string) becomes the arguments the call ran with (`{}` when
    broken), as a streamed turn records it."""
    args = iter(calls)
    out: list[Any] = []
    changed = False
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            call = next(args)
            if not isinstance(block.get("input"), dict):
                block, changed = {**block, "input": call.args}, True
        out.append(block)
    return out if changed else content


class AnthropicStream(StreamAssembler):
    """Assembles one streamed turn from message/content-block events, thinking blocks included."""

    __slots__ = ("_blocks", "_json", "_usage")

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        # The message's usage as reported so far: `message_delta.usage` fields are running
        # totals, so each one present replaces the value before it (client.md §6).
        self._usage: dict[str, Any] | None = None

    def feed(self, event: str, data: str) -> str | None:
        """Take one SSE event; return its text delta, if any."""
        obj = decode_event(self._status, data)
        if not isinstance(obj, dict):
            return None
        kind = obj.get("type") or event
        if kind == "content_block_delta":
            block = self._blocks.get(obj.get("index", -1))
            delta = obj.get("delta")
            if block is None or not isinstance(delta, dict):
                return None
            dtype = delta.get("type")
            if dtype == "text_delta":
                text = delta.get("text") or ""
                block["text"] = block.get("text", "") + text
                return text or None
            if dtype == "input_json_delta":
                self._json.setdefault(obj["index"], []).append(delta.get("partial_json") or "")
            elif dtype == "thinking_delta":
                thought = delta.get("thinking") or ""
                block["thinking"] = block.get("thinking", "") + thought
                if isinstance(thought, str):
                    self.add_reasoning(thought)
            elif dtype == "signature_delta":
                block["signature"] = block.get("signature", "") + (delta.get("signature") or "")
            elif dtype == "citations_delta":
                block.setdefault("citations", []).append(delta.get("citation"))
        elif kind == "content_block_start":
            block = obj.get("content_block")
            if isinstance(block, dict):
                self._blocks[obj.get("index", len(self._blocks))] = dict(block)
                if block.get("type") == "redacted_thinking":
                    self.add_redacted()
        elif kind == "message_start":
            message = obj.get("message")
            self._take_usage(message.get("usage") if isinstance(message, dict) else None)
        elif kind == "message_delta":
            delta = obj.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self.finish_reason = delta["stop_reason"]
            self._take_usage(obj.get("usage"))
        elif kind == "message_stop":
            self.done = True
        return None

    def _take_usage(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        merged = {**(self._usage or {}), **{k: v for k, v in raw.items() if v is not None}}
        self._usage = merged
        usage = anthropic_usage(merged)
        assert usage is not None
        self.usage[:] = [usage]  # one usage: the message's latest figures

    def turn(self) -> Turn:
        content: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            parts = self._json.get(index)
            if block.get("type") == "tool_use":
                args, error = parse_arguments(
                    "".join(parts) if parts is not None else block.get("input")
                )
                # The transcript needs an object; broken arguments are reported to the model.
                block["input"] = args
                call_id, name = str(block.get("id") or ""), str(block.get("name") or "")
                calls.append(ToolCall(id=call_id, name=name, args=args, error=error))
            elif parts is not None:  # a server tool's input (web search, code execution, ...)
                block["input"], _ = parse_arguments("".join(parts))
            content.append(block)
        if self.finish_reason != "tool_use":
            calls = []  # tool-use blocks count only when the model stopped to use them
        message = {"role": "assistant", "content": content}
        text = blocks_text(content)
        refusal = (text or "refused") if self.finish_reason == "refusal" else None
        return self.assembled(message, text, calls, refusal, blocks_reasoning(content))


ANTHROPIC = AnthropicWire()


# -- OpenAI chat shapes to Anthropic's (`translate`) ------------------------------------------


def _as_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, (str, list)):
        return content_text(content)
    return compact_json(content)


def to_anthropic_messages(
    messages: Sequence[dict[str, Any]],
    parts: PartPolicy | None = None,
    seen: list[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """OpenAI messages → Anthropic messages, plus the joined text of system/developer messages.

    Images, documents and audio (part dicts or OpenAI's own blocks) become Anthropic blocks in
    place; what Anthropic cannot take becomes a placeholder under `parts`' rules."""
    policy = parts if parts is not None else PartPolicy()
    seen = seen if seen is not None else []
    out: list[dict[str, Any]] = []
    system_parts: list[str] = []
    results: list[dict[str, Any]] | None = None  # the open run of consecutive tool results
    for message in messages:
        role = message.get("role")
        if role in ("tool", "function"):
            text = _as_text(message.get("content"))
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id", ""),
                "content": anthropic_translated_result(message, text, policy, seen),
            }
            if results is None:
                results = []
                out.append({"role": "user", "content": results})
            results.append(block)
            continue
        results = None
        if role in ("system", "developer"):
            text = _as_text(message.get("content"))
            if text:
                system_parts.append(text)
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            text = _as_text(message.get("content"))
            if text:
                blocks.append({"type": "text", "text": text})
            for call in message.get("tool_calls") or ():
                fn = call.get("function") or {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id", ""),
                        "name": fn.get("name", ""),
                        "input": parse_arguments(fn.get("arguments"))[0],  # unparseable ⇒ {}
                    }
                )
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        else:
            content = message.get("content")
            if isinstance(content, list):
                content = anthropic_translated_content(content, policy, seen)
            out.append(
                {
                    "role": "user",
                    "content": content if isinstance(content, list) else _as_text(content),
                }
            )
    return out, "\n\n".join(system_parts)


def to_anthropic_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        fn = tool.get("function")
        if not isinstance(fn, dict):
            out.append(dict(tool))  # already Anthropic-shaped
            continue
        entry: dict[str, Any] = {"name": fn.get("name", "")}
        if fn.get("description"):
            entry["description"] = fn["description"]
        entry["input_schema"] = fn.get("parameters") or {"type": "object", "properties": {}}
        out.append(entry)
    return out


def to_anthropic_tool_choice(choice: Any) -> dict[str, Any] | None:
    if choice in ("required", "any"):
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if isinstance(choice, dict) and choice.get("type") == "function":
        fn = choice.get("function")
        if isinstance(fn, dict) and fn.get("name"):
            return {"type": "tool", "name": fn["name"]}
    return None


def anthropic_calls(content: list[Any]) -> list[TranslatedToolCall]:
    return [
        TranslatedToolCall(
            id=str(block.get("id") or ""),
            name=str(block.get("name") or ""),
            arguments=compact_json(block.get("input") if block.get("input") is not None else {}),
        )
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
