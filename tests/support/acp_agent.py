"""An ACP agent written with the official SDK, for the model-source tests.

`python acp_agent.py MODE`. Every prompt is answered by echoing its text, after a thought chunk,
a tool-call narration and a message chunk of another session (none may reach the reply). Modes:
`echo` (default), `ask` (asks permission first and says which option it got), `die` (exits in
the middle of a prompt), `flood` (thousands of message chunks), `hang` (never answers a prompt),
`cancel` (its first prompt answers `cancelled` once `session/cancel` arrives), `child` (starts
a sleeping grandchild whose pid it reports, then echoes).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import acp
from acp import schema

MODE = sys.argv[1] if len(sys.argv) > 1 else "echo"


def _log(event: str) -> None:
    """Append an event to the file named by ACP_AGENT_LOG (what a test waits for)."""
    path = os.environ.get("ACP_AGENT_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(event + "\n")


class EchoAgent:
    def __init__(self) -> None:
        self._client: Any = None
        self._cancelled: asyncio.Event = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        self._client = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd: str, **kwargs: Any) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=f"s-{os.path.basename(cwd)}")

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> Any:
        return schema.SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancelled.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        text = "".join(getattr(block, "text", "") for block in prompt)
        _log("prompt")
        say = self._client.session_update
        await say(session_id, acp.update_agent_thought_text("THOUGHT-SECRET"))
        await say(session_id, acp.start_tool_call("t1", "NARRATION: reading files"))
        # Interleaved: another session's message must not reach this session's reply.
        await say("another-session", acp.update_agent_message_text("FOREIGN "))
        if MODE == "die":
            await say(session_id, acp.update_agent_message_text("partial "))
            os._exit(3)
        if MODE == "hang":
            await asyncio.Event().wait()
        if MODE == "cancel" and not self._cancelled.is_set():
            await self._cancelled.wait()
            _log("cancelled")
            return acp.PromptResponse(stop_reason="cancelled")
        if MODE == "flood":
            for _ in range(20000):
                await say(session_id, acp.update_agent_message_text("x" * 100))
        if MODE == "ask":
            answer = await self._client.request_permission(
                session_id=session_id,
                tool_call=schema.ToolCallUpdate(tool_call_id="t1", title="Write notes.txt"),
                options=[
                    schema.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                    schema.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                ],
            )
            chosen = getattr(answer.outcome, "option_id", "cancelled")
            await say(session_id, acp.update_agent_message_text(f"permission:{chosen} "))
        if MODE == "child":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
            await say(session_id, acp.update_agent_message_text(f"grandchild:{child.pid} "))
        await say(session_id, acp.update_tool_call("t1", status="completed"))
        await say(session_id, acp.update_agent_message_text("echo: "))
        await say(session_id, acp.update_agent_message_text(text))
        return acp.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(EchoAgent()))
