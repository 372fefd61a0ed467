"""A toolkit with suspending tools served over stdio: `python mcp_gateway_stdio.py`;
`--upstream URL` adds the MCP server at URL (as `asks`, roots `/srv/ws`), whose resources and
prompts the gateway then re-serves; `--protocol legacy` talks to it at 2025-11-25."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext, ToolResult, pending


def ask(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Asks for a name (once), then greets with it."""
    if ctx.answer is None:
        return pending(kind="input", prompt="Your name?")
    if not ctx.answer.ok:
        return ToolResult(f"no name ({ctx.answer.reason})")
    return ToolResult(f"hello {(ctx.answer.data or {}).get('answer')}")


def sign_in(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if ctx.answer is None:
        return pending(kind="authorization", prompt="Sign in", url="https://example.test/sso")
    return ToolResult(f"signed in: {ctx.answer.ok}")


def stubborn(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return pending(kind="input", prompt="Again?")


TOOLS = [
    Tool("ask", "Ask for a name", None, "native", ask),
    Tool("sign_in", "Sign in first", None, "native", sign_in),
    Tool("stubborn", "Always asks", None, "native", stubborn),
]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", default=None)
    parser.add_argument("--protocol", default="auto")
    parsed = parser.parse_args()
    upstream = parsed.upstream
    if upstream is None:
        await Toolkit(builtins=False, extra_tools=TOOLS).serve_stdio(mcp={"name": "gw-stdio"})
        return
    from toolnexus import create_toolkit

    toolkit = await create_toolkit(
        mcp_config={"asks": {"url": upstream, "protocol": parsed.protocol}},
        roots=["/srv/ws"],
        builtins=False,
    )
    try:
        await toolkit.serve_stdio(mcp={"name": "gw-stdio"})
    finally:
        await toolkit.close()


if __name__ == "__main__":
    asyncio.run(main())
