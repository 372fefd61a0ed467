"""Helpers shared by the MCP source tests (`tests/mcp`): the token, a recording `wait_for`, and
the shape of the shared load. Kept out of `conftest.py` so tests import them by a unique name.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.mcp_servers import ThreadedHttpServer
from toolnexus.mcp_source import McpSource
from toolnexus.types import Answer, Request, Tool

TOKEN_VAR = "TN_TEST_MCP_TOKEN"
TOKEN = "s3cret-token-value"


@dataclass
class Asker:
    """A `wait_for` that records every request and answers with `answer(request)`."""

    requests: list[Request] = field(default_factory=list)
    answer: Any = None

    async def __call__(self, request: Request) -> Answer | None:
        self.requests.append(request)
        await asyncio.sleep(0)
        return self.answer(request) if self.answer is not None else None


@dataclass
class Shared:
    source: McpSource
    asker: Asker
    cwd: Path
    tools: dict[str, Tool]
    http: dict[str, ThreadedHttpServer]


@dataclass
class ErasShared:
    source: McpSource
    asker: Asker
    http: dict[str, ThreadedHttpServer]

    def tool(self, server: str, name: str) -> Tool:
        wanted = f"{server}_{name}"
        return next(t for t in self.source.tools if t.name == wanted)
