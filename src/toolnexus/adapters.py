"""Provider adapters: declarations and results out, tool calls in (OpenAI, Anthropic, Gemini)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolnexus.types import Tool, ToolResult

__all__ = [
    "ToolCall",
    "anthropic_tool_result",
    "gemini_tool_result",
    "openai_tool_result",
    "parse_anthropic_tool_calls",
    "parse_arguments",
    "parse_gemini_tool_calls",
    "parse_openai_tool_calls",
    "to_anthropic",
    "to_gemini",
    "to_openai",
]


def to_openai(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The `tools` array of an OpenAI chat completion, in order."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in tools
    ]


def to_anthropic(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The `tools` array of an Anthropic messages request, in order."""
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]


def to_gemini(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """One `{"functionDeclarations": [...]}` element wrapping every tool."""
    return [
        {
            "functionDeclarations": [
                {"name": t.name, "description": t.description, "parameters": t.input_schema}
                for t in tools
            ]
        }
    ]


# -- inbound: tool calls a provider response asks for -------------------------------------------


@dataclass(slots=True)
class ToolCall:
    """One tool call requested by a model. `error` is set when the arguments are unusable."""

    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Decode a call's arguments: a JSON-object string, `""` (⇒ `{}`), or an object.

    Returns `(args, None)` or `({}, <what is wrong>)`; never raises.
    """
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return {}, None
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError as exc:
            return {}, f"arguments are not valid JSON: {exc}"
        if isinstance(value, dict):
            return value, None
        return {}, f"arguments are not a JSON object (got {type(value).__name__})"
    return {}, f"arguments are not a JSON object (got {type(raw).__name__})"


def _call(id_: Any, name: Any, raw_args: Any) -> ToolCall:
    args, error = parse_arguments(raw_args)
    return ToolCall(id=str(id_ or ""), name=str(name or ""), args=args, error=error)


def parse_openai_tool_calls(message: Mapping[str, Any]) -> list[ToolCall]:
    """Tool calls of an OpenAI assistant message (`choices[0].message`)."""
    calls = message.get("tool_calls") or []
    out: list[ToolCall] = []
    for i, call in enumerate(calls):
        fn = call.get("function") or {}
        out.append(_call(call.get("id") or f"call_{i}", fn.get("name"), fn.get("arguments")))
    return out


def parse_anthropic_tool_calls(content: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """Tool calls of an Anthropic assistant turn (its `tool_use` content blocks)."""
    return [
        _call(block.get("id"), block.get("name"), block.get("input"))
        for block in content
        if block.get("type") == "tool_use"
    ]


def parse_gemini_tool_calls(parts: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """Tool calls of a Gemini candidate (`content.parts[*].functionCall`)."""
    out: list[ToolCall] = []
    for i, part in enumerate(parts):
        fc = part.get("functionCall")
        if fc is not None:
            out.append(_call(fc.get("id") or f"call_{i}", fc.get("name"), fc.get("args")))
    return out


# -- outbound: a tool result in each provider's shape -------------------------------------------


def openai_tool_result(call_id: str, result: ToolResult) -> dict[str, Any]:
    """An OpenAI `tool` message answering one call."""
    return {"role": "tool", "tool_call_id": call_id, "content": result.output}


def anthropic_tool_result(call_id: str, result: ToolResult) -> dict[str, Any]:
    """An Anthropic `tool_result` block (one per call, all in one user message per turn)."""
    return {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": result.output,
        "is_error": result.is_error,
    }


def gemini_tool_result(name: str, result: ToolResult) -> dict[str, Any]:
    """A Gemini `functionResponse` part."""
    key = "error" if result.is_error else "output"
    return {"functionResponse": {"name": name, "response": {key: result.output}}}
