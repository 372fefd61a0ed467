"""An a2a-sdk 1.x agent whose card declares security schemes and whose JSON-RPC route lets a
request in only when `allow(request)` says so (`401` otherwise); the card itself stays open.
Also the small tool and task answer the auth tests serve with toolnexus."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2 as pb
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from support.a2a_sdk_agent import Executor, Seen, _Recorder, card_for, serve_handler
from toolnexus.types import Tool, ToolContext

__all__ = ["SecuredAgent", "answer_did", "echo_tool", "secured_agent"]


def echo_tool() -> Tool:
    """`echo`: answers `echo: <text>`."""

    def echo(args: dict[str, Any], ctx: ToolContext) -> str:
        return "echo: " + str(args.get("text"))

    return Tool("echo", "Echo", None, "native", echo)


def answer_did(text: str, context_id: str | None) -> str:
    """A served agent's `run_task`: `did: <task>`."""
    return "did: " + text


@dataclass
class SecuredAgent:
    url: str
    seen: Seen
    refused: list[dict[str, str]]  # the headers of each refused request


class _Gate:
    def __init__(
        self,
        app: ASGIApp,
        allow: Callable[[Request], bool],
        refused: list[dict[str, str]],
    ) -> None:
        self.app = app
        self.allow = allow
        self.refused = refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            request = Request(scope)
            if not self.allow(request):
                self.refused.append(dict(request.headers))
                await PlainTextResponse("no entry", status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def secured_agent(
    schemes: Mapping[str, pb.SecurityScheme],
    allow: Callable[[Request], bool],
    *,
    requirements: Mapping[str, list[str]] | None = None,
    streaming: bool = False,
) -> AsyncIterator[SecuredAgent]:
    """Serve the agent on 127.0.0.1 for the block; `requirements` (scheme -> scopes) default
    to every scheme without scopes."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    seen = Seen()
    card = card_for(base, streaming=streaming, name="secured")
    for name, scheme in schemes.items():
        card.security_schemes[name].CopyFrom(scheme)
    wanted = requirements if requirements is not None else {n: [] for n in schemes}
    for name, scopes in wanted.items():
        requirement = card.security_requirements.add()
        requirement.schemes[name].list.extend(scopes)
    handler = DefaultRequestHandler(
        agent_executor=Executor(seen), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
    refused: list[dict[str, str]] = []
    app: Any = _Gate(_Recorder(Starlette(routes=routes), seen), allow, refused)
    async with serve_handler(sock, app, handler):
        yield SecuredAgent(base, seen, refused)
