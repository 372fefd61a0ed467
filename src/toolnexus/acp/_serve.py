"""A toolkit and a client served as an ACP agent on stdio (`toolnexus serve --acp`).

Each ACP session is one conversation of the client's store, its id the session id: a prompt
runs `client.stream(..., id=session_id)`, so `session/load` (replayed) and `session/resume`
(not replayed) find the transcript again, in another process too with a shared store. Text
streams back as `agent_message_chunk`s, reasoning as `agent_thought_chunk`s, tool calls as
`tool_call` / `tool_call_update`s (`pending` while a suspension waits for the editor). The MCP
servers the editor gives a session join the toolkit for that session only, until
`session/close` or the end of the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from toolnexus._json import compact_json
from toolnexus.acp._asking import EditorTurn, serving
from toolnexus.acp._session_mcp import connect_session_servers, with_session_tools
from toolnexus.errors import RunCancelled, ToolnexusError

if TYPE_CHECKING:
    from acp.schema import ToolKind

# The toolkit and the client are typed `Any`: this module sits below `toolkit.py`, which
# imports it, so naming their classes here would be an import cycle.

__all__ = ["serve_acp"]


class _Session:
    """One open session: its MCP servers (if the editor gave any) and its running prompt."""

    def __init__(self, mcp: Any) -> None:
        self.mcp = mcp
        self.cancel: asyncio.Event | None = None  # set while a prompt runs

    async def close(self) -> None:
        if self.cancel is not None:
            self.cancel.set()
        if self.mcp is not None:
            await self.mcp.close()


class _ServedAgent:
    """The agent side the SDK calls; transcripts live in the client's conversation store."""

    def __init__(self, toolkit: Any, client: Any) -> None:
        self._toolkit = toolkit
        self._client = client
        self._conn: Any = None
        self._capabilities: Any = None  # the editor's, from `initialize`
        self._sessions: dict[str, _Session] = {}

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any
    ) -> Any:
        from acp.schema import (
            AgentCapabilities,
            Implementation,
            McpCapabilities,
            PromptCapabilities,
            SessionCapabilities,
            SessionCloseCapabilities,
            SessionResumeCapabilities,
        )

        import acp
        from toolnexus._version import __version__

        self._capabilities = client_capabilities
        return acp.InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                session_capabilities=SessionCapabilities(
                    close=SessionCloseCapabilities(), resume=SessionResumeCapabilities()
                ),
            ),
            agent_info=Implementation(name="toolnexus", version=__version__),
        )

    async def _open(self, session_id: str, cwd: str, mcp_servers: Any) -> None:
        """Connect the session's MCP servers (replacing those of an earlier open)."""
        mcp = await connect_session_servers(mcp_servers, cwd)
        earlier = self._sessions.pop(session_id, None)
        if earlier is not None:
            await earlier.close()
        self._sessions[session_id] = _Session(mcp)

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
        import acp

        session_id = uuid.uuid4().hex
        await self._open(session_id, cwd, mcp_servers)
        return acp.NewSessionResponse(session_id=session_id)

    async def _stored(self, session_id: str) -> list[Any]:
        import acp

        messages = await self._client.conversation_store.get(session_id)
        if messages is None:
            raise acp.RequestError.invalid_params({"sessionId": f"no session {session_id!r}"})
        return list(messages)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> Any:
        from acp.schema import LoadSessionResponse

        import acp

        messages = await self._stored(session_id)
        await self._open(session_id, cwd, mcp_servers)
        for message in messages:
            text = _text(message.get("content"))
            if not text:
                continue
            if message.get("role") == "user":
                await self._conn.session_update(session_id, acp.update_user_message_text(text))
            elif message.get("role") == "assistant":
                await self._conn.session_update(session_id, acp.update_agent_message_text(text))
        return LoadSessionResponse()

    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> Any:
        from acp.schema import ResumeSessionResponse

        await self._stored(session_id)
        await self._open(session_id, cwd, mcp_servers)
        return ResumeSessionResponse()

    async def close_session(self, session_id: str, **kwargs: Any) -> Any:
        from acp.schema import CloseSessionResponse

        session = self._sessions.pop(session_id, None)
        if session is not None:
            await session.close()
        return CloseSessionResponse()

    async def close_all(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            with contextlib.suppress(Exception):
                await session.close()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.cancel is not None:
            session.cancel.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        import acp

        session = self._sessions.get(session_id)
        if session is None:
            raise acp.RequestError.invalid_params({"sessionId": f"no session {session_id!r}"})
        if session.cancel is not None:
            raise acp.RequestError.invalid_request({"sessionId": "a prompt is already running"})
        text = _prompt_text(prompt)
        toolkit = self._toolkit
        if session.mcp is not None:
            toolkit = with_session_tools(toolkit, session.mcp)
        cancel = session.cancel = asyncio.Event()
        turn = EditorTurn(self._conn, session_id, self._capabilities)
        token = serving.set(turn)
        try:
            stream = self._client.stream(text, toolkit, id=session_id, cancel=cancel)
            async with contextlib.aclosing(stream):
                async for event in stream:
                    update = _update(event, turn)
                    if update is not None:
                        await self._conn.session_update(session_id, update)
                    if event.get("type") == "tool_result":
                        opened = turn.opened_urls.pop(str(event["id"]), None)
                        if opened is not None:
                            await self._conn.complete_elicitation(elicitation_id=opened)
        except RunCancelled:
            if not cancel.is_set():
                raise
        except ToolnexusError as exc:
            # The editor shows why (messages of ToolnexusErrors never hold a secret).
            raise acp.RequestError.internal_error(
                {"error": type(exc).__name__, "message": str(exc)}
            ) from None
        finally:
            serving.reset(token)
            session.cancel = None
        return acp.PromptResponse(stop_reason="cancelled" if cancel.is_set() else "end_turn")


# The ACP kind of each built-in (the editor picks its icon and follows `locations` by it).
_TOOL_KINDS: dict[str, ToolKind] = {
    "bash": "execute",
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "apply_patch": "edit",
    "grep": "search",
    "glob": "search",
    "webfetch": "fetch",
    "todowrite": "think",
}


def _update(event: Any, turn: EditorTurn) -> Any:
    """The ACP session update of one stream event (`None`: nothing to show); keeps `turn`'s
    open tool calls, so a suspension is known by its call."""
    import acp

    kind = event.get("type")
    if kind == "text" and event.get("delta"):
        return acp.update_agent_message_text(event["delta"])
    if kind == "reasoning" and event.get("delta"):
        return acp.update_agent_thought_text(event["delta"])
    if kind == "tool_call":
        from acp.schema import ToolCallLocation

        turn.open_calls.append(str(event["id"]))
        name, args = str(event["name"]), event.get("args")
        path = args.get("path") if isinstance(args, dict) else None
        return acp.start_tool_call(
            str(event["id"]),
            name,
            kind=_TOOL_KINDS.get(name, "other"),
            status="in_progress",
            locations=[ToolCallLocation(path=path)] if isinstance(path, str) and path else None,
            raw_input=args,
        )
    if kind == "pending" and turn.open_calls:
        # Results come in call order: the suspended call is the first one still open.
        call_id = turn.open_calls[0]
        turn.tool_call_of[event["request"].id] = call_id
        return acp.update_tool_call(call_id, status="pending")
    if kind == "tool_result":
        call_id = str(event["id"])
        if call_id in turn.open_calls:
            turn.open_calls.remove(call_id)
        output = event.get("output")
        shown = output if isinstance(output, str) else compact_json(output)
        return acp.update_tool_call(
            call_id,
            status="failed" if event.get("is_error") else "completed",
            content=[acp.tool_content(acp.text_block(shown))],
            raw_output=shown,
        )
    return None


def _prompt_text(blocks: list[Any]) -> str:
    """The prompt's text: text as it is, a resource link as a Markdown link, an embedded text
    resource with its URI. Images and audio are refused (the agent does not declare them)."""
    import acp

    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"[{block.title or block.name}]({block.uri})")
        elif kind == "resource":
            resource = block.resource
            body = getattr(resource, "text", None)
            if body is None:
                body = f"(binary content, {resource.mime_type or 'no type'}, not shown)"
            parts.append(f'\n<resource uri="{resource.uri}">\n{body}\n</resource>\n')
        else:
            raise acp.RequestError.invalid_params(
                {"prompt": f"this agent takes text and resources, not {kind!r} content"}
            )
    return "".join(parts)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


async def serve_acp(toolkit: Any, client: Any) -> None:
    """Serve `toolkit` with `client` as an ACP agent on stdin/stdout until stdin closes; the
    sessions' MCP servers are closed then."""
    import acp

    agent = _ServedAgent(toolkit, client)
    try:
        # The unstable protocol brings `session/close` and `session/resume` (stable in the
        # schema, still routed as unstable by the SDK) and lets `elicitation/create` be sent.
        await acp.run_agent(agent, use_unstable_protocol=True)  # type: ignore[arg-type]
    finally:
        await agent.close_all()
