"""Helpers shared by the client tests: styles, the fake server's base URL, tiny toolkits."""

from __future__ import annotations

from typing import Any

from support.fake_llm import FakeLLM
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool

STYLES = ("openai", "anthropic")


def base_url(llm: FakeLLM, style: str) -> str:
    return llm.url if style == "anthropic" else llm.url + "/v1"


def kit(*tools: Tool) -> Toolkit:
    """A toolkit holding exactly these tools (no built-ins)."""
    return Toolkit(builtins=False, extra_tools=tools)


def add_tool() -> Tool:
    async def add(args: dict[str, Any], ctx: Any) -> str:
        return str(args["a"] + args["b"])

    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    return Tool("add", "Add two numbers.", schema, "native", add)
