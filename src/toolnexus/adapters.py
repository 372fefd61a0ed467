"""Provider adapters: declarations and results out, tool calls in (OpenAI, Anthropic, Gemini)."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from toolnexus._log import warn
from toolnexus._schema_rewrites import gemini_schema, strict_schema
from toolnexus.errors import WireFormatError
from toolnexus.types import Tool, ToolResult

__all__ = [
    "ANTHROPIC_TOOL_SEARCH",
    "OPENAI_RESPONSES_TOOL_SEARCH",
    "ToolCall",
    "anthropic_tool_result",
    "gemini_schema",
    "gemini_tool_result",
    "openai_tool_result",
    "parse_anthropic_tool_calls",
    "parse_arguments",
    "parse_gemini_tool_calls",
    "parse_openai_tool_calls",
    "strict_schema",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "to_openai_responses",
]


ANTHROPIC_TOOL_SEARCH: dict[str, Any] = {
    "type": "tool_search_tool_bm25_20251119",
    "name": "tool_search_tool_bm25",
}
"""Anthropic's own tool-search tool (the BM25 variant), declared beside deferred tools."""
OPENAI_RESPONSES_TOOL_SEARCH: dict[str, Any] = {"type": "tool_search"}
"""OpenAI Responses' hosted tool search, declared beside deferred functions."""


def _eager(tools: Sequence[Tool], defer: bool) -> Sequence[Tool]:
    """The tools a wire without deferred definitions declares when asked to defer."""
    return [t for t in tools if not t.defer_loading] if defer else tools


def to_openai(
    tools: Sequence[Tool], strict: bool = False, *, defer: bool = False
) -> list[dict[str, Any]]:
    """The `tools` array of an OpenAI chat completion, in order.

    `strict=True` rewrites each schema for OpenAI's strict mode and marks the tool
    `"strict": true` when that loses nothing; a tool whose schema cannot be made strict without
    loss (an open `dict[str, T]` map, a free-form object, ...) is sent as is, non-strict, with a
    warning. `defer=True` leaves the deferred tools out (chat completions has no deferred
    form: declare those `Toolkit.search_tools` finds yourself).
    """
    tools = _eager(tools, defer)
    if strict:
        out = []
        for t in tools:
            parameters, ok = _strict_for(t)
            function: dict[str, Any] = {
                "name": t.name,
                "description": t.description,
                "parameters": parameters,
            }
            if ok:
                function["strict"] = True
            out.append({"type": "function", "function": function})
        return out
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


def to_openai_responses(
    tools: Sequence[Tool], strict: bool = False, *, defer: bool = False
) -> list[dict[str, Any]]:
    """The `tools` array of an OpenAI Responses API request (flat function entries).

    The Responses API treats a function as strict unless told otherwise, so every entry
    carries `"strict"`: `false`, or `true` for tools made strict as in `to_openai`.
    `defer=True`: each deferred tool carries `"defer_loading": true` and, when there is one,
    the hosted `{"type": "tool_search"}` tool follows.
    """
    out: list[dict[str, Any]] = []
    for t in tools:
        parameters, ok = _strict_for(t) if strict else (t.input_schema, False)
        declaration: dict[str, Any] = {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": parameters,
            "strict": ok,
        }
        if defer and t.defer_loading:
            declaration["defer_loading"] = True
        out.append(declaration)
    if defer and any(t.defer_loading for t in tools):
        out.append(dict(OPENAI_RESPONSES_TOOL_SEARCH))
    return out


def to_anthropic(
    tools: Sequence[Tool], strict: bool = False, *, defer: bool = False
) -> list[dict[str, Any]]:
    """The `tools` array of an Anthropic messages request, in order.

    `strict=True`: each schema rewritten as in `to_openai` and the tool marked `"strict": true`
    when that loses nothing (else sent as is, with a warning). `defer=True`: each deferred
    tool carries `"defer_loading": true` and, when there is one, Anthropic's BM25 tool-search
    tool (`ANTHROPIC_TOOL_SEARCH`) follows.
    """
    out: list[dict[str, Any]] = []
    for t in tools:
        schema, ok = _strict_for(t) if strict else (t.input_schema, False)
        declaration: dict[str, Any] = {
            "name": t.name,
            "description": t.description,
            "input_schema": schema,
        }
        if ok:
            declaration["strict"] = True
        if defer and t.defer_loading:
            declaration["defer_loading"] = True
        out.append(declaration)
    if defer and any(t.defer_loading for t in tools):
        out.append(dict(ANTHROPIC_TOOL_SEARCH))
    return out


def to_gemini(tools: Sequence[Tool], *, defer: bool = False) -> list[dict[str, Any]]:
    """One `{"functionDeclarations": [...]}` element wrapping every tool.

    Each schema is rewritten into the subset Gemini accepts (`gemini_schema`). `defer=True`
    leaves the deferred tools out (Gemini has no deferred form).
    """
    tools = _eager(tools, defer)
    return [
        {
            "functionDeclarations": [
                {
                    "name": t.name,
                    "description": t.description,
                    "parameters": _cached(
                        _gemini_cache, t.input_schema, partial(gemini_schema, tool=t.name)
                    ),
                }
                for t in tools
            ]
        }
    ]


# -- schema conversions (cached per schema object: tools treat their schema as immutable) -----

_CACHE_SIZE = 1024
_strict_cache: OrderedDict[int, tuple[dict[str, Any], Any]] = OrderedDict()
_gemini_cache: OrderedDict[int, tuple[dict[str, Any], Any]] = OrderedDict()

T = TypeVar("T")


def _cached(
    cache: OrderedDict[int, tuple[dict[str, Any], Any]],
    schema: dict[str, Any],
    convert: Callable[[dict[str, Any]], T],
) -> T:
    """`convert(schema)`, computed once per schema object (the entry holds the schema alive)."""
    key = id(schema)
    hit = cache.get(key)
    if hit is not None and hit[0] is schema:
        cache.move_to_end(key)
        return hit[1]  # type: ignore[no-any-return]
    value = convert(schema)
    cache[key] = (schema, value)
    if len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
    return value


def _strict_for(t: Tool) -> tuple[dict[str, Any], bool]:
    """The schema to send for `t` in strict mode, and whether it is strict. Warns once."""
    converted, problem = _cached(_strict_cache, t.input_schema, strict_schema)
    if problem is None:
        return converted, True
    warning = f'tool "{t.name}" cannot use OpenAI strict mode ({problem}) — sent non-strict'
    if warning not in _strict_warned:  # once per tool and reason, however often declared
        _strict_warned.add(warning)
        warn(warning)
    return t.input_schema, False


_strict_warned: set[str] = set()


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
        except RecursionError:
            return {}, "arguments are nested too deeply to decode"
        if isinstance(value, dict):
            return value, None
        return {}, f"arguments are not a JSON object (got {type(value).__name__})"
    return {}, f"arguments are not a JSON object (got {type(raw).__name__})"


def _call(id_: Any, name: Any, raw_args: Any) -> ToolCall:
    if type(raw_args) is str and raw_args[:1] == "{":  # the usual case: one JSON object
        try:
            value = json.loads(raw_args)
        except (ValueError, RecursionError):
            pass  # parse_arguments says what is wrong
        else:
            if type(value) is dict:
                return ToolCall(str(id_ or ""), str(name or ""), value)
    args, error = parse_arguments(raw_args)
    return ToolCall(id=str(id_ or ""), name=str(name or ""), args=args, error=error)


def parse_openai_tool_calls(message: Mapping[str, Any]) -> list[ToolCall]:
    """Tool calls of an OpenAI assistant message (`choices[0].message`).

    A malformed shape raises `WireFormatError` (a `ValueError`) naming what is wrong (the
    client reports it as a `ProviderError`)."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise WireFormatError(f"tool_calls is not a list (got {type(calls).__name__})")
    out: list[ToolCall] = []
    for i, call in enumerate(calls):
        # `type(...) is dict` first: decoded JSON always is, and an ABC check costs more.
        if type(call) is not dict and not isinstance(call, Mapping):
            raise WireFormatError(f"tool_calls[{i}] is not an object (got {type(call).__name__})")
        fn = call.get("function") or {}
        if type(fn) is not dict and not isinstance(fn, Mapping):
            raise WireFormatError(f"tool_calls[{i}].function is not an object")
        name = fn.get("name")
        if name is not None and not isinstance(name, str):
            raise WireFormatError(f"tool_calls[{i}].function.name is not a string")
        out.append(_call(call.get("id") or f"call_{i}", name, fn.get("arguments")))
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


def openai_tool_result(call_id: str, result: ToolResult, name: str = "") -> dict[str, Any]:
    """An OpenAI `tool` message answering one call; a result with parts keeps them (and the
    tool's `name`) in the transcript, to be laid out per request."""
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": result.output}
    if result.parts:
        message["parts"] = result.parts
        message["name"] = name
    return message


def anthropic_tool_result(call_id: str, result: ToolResult) -> dict[str, Any]:
    """An Anthropic `tool_result` block (one per call, all in one user message per turn)."""
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": result.output,
        "is_error": result.is_error,
    }
    if result.parts:
        block["parts"] = result.parts
    return block


def gemini_tool_result(name: str, result: ToolResult) -> dict[str, Any]:
    """A Gemini `functionResponse` part."""
    key = "error" if result.is_error else "output"
    return {"functionResponse": {"name": name, "response": {key: result.output}}}
