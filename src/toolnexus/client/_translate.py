"""`translate`: one provider call with OpenAI shapes in and out — no loop, nothing executed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from toolnexus._json import compact_json
from toolnexus.client._anthropic import (
    DEFAULT_MAX_TOKENS,
    anthropic_calls,
    to_anthropic_messages,
    to_anthropic_tool_choice,
    to_anthropic_tools,
)
from toolnexus.client._endpoint import ModelRequest
from toolnexus.client._hooks import before_llm, call_hook
from toolnexus.client._parts import canonical_messages, openai_request_messages
from toolnexus.client._responses import RESPONSES, chat_to_input, chat_tool_choice, chat_tools
from toolnexus.client._results import TranslatedToolCall, TranslateResult, empty_usage
from toolnexus.client._scope import RunScope
from toolnexus.toolkit import as_toolkit
from toolnexus.types import Tool

if TYPE_CHECKING:
    from toolnexus.client._settings import RunSettings
    from toolnexus.client._wire import Turn
    from toolnexus.toolkit import Toolkit

__all__ = ["finish_reason", "translate"]


def finish_reason(has_tool_calls: bool, provider_reason: Any) -> str:
    """One vocabulary for both styles: tool_calls, length, content_filter or stop."""
    if has_tool_calls:
        return "tool_calls"
    if provider_reason in ("max_tokens", "length", "max_output_tokens"):
        return "length"
    if provider_reason in ("refusal", "content_filter"):
        return "content_filter"
    return "stop"


# -- the call ---------------------------------------------------------------------------------


def _openai_calls(message: dict[str, Any]) -> list[TranslatedToolCall]:
    calls = []
    for index, call in enumerate(message.get("tool_calls") or ()):
        fn = call.get("function") or {}
        arguments = fn.get("arguments")
        if not isinstance(arguments, str):
            arguments = compact_json(arguments if arguments is not None else {})
        calls.append(
            TranslatedToolCall(
                id=str(call.get("id") or f"call_{index}"),
                name=str(fn.get("name") or ""),
                arguments=arguments,
            )
        )
    return calls


async def translate(
    settings: RunSettings,
    messages: Sequence[dict[str, Any]],
    *,
    tools: Sequence[dict[str, Any]] | None,
    toolkit: Toolkit | Tool | Iterable[Tool] | None,
    tool_choice: Any,
    system: str | None,
    max_tokens: int,
    cancel: asyncio.Event | None,
) -> TranslateResult:
    endpoint = settings.endpoint
    anthropic = endpoint.dialect.style == "anthropic"
    if endpoint.dialect.style == RESPONSES.style:
        return await _translate_responses(
            settings, messages, tools, toolkit, tool_choice, system, max_tokens, cancel
        )
    kit = as_toolkit(toolkit)
    declared = endpoint.dialect.declarations(kit) if kit is not None else []
    seen: list[dict[str, Any]] = []  # the summaries of the parts sent, for the `llm` event
    if anthropic:
        wire_messages, joined = to_anthropic_messages(messages, settings.parts, seen)
        system_text = system or settings.system_prompt or joined
        wire_tools = declared + to_anthropic_tools(tools or ())
    else:
        system_text = system if system is not None else (settings.system_prompt or "")
        # A bare string in a user content list is a text part (as in a run's prompt).
        wire_messages = canonical_messages(messages)
        has_system = any(m.get("role") in ("system", "developer") for m in wire_messages)
        if system_text and not has_system:
            wire_messages.insert(0, {"role": "system", "content": system_text})
        wire_tools = declared + list(tools or ())

    def build(model: str, wire_messages: list[Any], wire_tools: list[Any]) -> dict[str, Any]:
        if anthropic:
            return _anthropic_body(
                model, wire_messages, system_text, wire_tools, tool_choice, max_tokens
            )
        # Part dicts become blocks; tool media move to one user message.
        wire_messages = openai_request_messages(wire_messages, settings.parts, seen)
        return _openai_body(model, wire_messages, wire_tools, tool_choice, max_tokens)

    turn, model = await _ask(settings, wire_messages, wire_tools, seen, cancel, build)
    calls = anthropic_calls(turn.message["content"]) if anthropic else _openai_calls(turn.message)
    return await _answered(settings, turn, model, calls)


async def _ask(
    settings: RunSettings,
    messages: list[Any],
    tools: list[Any],
    seen: list[dict[str, Any]],
    cancel: asyncio.Event | None,
    build: Callable[[str, list[Any], list[Any]], dict[str, Any]],
) -> tuple[Turn, str]:
    """One model call of `translate`: the `before_llm` hook may replace the wire messages,
    tools and model, `build` makes the body of them; the answer and the model it came from."""
    scope = RunScope(settings.timeout_ms, cancel)
    try:
        model, hooks = settings.model, settings.hooks
        if hooks is not None and hooks.before_llm is not None:
            messages, tools, model = await before_llm(hooks.before_llm, messages, tools, model, 0)
        request = ModelRequest(model, build(model, messages, tools), seen)
        turn = await settings.endpoint.complete(request, scope, settings.emit)
    finally:
        scope.close()
    return turn, model


async def _answered(
    settings: RunSettings, turn: Turn, model: str, calls: list[TranslatedToolCall]
) -> TranslateResult:
    """The translation of one answer, after the `after_llm` hook saw it."""
    hooks = settings.hooks
    if hooks is not None and hooks.after_llm is not None:
        await call_hook(hooks.after_llm, {"response": turn.raw, "model": model, "turn": 0})
    return TranslateResult(
        text=turn.text,
        tool_calls=calls,
        finish_reason=finish_reason(bool(calls), turn.finish_reason),
        usage=turn.usage or empty_usage(),
        model=model,
        raw=turn.raw,
    )


async def _translate_responses(
    settings: RunSettings,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None,
    toolkit: Toolkit | Tool | Iterable[Tool] | None,
    tool_choice: Any,
    system: str | None,
    max_tokens: int,
    cancel: asyncio.Event | None,
) -> TranslateResult:
    """`translate` on the Responses wire: the OpenAI chat shapes become input items."""
    kit = as_toolkit(toolkit)
    declared = RESPONSES.declarations(kit) if kit is not None else []
    wire_tools = declared + chat_tools(list(tools or ()))
    items = chat_to_input(list(messages))
    instructions = system if system is not None else (settings.system_prompt or "")
    seen: list[dict[str, Any]] = []

    def build(model: str, items: list[Any], wire_tools: list[Any]) -> dict[str, Any]:
        body = RESPONSES.body(
            model, instructions, items, [], False, parts=settings.parts, seen=seen
        )
        if wire_tools:
            body["tools"] = wire_tools
        if tool_choice is not None:
            body["tool_choice"] = chat_tool_choice(tool_choice)
        if max_tokens > 0:
            body["max_output_tokens"] = max_tokens
        return body

    turn, model = await _ask(settings, items, wire_tools, seen, cancel, build)
    calls = [
        TranslatedToolCall(
            id=str(item.get("call_id") or ""),
            name=str(item.get("name") or ""),
            arguments=str(item.get("arguments") or "{}"),
        )
        for item in turn.entries()
        if item.get("type") == "function_call"
    ]
    return await _answered(settings, turn, model, calls)


def _openai_body(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    tool_choice: Any,
    max_tokens: int,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = tools
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    if max_tokens > 0:
        body["max_tokens"] = max_tokens
    return body


def _anthropic_body(
    model: str,
    messages: list[dict[str, Any]],
    system: str,
    tools: list[dict[str, Any]],
    tool_choice: Any,
    max_tokens: int,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens if max_tokens > 0 else DEFAULT_MAX_TOKENS,
        "messages": messages,
    }
    if system:
        body["system"] = system
    if tools:
        body["tools"] = tools
    mapped = to_anthropic_tool_choice(tool_choice)
    if mapped is not None:
        body["tool_choice"] = mapped
    return body
