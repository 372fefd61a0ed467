"""A toolkit and a client served as an ACP agent on stdio (`toolnexus serve --acp`).

Each ACP session is one conversation of the client's store, its id the session id: a prompt
runs `client.stream(..., id=session_id)`, so `session/load` finds the transcript again (in
another process too, with a shared store). Text streams back as `agent_message_chunk`s,
reasoning as `agent_thought_chunk`s, tool calls as `tool_call` / `tool_call_update`s.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import uuid
from typing import Any

from toolnexus._json import compact_json
from toolnexus.errors import RunCancelled, ToolnexusError

# The toolkit and the client are typed `Any`: this module sits below `toolkit.py`, which
# imports it, so naming their classes here would be an import cycle.

__all__ = ["ask_editor", "serve_acp"]

# The editor connection and session of the prompt being served (tools run in its context).
_serving: contextvars.ContextVar[tuple[Any, str] | None] = contextvars.ContextVar(
    "toolnexus_acp_serving", default=None
)


class _ServedAgent:
    """The agent side the SDK calls; sessions live in the client's conversation store."""

    def __init__(self, toolkit: Any, client: Any) -> None:
        self._toolkit = toolkit
        self._client = client
        self._conn: Any = None
        self._sessions: set[str] = set()
        self._cancels: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> Any:
        from acp.schema import AgentCapabilities, Implementation

        import acp
        from toolnexus._version import __version__

        return acp.InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name="toolnexus", version=__version__),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> Any:
        import acp

        session_id = uuid.uuid4().hex
        self._sessions.add(session_id)
        return acp.NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> Any:
        from acp.schema import LoadSessionResponse

        import acp

        messages = await self._client.conversation_store.get(session_id)
        if messages is None:
            raise acp.RequestError.invalid_params({"sessionId": f"no session {session_id!r}"})
        self._sessions.add(session_id)
        for message in messages:
            text = _text(message.get("content"))
            if not text:
                continue
            if message.get("role") == "user":
                await self._conn.session_update(session_id, acp.update_user_message_text(text))
            elif message.get("role") == "assistant":
                await self._conn.session_update(session_id, acp.update_agent_message_text(text))
        return LoadSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        event = self._cancels.get(session_id)
        if event is not None:
            event.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        import acp

        if session_id not in self._sessions:
            raise acp.RequestError.invalid_params({"sessionId": f"no session {session_id!r}"})
        if session_id in self._cancels:
            raise acp.RequestError.invalid_request({"sessionId": "a prompt is already running"})
        text = "".join(str(getattr(block, "text", "") or "") for block in prompt)
        cancel = self._cancels[session_id] = asyncio.Event()
        say = self._conn.session_update
        token = _serving.set((self._conn, session_id))
        try:
            stream = self._client.stream(text, self._toolkit, id=session_id, cancel=cancel)
            async with contextlib.aclosing(stream):
                async for event in stream:
                    update = _update(event)
                    if update is not None:
                        await say(session_id, update)
        except RunCancelled:
            if not cancel.is_set():
                raise
        except ToolnexusError as exc:
            # The editor shows why (messages of ToolnexusErrors never hold a secret).
            raise acp.RequestError.internal_error(
                {"error": type(exc).__name__, "message": str(exc)}
            ) from None
        finally:
            _serving.reset(token)
            del self._cancels[session_id]
        return acp.PromptResponse(stop_reason="cancelled" if cancel.is_set() else "end_turn")


def _update(event: Any) -> Any:
    """The ACP session update of one stream event (`None`: nothing to show)."""
    import acp

    kind = event.get("type")
    if kind == "text" and event.get("delta"):
        return acp.update_agent_message_text(event["delta"])
    if kind == "reasoning" and event.get("delta"):
        return acp.update_agent_thought_text(event["delta"])
    if kind == "tool_call":
        return acp.start_tool_call(
            str(event["id"]),
            str(event["name"]),
            kind="other",
            status="in_progress",
            raw_input=event.get("args"),
        )
    if kind == "tool_result":
        output = event.get("output")
        shown = output if isinstance(output, str) else compact_json(output)
        return acp.update_tool_call(
            str(event["id"]),
            status="failed" if event.get("is_error") else "completed",
            content=[acp.tool_content(acp.text_block(shown))],
            raw_output=shown,
        )
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


async def ask_editor(request: Any) -> dict[str, Any] | None:
    """A client's `wait_for` that asks the editor: a tool's suspension (`pending(...)`) in a
    served prompt becomes a `session/request_permission` with allow and reject options; any
    other outcome (rejected, cancelled, not serving) declines it."""
    from acp.schema import PermissionOption, ToolCallUpdate

    serving = _serving.get()
    if serving is None:
        return None
    conn, session_id = serving
    reply = await conn.request_permission(
        session_id=session_id,
        tool_call=ToolCallUpdate(tool_call_id=str(request.id), title=str(request.prompt)),
        options=[
            PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ],
    )
    chosen = getattr(reply.outcome, "option_id", None)
    return {"id": request.id, "ok": chosen == "allow"}


async def serve_acp(toolkit: Any, client: Any) -> None:
    """Serve `toolkit` with `client` as an ACP agent on stdin/stdout until stdin closes."""
    import acp

    await acp.run_agent(_ServedAgent(toolkit, client))  # type: ignore[arg-type]
