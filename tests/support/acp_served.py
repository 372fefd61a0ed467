"""`Toolkit.serve_acp` in a process of its own, for the ACP serving tests:
`python acp_served.py BASE_URL`. Its tools suspend in each way a tool can ask the human, which
the client's `wait_for=ask_editor` asks the editor: `deploy` needs an approval, `sign_in` a
sign-in at a URL (`auth_required`), `oauth` an OAuth sign-in (a redirect URI), `question` is
the built-in, `profile` asks for a form."""

from __future__ import annotations

import asyncio
import json
import sys

from toolnexus import Context, auth_required, create_client, create_toolkit, pending, tool
from toolnexus.acp import ask_editor
from toolnexus.builtin import question_tool

LOGIN_URL = "https://login.example.test/authorize?client=acp&state=s1"
REDIRECT_URI = "http://127.0.0.1:33418/callback"
PROFILE_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Your name"}},
    "required": ["name"],
}


@tool
def deploy(target: str, ctx: Context) -> str:
    """Deploy to a target, once a human approved it."""
    if ctx.answer is None:
        return pending(kind="approval", prompt=f"Deploy to {target}?")  # type: ignore[return-value]
    return f"deployed to {target}"


@tool
def sign_in(ctx: Context) -> str:
    """Reach the account, once the user signed in."""
    if ctx.answer is None:
        return auth_required(LOGIN_URL, "Sign in to Example")  # type: ignore[return-value]
    return "signed in"


@tool
def oauth(ctx: Context) -> str:
    """Reach an OAuth-protected server, once the user signed in (the code comes back to a
    redirect URI, as an MCP server's sign-in does)."""
    if ctx.answer is None:
        return pending(  # type: ignore[return-value]
            kind="authorization",
            prompt='Sign in to MCP server "db"',
            url=LOGIN_URL,
            data={"server": "db", "redirectUri": REDIRECT_URI},
        )
    return "came back to " + str((ctx.answer.data or {}).get("callbackUrl"))


@tool
def profile(ctx: Context) -> str:
    """Fill in the user's profile, with what they enter."""
    if ctx.answer is None:
        return pending(  # type: ignore[return-value]
            kind="input", prompt="Who are you?", data={"schema": PROFILE_FORM}
        )
    return "profile: " + json.dumps(ctx.answer.data, sort_keys=True)


async def main() -> None:
    client = create_client(
        base_url=sys.argv[1], style="openai", model="m", api_key="k", wait_for=ask_editor
    )
    extra = [deploy, sign_in, oauth, profile, question_tool()]
    async with await create_toolkit(extra_tools=extra, builtins=False) as toolkit:
        await toolkit.serve_acp(client)
    await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
