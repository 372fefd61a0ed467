"""Provider adapters: tool declarations out (OpenAI, Anthropic, Gemini)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolnexus.types import Tool

__all__ = ["to_anthropic", "to_gemini", "to_openai"]


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
