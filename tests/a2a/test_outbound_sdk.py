"""Our outbound A2A tool against a real a2a-sdk 1.x server, plain and in its v0.3 mode."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from support import a2a_oracle as oracle
from support.a2a_sdk_agent import GOLDEN_PNG_B64, SdkAgent, sdk_agent
from support.polling import wait_until
from toolnexus.a2a import agent, agent_tools
from toolnexus.types import Answer, Tool, ToolContext, ToolResult

pytestmark = pytest.mark.filterwarnings(
    # the SDK server leaves its own task coroutines unawaited when it shuts down
    "ignore::pytest.PytestUnraisableExceptionWarning"
)

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


async def tool_for(peer: SdkAgent, **options: Any) -> Tool:
    [tool] = await agent_tools(agent(peer.url, poll_every=10, **options))
    return tool


async def call(tool: Tool, task: str, **ctx: Any) -> ToolResult:
    return await tool.execute({"task": task}, ToolContext(**ctx))


def requests_of(peer: SdkAgent) -> list[dict[str, Any]]:
    """Every JSON-RPC request the peer received, each checked against the SDK's models."""
    bodies = []
    for request in peer.seen.requests:
        body = json.loads(request["body"])
        version = request["headers"].get("a2a-version")
        oracle.check_request(body, "1.0" if version == "1.0" else "0.3")
        bodies.append({**body, "version": version})
    return bodies


async def test_10_card_polls_with_return_immediately():
    async with sdk_agent(versions=("1.0",)) as peer:
        tool = await tool_for(peer)
        result = await call(tool, "slowecho hi", timeout=10)
        assert (result.output, result.is_error) == ("echo: slowecho hi", False)
        meta = result.metadata or {}
        assert meta["protocol"] == "1.0" and meta["polls"] >= 1 and meta["state"] == "completed"
        assert meta["contextId"] and UUID.fullmatch(meta["taskId"])
        sent = requests_of(peer)
        assert sent[0]["method"] == "SendMessage" and sent[0]["version"] == "1.0"
        assert sent[0]["params"]["configuration"] == {"returnImmediately": True}
        wire = UUID.sub("<uuid>", peer.seen.requests[0]["body"].decode())
        assert wire == (
            '{"jsonrpc":"2.0","id":"<uuid>","method":"SendMessage","params":{"message":'
            '{"messageId":"<uuid>","role":"ROLE_USER","parts":[{"text":"slowecho hi"}]},'
            '"configuration":{"returnImmediately":true}}}'
        )
        assert {r["method"] for r in sent[1:]} == {"GetTask"}


async def test_dual_card_picks_10_and_tenant_is_forwarded():
    async with sdk_agent(versions=("0.3", "1.0"), compat=True, tenant="acme") as peer:
        tool = await tool_for(peer)
        result = await call(tool, "echo dual", timeout=10)
        assert (result.output, (result.metadata or {})["protocol"]) == ("echo: echo dual", "1.0")
        sent = requests_of(peer)
        assert all(r["params"].get("tenant") == "acme" for r in sent)


@pytest.mark.parametrize("streaming", [False, True])
async def test_03_only_card_in_compat_mode(streaming):
    async with sdk_agent(versions=("0.3",), compat=True, streaming=streaming) as peer:
        tool = await tool_for(peer)
        result = await call(tool, "echo old", timeout=10)
        assert (result.output, result.is_error) == ("echo: echo old", False)
        meta = result.metadata or {}
        assert meta["protocol"] == "0.3"
        sent = requests_of(peer)
        assert sent[0]["method"] == ("message/stream" if streaming else "message/send")
        assert {r["version"] for r in sent} == {"0.3"}
        if streaming:
            assert meta["polls"] == 0 and len(sent) == 1
        else:
            assert sent[0]["params"]["configuration"] == {"blocking": False}
            assert meta["polls"] >= 1 and {r["method"] for r in sent[1:]} == {"tasks/get"}


async def test_streaming_needs_no_get_task():
    async with sdk_agent(streaming=True) as peer:
        tool = await tool_for(peer)
        result = await call(tool, "slowecho streamed", timeout=10)
        assert (result.output, (result.metadata or {})["polls"]) == ("echo: slowecho streamed", 0)
        assert [r["method"] for r in requests_of(peer)] == ["SendStreamingMessage"]
        assert "configuration" not in requests_of(peer)[0]["params"]
        opted_out = await tool_for(peer, streaming=False)
        peer.seen.requests.clear()
        assert (await call(opted_out, "echo x", timeout=10)).output == "echo: echo x"
        assert requests_of(peer)[0]["method"] == "SendMessage"


async def test_files_and_data_parts_come_back():
    async with sdk_agent() as peer:
        result = await call(await tool_for(peer), "files", timeout=10)
        assert result.output == 'see\n{"x":1.0}'
        assert result.parts == [
            {
                "type": "image",
                "mimeType": "image/png",
                "data": GOLDEN_PNG_B64,
                "name": "fixture.png",
            }
        ]


@pytest.mark.parametrize(("versions", "compat"), [(("1.0",), False), (("0.3",), True)])
async def test_timeout_and_signal_cancel_the_remote_task(versions, compat):
    async with sdk_agent(versions=versions, compat=compat) as peer:
        tool = await tool_for(peer)
        result = await call(tool, "sleep", timeout=0.3)
        meta = result.metadata or {}
        assert result.is_error
        assert result.output == f"A2A task {meta['taskId']} timed out after 300ms (state=working)"
        await wait_until(peer.seen.cancel_called.is_set)
        assert peer.seen.canceled == [meta["taskId"]]
        cancel = [r for r in requests_of(peer) if "ancel" in r["method"]]
        assert cancel[0]["method"] == ("CancelTask" if versions == ("1.0",) else "tasks/cancel")
        peer.seen.cancel_called.clear()
        peer.seen.requests.clear()
        signal = asyncio.Event()
        job = asyncio.ensure_future(call(tool, "sleep", signal=signal, timeout=10))
        polled = ("GetTask", "tasks/get")
        await wait_until(lambda: any(m in polled for m in peer.seen.methods()))
        signal.set()
        result = await job
        meta = result.metadata or {}
        assert (result.output, meta["state"]) == (f"A2A task {meta['taskId']} canceled", "canceled")
        await wait_until(peer.seen.cancel_called.is_set)


async def test_failures_and_direct_messages():
    async with sdk_agent() as peer:
        tool = await tool_for(peer)
        failed = await call(tool, "fail", timeout=10)
        meta = failed.metadata or {}
        assert failed.output == f"A2A task {meta['taskId']} failed: it broke"
        direct = await call(tool, "message", timeout=10)
        assert (direct.output, direct.is_error, (direct.metadata or {})["state"]) == (
            "direct answer",
            False,
            "completed",
        )


@pytest.mark.parametrize("streaming", [False, True])
async def test_input_required_suspends_and_resumes(streaming):
    async with sdk_agent(streaming=streaming) as peer:
        tool = await tool_for(peer)
        waiting = await call(tool, "ask", timeout=10)
        meta = waiting.metadata or {}
        request = meta["pending"]
        assert waiting.is_error and waiting.output == "What is your name?"
        assert request.id.startswith("a2a-") and request.kind == "input"
        assert request.prompt == "What is your name?"
        assert request.data == {
            "schema": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "Your reply to the agent."}
                },
                "required": ["text"],
            },
            "a2a": {"agent": "sdk agent", "taskId": meta["taskId"], "contextId": meta["contextId"]},
        }
        answer = Answer(id=request.id, ok=True, data={"text": "Ada"})
        done = await call(tool, "ask", answer=answer, timeout=10)
        assert (done.output, done.is_error) == ("hello Ada", False)
        resume = [r for r in requests_of(peer) if "message" in r["params"]][-1]
        message = resume["params"]["message"]
        assert (message["taskId"], message["contextId"]) == (meta["taskId"], meta["contextId"])
        again = await call(tool, "ask", answer=answer, timeout=10)
        assert again.output == f"A2A answer {request.id} matches no pending task"


async def test_auth_required_is_an_authorization_request():
    async with sdk_agent() as peer:
        waiting = await call(await tool_for(peer), "auth", timeout=10)
        request = (waiting.metadata or {})["pending"]
        assert (request.kind, request.prompt) == ("authorization", "Sign in please")


async def test_a_cut_stream_goes_on_by_polling():
    """A 1.0 peer whose stream ends after the first event: the call polls the known task."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from support.asgi_server import running

    task = {"id": "t-cut", "contextId": "c-cut", "status": {"state": "TASK_STATE_WORKING"}}
    done = {
        **task,
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a", "parts": [{"text": "after the cut"}]}],
    }
    methods: list[str] = []
    base = ""

    async def card(request: Request) -> Response:
        return JSONResponse(
            {
                "name": "cutter",
                "supportedInterfaces": [
                    {"url": base + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
                ],
                "capabilities": {"streaming": True},
                "skills": [{"id": "cut", "name": "cut", "description": "Cuts", "tags": []}],
            }
        )

    async def rpc(request: Request) -> Response:
        body = json.loads(await request.body())
        methods.append(body["method"])
        if body["method"] == "SendStreamingMessage":

            async def events():  # type: ignore[no-untyped-def]
                event = {"jsonrpc": "2.0", "id": body["id"], "result": {"task": task}}
                yield f"data: {json.dumps(event)}\n\n".encode()

            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": done})

    app = Starlette(
        routes=[
            Route("/.well-known/agent-card.json", card, methods=["GET"]),
            Route("/", rpc, methods=["POST"]),
        ]
    )
    async with running(app) as url:
        base = url
        [tool] = await agent_tools(agent(url, poll_every=10))
        result = await call(tool, "go", timeout=10)
    assert (result.output, result.is_error) == ("after the cut", False)
    assert (result.metadata or {})["polls"] == 1
    assert methods == ["SendStreamingMessage", "GetTask"]


async def test_closing_the_toolkit_cancels_tasks_awaiting_a_reply():
    from toolnexus.toolkit import create_toolkit

    async with sdk_agent() as peer:
        toolkit = await create_toolkit(agents=[agent(peer.url, poll_every=10)], builtins=False)
        [name] = [t.name for t in toolkit.tools() if t.source == "a2a"]
        waiting = await toolkit.execute(name, {"task": "ask"}, ToolContext(timeout=10))
        task_id = (waiting.metadata or {})["taskId"]
        assert (waiting.metadata or {})["state"] == "input-required"
        await toolkit.close()
        await wait_until(peer.seen.cancel_called.is_set)
        assert peer.seen.canceled == [task_id]
