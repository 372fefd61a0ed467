"""`translate` data and the OpenAI → Anthropic mapping under the module name the published
package uses (`toolnexus.translate`).

The code lives in `toolnexus.client`; this module hands out the same objects and names the
mapping steps a host may want on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolnexus._json import compact_json
from toolnexus.adapters import parse_arguments
from toolnexus.client._anthropic import (
    to_anthropic_messages,
    to_anthropic_tool_choice,
    to_anthropic_tools,
)
from toolnexus.client._openai import content_text
from toolnexus.client._results import TranslatedToolCall, TranslateResult
from toolnexus.client._translate import _openai_calls as openai_tool_calls
from toolnexus.client._translate import finish_reason

__all__ = [
    "TranslateResult",
    "TranslatedToolCall",
    "args_object",
    "args_string",
    "content_text",
    "finish_reason_for",
    "has_system_message",
    "openai_messages_to_anthropic",
    "openai_tool_choice_to_anthropic",
    "openai_tools_to_anthropic",
    "tool_calls_of",
]


def openai_messages_to_anthropic(
    messages: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], str]:
    """OpenAI chat messages as Anthropic messages, plus the system text (system and developer
    messages joined by a blank line). Consecutive tool results become one user message."""
    return to_anthropic_messages(messages)


def openai_tools_to_anthropic(tools: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """OpenAI function tools as Anthropic tools; entries already in Anthropic shape pass."""
    return to_anthropic_tools(tools or [])


def openai_tool_choice_to_anthropic(choice: Any) -> dict[str, Any] | None:
    """`"required"`/`"any"` ⇒ any, `"none"` ⇒ none, a named function ⇒ that tool; otherwise
    `None` (the provider's default, auto)."""
    return to_anthropic_tool_choice(choice)


def finish_reason_for(has_tool_calls: bool, provider_stop: str | None = None) -> str:
    """One vocabulary for both styles: `tool_calls`, `length`, `content_filter` or `stop`."""
    return finish_reason(has_tool_calls, provider_stop)


def has_system_message(messages: Sequence[Any]) -> bool:
    """Whether any message has the role `system`."""
    return any(isinstance(m, Mapping) and m.get("role") == "system" for m in messages)


def tool_calls_of(message: dict[str, Any]) -> list[TranslatedToolCall]:
    """The tool calls of an OpenAI assistant message, arguments as JSON strings."""
    return openai_tool_calls(message)


def args_object(args: Any) -> dict[str, Any]:
    """Tool-call arguments as an object: a JSON-object string decoded, anything else `{}`."""
    return parse_arguments(args)[0] if isinstance(args, (str, dict)) or args is None else {}


def args_string(args: Any) -> str:
    """Tool-call arguments as a JSON string: a string passes as it is, an object is encoded,
    anything else is `"{}"`."""
    if isinstance(args, str):
        return args
    return compact_json(args) if isinstance(args, dict) else "{}"
