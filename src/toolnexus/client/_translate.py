"""`translate`: one provider call with OpenAI shapes in and out — no loop, nothing executed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolnexus._json import compact_json
from toolnexus.client._hooks import call_hook
from toolnexus.client._openai import content_text
from toolnexus.client._results import TranslatedToolCall, TranslateResult
from toolnexus.client._scope import RunScope
from toolnexus.client._wire import Turn

if TYPE_CHECKING:
    from toolnexus.client._client import Client
    from toolnexus.toolkit import Toolkit

__all__ = ["finish_reason", "to_anthropic_messages", "to_anthropic_tool_choice", "translate"]

DEFAULT_MAX_TOKENS = 4096


def finish_reason(has_tool_calls: bool, provider_reason: Any) -> str:
    """One vocabulary for both styles: tool_calls, length, content_filter or stop."""
    if has_tool_calls:
        return "tool_calls"
    if provider_reason in ("max_tokens", "length"):
        return "length"
    if provider_reason in ("refusal", "content_filter"):
        return "content_filter"
    return "stop"


# -- anthropic inbound ------------------------------------------------------------------------


def _parsed_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        import json

        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _as_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, (str, list)):
        return content_text(content)
    return compact_json(content)


def to_anthropic_messages(
    messages: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], str]:
    """OpenAI messages → Anthropic messages, plus the joined text of system/developer messages."""
    out: list[dict[str, Any]] = []
    system_parts: list[str] = []
    results: list[dict[str, Any]] | None = None  # the open run of consecutive tool results
    for message in messages:
        role = message.get("role")
        if role in ("tool", "function"):
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id", ""),
                "content": _as_text(message.get("content")),
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
                        "input": _parsed_arguments(fn.get("arguments")),
                    }
                )
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": _as_text(message.get("content"))})
    return out, "\n\n".join(system_parts)


def to_anthropic_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        fn = tool.get("function") if tool.get("type") == "function" else None
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


def _anthropic_calls(content: list[Any]) -> list[TranslatedToolCall]:
    return [
        TranslatedToolCall(
            id=str(block.get("id") or ""),
            name=str(block.get("name") or ""),
            arguments=compact_json(block.get("input") if block.get("input") is not None else {}),
        )
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


async def translate(
    client: Client,
    messages: Sequence[dict[str, Any]],
    *,
    tools: Sequence[dict[str, Any]] | None,
    toolkit: Toolkit | None,
    tool_choice: Any,
    system: str | None,
    max_tokens: int,
    cancel: Any,
) -> TranslateResult:
    anthropic = client.style == "anthropic"
    model = client.model
    mapped_choice: Any = None
    if anthropic:
        wire_messages, joined = to_anthropic_messages(messages)
        system_text = system or client.system_prompt or joined
        wire_tools = (toolkit.to_anthropic() if toolkit is not None else []) + to_anthropic_tools(
            tools or ()
        )
        mapped_choice = to_anthropic_tool_choice(tool_choice)
    else:
        system_text = system if system is not None else (client.system_prompt or "")
        wire_messages = list(messages)
        has_system = any(m.get("role") in ("system", "developer") for m in wire_messages)
        if system_text and not has_system:
            wire_messages.insert(0, {"role": "system", "content": system_text})
        wire_tools = (toolkit.to_openai() if toolkit is not None else []) + list(tools or ())

    scope = RunScope(client.timeout_ms, cancel)
    started = time.perf_counter()
    try:
        hooks = client.hooks
        if hooks is not None and hooks.before_llm is not None:
            reply = await call_hook(
                hooks.before_llm,
                {"messages": wire_messages, "tools": wire_tools, "model": model, "turn": 0},
            )
            if reply:
                if reply.get("messages") is not None:
                    wire_messages = list(reply["messages"])
                if "tools" in reply:
                    wire_tools = list(reply["tools"] or ())
                if reply.get("model"):
                    model = str(reply["model"])
        body: dict[str, Any] = {"model": model}
        if anthropic:
            body["max_tokens"] = max_tokens if max_tokens > 0 else DEFAULT_MAX_TOKENS
            body["messages"] = wire_messages
            if system_text:
                body["system"] = system_text
            if wire_tools:
                body["tools"] = wire_tools
            if mapped_choice is not None:
                body["tool_choice"] = mapped_choice
        else:
            body["messages"] = wire_messages
            if wire_tools:
                body["tools"] = wire_tools
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
            if max_tokens > 0:
                body["max_tokens"] = max_tokens
        body = await client._shape_body(body)
        url, headers = client._url, client._request_headers()

        async def attempt() -> tuple[Turn, Any]:
            status, data, raw = await client._transport.post(url, headers, body)
            return client._wire.parse(status, data, raw), data

        turn, data = await client._policy.call(attempt, scope)
    except BaseException:
        scope.close()
        client._emit(_llm_event(model, "error", started, None))
        raise
    scope.close()
    usage = turn.usage or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    client._emit(_llm_event(model, "ok", started, usage))
    if hooks is not None and hooks.after_llm is not None:
        await call_hook(hooks.after_llm, {"response": data, "model": model, "turn": 0})
    calls = _anthropic_calls(turn.message["content"]) if anthropic else _openai_calls(turn.message)
    return TranslateResult(
        text=turn.text,
        tool_calls=calls,
        finish_reason=finish_reason(bool(calls), turn.finish_reason),
        usage=usage,
        model=model,
        raw=data,
    )


def _llm_event(
    model: str, status: str, started: float, usage: dict[str, int] | None
) -> dict[str, Any]:
    return {
        "event": "llm",
        "model": model,
        "status": status,
        "ms": round((time.perf_counter() - started) * 1000, 3),
        "prompt_tokens": usage["prompt_tokens"] if usage else 0,
        "completion_tokens": usage["completion_tokens"] if usage else 0,
    }
