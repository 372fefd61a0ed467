"""A real a2a-sdk 1.x agent on loopback, for our outbound tool to talk to.

The first word of the task picks what the executor does:

| task        | behaviour |
|-------------|-----------|
| `echo X`    | completes with the artifact text `echo: echo X` |
| `sleep`     | works until canceled (its `cancel()` records the task id) |
| `slowecho`  | waits 0.3 s, then completes like `echo` |
| `fail`      | fails with the status message `it broke` |
| `ask`       | input-required `What is your name?`; the reply `X` completes with `hello X` |
| `auth`      | auth-required `Sign in please` |
| `message`   | answers with a Message (no task) |
| `files`     | completes with a text, a data and a raw PNG part |

Every request body that reaches the server is recorded with its headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from support.media import FIXTURE_PNG, GOLDEN_B64
from support.polling import wait_until

PNG = FIXTURE_PNG.read_bytes()
GOLDEN_PNG_B64 = GOLDEN_B64


@dataclass
class Seen:
    requests: list[dict[str, Any]] = field(default_factory=list)  # {"headers", "body"}
    canceled: list[str] = field(default_factory=list)
    cancel_called: asyncio.Event = field(default_factory=asyncio.Event)

    def methods(self) -> list[str]:
        import json

        out = []
        for request in self.requests:
            try:
                out.append(json.loads(request["body"])["method"])
            except (ValueError, KeyError, TypeError):
                out.append("?")
        return out


class Executor(AgentExecutor):
    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        text = context.get_user_input()
        task = context.current_task
        word = text.split(" ", 1)[0]
        if task is None and word == "message":
            await event_queue.enqueue_event(
                pb.Message(
                    message_id="m-direct",
                    role=pb.ROLE_AGENT,
                    parts=[pb.Part(text="direct answer")],
                    context_id=context.context_id or "",
                )
            )
            return
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == pb.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([pb.Part(text=f"hello {text}")], name="answer")
            await updater.complete()
            return
        await updater.start_work()
        if word == "sleep":
            await asyncio.sleep(60)
            return
        if word == "slowecho":
            await asyncio.sleep(0.3)
        if word == "fail":
            await updater.failed(updater.new_agent_message([pb.Part(text="it broke")]))
            return
        if word == "ask":
            await updater.requires_input(
                updater.new_agent_message([pb.Part(text="What is your name?")])
            )
            return
        if word == "auth":
            await updater.requires_auth(updater.new_agent_message([pb.Part(text="Sign in please")]))
            return
        if word == "files":
            data = struct_pb2.Value()
            data.struct_value.update({"x": 1})
            parts = [
                pb.Part(text="see"),
                pb.Part(data=data),
                pb.Part(raw=PNG, media_type="image/png", filename="fixture.png"),
            ]
            await updater.add_artifact(parts, name="answer")
            await updater.complete()
            return
        await updater.add_artifact([pb.Part(text=f"echo: {text}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.seen.canceled.append(context.task_id or "")
        self.seen.cancel_called.set()
        task = context.current_task
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        if task is not None:
            await updater.cancel()


class _Recorder:
    def __init__(self, app: ASGIApp, seen: Seen) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.seen.requests.append({"headers": headers, "body": body, "path": scope["path"]})
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def card_for(
    base: str,
    *,
    versions: tuple[str, ...] = ("1.0",),
    streaming: bool = False,
    tenant: str = "",
    name: str = "sdk agent",
) -> pb.AgentCard:
    interfaces = [
        pb.AgentInterface(
            url=base + "/", protocol_binding="JSONRPC", protocol_version=v, tenant=tenant
        )
        for v in versions
    ]
    return pb.AgentCard(
        name=name,
        description="An a2a-sdk agent",
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=pb.AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="echo", name="echo", description="Echoes", tags=["echo"])],
    )


@dataclass
class SdkAgent:
    url: str
    seen: Seen


@contextlib.asynccontextmanager
async def serve_handler(
    sock: socket.socket, app: ASGIApp, handler: DefaultRequestHandler
) -> AsyncIterator[None]:
    """Serve `app` (built on `handler`) on the bound `sock` for the block; afterwards stop the
    server and close the handler. Closing matters: a task left interrupted (input or auth
    required) keeps a producer waiting for its next request; dropped unclosed, that producer
    is finalized by the garbage collector in whatever thread runs next, where its teardown
    once blocked another test's server thread for good."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", ws="none"))
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        await wait_until(lambda: server.started or task.done(), timeout=30)
        if task.done():
            task.result()
        yield
    finally:
        server.should_exit = True
        await handler.aclose()  # ends every task's producer and consumer, and open streams
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, 5)
        sock.close()


@contextlib.asynccontextmanager
async def sdk_agent(
    *,
    versions: tuple[str, ...] = ("1.0",),
    streaming: bool = False,
    compat: bool = False,
    tenant: str = "",
) -> AsyncIterator[SdkAgent]:
    """Serve an a2a-sdk agent on 127.0.0.1 (ephemeral port) for the duration of the block."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    seen = Seen()
    card = card_for(base, versions=versions, streaming=streaming, tenant=tenant)
    handler = DefaultRequestHandler(
        agent_executor=Executor(seen), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=compat),
    ]
    async with serve_handler(sock, _Recorder(Starlette(routes=routes), seen), handler):
        yield SdkAgent(base, seen)
