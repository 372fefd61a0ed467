"""Tools that talk to their caller (log, sample, ask), served over stdio or HTTP for the tests:
`python stdio_caller_tools.py` serves them on stdin/stdout."""

from __future__ import annotations

import asyncio
from typing import Any

from toolnexus.errors import CallerUnavailable
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext


def caller_toolkit() -> Toolkit:
    kit = Toolkit(builtins=False)

    async def chatty(args: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.log("debug", "a detail")
        await ctx.log("info", {"step": 1}, logger="chatty")
        await ctx.log("error", "went wrong")
        return "logged"

    async def summarize(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            return "model said: " + await ctx.sample(args.get("text", "hi"), max_tokens=20)
        except CallerUnavailable as exc:
            return f"unavailable: {exc}"

    async def confirm(args: dict[str, Any], ctx: ToolContext) -> str:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        answer = await ctx.ask("Who are you?", schema)
        if not answer.ok:
            return f"no answer ({answer.reason})"
        second = await ctx.ask(
            "Sure?", {"type": "object", "properties": {"sure": {"type": "boolean"}}}
        )
        return f"hello {(answer.data or {}).get('name')}, sure={(second.data or {}).get('sure')}"

    async def visit(args: dict[str, Any], ctx: ToolContext) -> str:
        answer = await ctx.ask("Sign in, please", url="https://example.test/login")
        return "visited" if answer.ok else f"not visited ({answer.reason})"

    @kit.resource("counter://value")
    def counter() -> str:
        return "1"

    async def bump(args: dict[str, Any], ctx: ToolContext) -> str:
        await kit.notify_resource_updated("counter://value")
        await kit.notify_list_changed("resources")
        return "bumped"

    kit.register(
        Tool("chatty", "Logs", None, "native", chatty),
        Tool("summarize", "Samples", None, "native", summarize),
        Tool("confirm", "Asks twice", None, "native", confirm),
        Tool("visit", "Asks for a visit", None, "native", visit),
        Tool("bump", "Notifies", None, "native", bump),
    )
    return kit


if __name__ == "__main__":
    asyncio.run(caller_toolkit().serve_stdio(mcp={}))
