"""The Anthropic messages wire: endpoint, headers, body, response and stream parsing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolnexus.adapters import (
    ToolCall,
    anthropic_tool_result,
    parse_anthropic_tool_calls,
    parse_arguments,
)
from toolnexus.client._errors import ProviderError, error_text
from toolnexus.client._wire import Turn, append_path, as_int, decode_event, url_path
from toolnexus.types import ToolResult

if TYPE_CHECKING:
    from toolnexus.toolkit import Toolkit

__all__ = ["ANTHROPIC", "ANTHROPIC_VERSION", "AnthropicStream", "AnthropicWire", "anthropic_usage"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096


def anthropic_usage(raw: Any) -> dict[str, int] | None:
    """Normalise an Anthropic `usage` object (cache read/creation counts kept when reported)."""
    if not isinstance(raw, dict):
        return None
    prompt = as_int(raw.get("input_tokens"))
    completion = as_int(raw.get("output_tokens"))
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if raw.get("cache_read_input_tokens") is not None:
        usage["cache_read_tokens"] = as_int(raw["cache_read_input_tokens"])
    if raw.get("cache_creation_input_tokens") is not None:
        usage["cache_write_tokens"] = as_int(raw["cache_creation_input_tokens"])
    return usage


def blocks_text(content: Sequence[Any]) -> str:
    return "".join(
        b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


class AnthropicWire:
    """`POST …/v1/messages` with `x-api-key`; the system prompt travels as the body's `system`."""

    style = "anthropic"

    def endpoint(self, base_url: str) -> str:
        path = "/messages" if url_path(base_url).endswith("/v1") else "/v1/messages"
        return append_path(base_url, path)

    def auth_headers(self, key: str) -> dict[str, str]:
        return {
            "x-api-key": key,
            "anthropic-version": ANTHROPIC_VERSION,
            "Content-Type": "application/json",
        }

    def declarations(self, toolkit: Toolkit) -> list[dict[str, Any]]:
        return toolkit.to_anthropic()

    def start_messages(
        self, system: str, history: Sequence[dict[str, Any]] | None, prompt: str
    ) -> list[dict[str, Any]]:
        messages = list(history) if history else []
        messages.append({"role": "user", "content": prompt})
        return messages

    def body(
        self,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        stream: bool,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": DEFAULT_MAX_TOKENS,
            "system": system,
            "messages": messages,
        }
        if tools:
            body["tools"] = tools
        if stream:
            body["stream"] = True
        return body

    def parse(self, status: int, data: Any, raw: bytes) -> Turn:
        content = data.get("content") if isinstance(data, dict) else None
        found = error_text(data)
        if not isinstance(content, list) or found is not None:
            raise ProviderError(
                status,
                raw.decode("utf-8", "replace"),
                found if found is not None else "response has no content blocks",
            )
        return Turn(
            message={"role": "assistant", "content": content},
            text=blocks_text(content),
            calls=parse_anthropic_tool_calls([b for b in content if isinstance(b, dict)]),
            usage=anthropic_usage(data.get("usage")),
            finish_reason=data.get("stop_reason"),
            raw=data,
        )

    def stream(self, status: int) -> AnthropicStream:
        return AnthropicStream(status)

    def tool_results(self, pairs: list[tuple[str, ToolResult]]) -> list[dict[str, Any]]:
        if not pairs:
            return []
        blocks = [anthropic_tool_result(call_id, result) for call_id, result in pairs]
        return [{"role": "user", "content": blocks}]


class AnthropicStream:
    """Assembles one streamed turn from message/content-block events, thinking blocks included."""

    __slots__ = ("_blocks", "_json", "_status", "done", "finish_reason", "usage")

    def __init__(self, status: int) -> None:
        self._status = status
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self.usage: list[dict[str, int]] = []
        self.finish_reason: str | None = None
        self.done = False

    def feed(self, event: str, data: str) -> str | None:
        """Take one SSE event; return its text delta, if any."""
        obj = decode_event(self._status, data)
        if not isinstance(obj, dict):
            return None
        kind = obj.get("type") or event
        if kind == "content_block_delta":
            block = self._blocks.get(obj.get("index", -1))
            delta = obj.get("delta") or {}
            if block is None:
                return None
            dtype = delta.get("type")
            if dtype == "text_delta":
                text = delta.get("text") or ""
                block["text"] = block.get("text", "") + text
                return text or None
            if dtype == "input_json_delta":
                self._json.setdefault(obj["index"], []).append(delta.get("partial_json") or "")
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + (delta.get("thinking") or "")
            elif dtype == "signature_delta":
                block["signature"] = block.get("signature", "") + (delta.get("signature") or "")
            elif dtype == "citations_delta":
                block.setdefault("citations", []).append(delta.get("citation"))
        elif kind == "content_block_start":
            block = obj.get("content_block")
            if isinstance(block, dict):
                self._blocks[obj.get("index", len(self._blocks))] = dict(block)
        elif kind == "message_start":
            message = obj.get("message")
            usage = anthropic_usage(message.get("usage") if isinstance(message, dict) else None)
            if usage is not None:
                self.usage.append(usage)
        elif kind == "message_delta":
            delta = obj.get("delta") or {}
            if delta.get("stop_reason"):
                self.finish_reason = delta["stop_reason"]
            usage = anthropic_usage(obj.get("usage"))
            if usage is not None:
                self.usage.append(usage)
        elif kind == "message_stop":
            self.done = True
        return None

    def turn(self) -> Turn:
        content: list[dict[str, Any]] = []
        raw_args: dict[str, str] = {}
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.get("type") == "tool_use":
                parts = self._json.get(index)
                if parts is not None:
                    text = "".join(parts)
                    args, error = parse_arguments(text)
                    # The transcript needs an object; a broken one is reported to the model.
                    block["input"] = args if error is None else {}
                    if error is not None:
                        raw_args[str(block.get("id"))] = text
                elif not isinstance(block.get("input"), dict):
                    block["input"] = {}
            content.append(block)
        calls: list[ToolCall] = []
        if self.finish_reason == "tool_use":
            for call in parse_anthropic_tool_calls(content):
                if call.id in raw_args:
                    call.args, call.error = parse_arguments(raw_args[call.id])
                calls.append(call)
        usage: dict[str, int] | None = None
        if self.usage:
            usage = {}
            for part in self.usage:
                for key, value in part.items():
                    usage[key] = usage.get(key, 0) + value
        message = {"role": "assistant", "content": content}
        return Turn(message, blocks_text(content), calls, usage, self.finish_reason, None)


ANTHROPIC = AnthropicWire()
