"""`Toolkit.serve_acp` in a process of its own, for the ACP serving tests:
`python acp_served.py BASE_URL`. Its one tool, `deploy`, needs an approval, which the client's
`wait_for=ask_editor` asks the editor for."""

from __future__ import annotations

import asyncio
import sys

from toolnexus import Context, create_client, create_toolkit, pending, tool
from toolnexus.acp import ask_editor


@tool
def deploy(target: str, ctx: Context) -> str:
    """Deploy to a target, once a human approved it."""
    if ctx.answer is None:
        return pending(kind="approval", prompt=f"Deploy to {target}?")  # type: ignore[return-value]
    return f"deployed to {target}"


async def main() -> None:
    client = create_client(
        base_url=sys.argv[1], style="openai", model="m", api_key="k", wait_for=ask_editor
    )
    async with await create_toolkit(extra_tools=[deploy], builtins=False) as toolkit:
        await toolkit.serve_acp(client)
    await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
