"""Shared MCP servers for the MCP source tests.

Three HTTP servers (streamable, SSE-only, bearer-protected; uvicorn on 127.0.0.1 in threads) run
for the whole session, and one `McpSource` loaded over them plus two stdio servers serves the
read-only tests. Each stdio server is a real child process.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from support.mcp_fixtures import TOKEN, TOKEN_VAR, Asker, ErasShared, Shared
from support.mcp_servers import BASIC, ERAS, PAGED, ThreadedHttpServer, command
from support.mcp_servers.basic_server import http_app
from support.mcp_servers.sdk_eras import app as eras_app
from support.mcp_servers.sdk_eras import input_app
from toolnexus.mcp_source import load_mcp_with_context


@pytest.fixture(scope="session")
def http_servers() -> Iterator[dict[str, ThreadedHttpServer]]:
    """`http` (streamable HTTP), `sse` (legacy SSE only), `secure` (bearer token required)."""
    servers = {
        "http": ThreadedHttpServer(http_app("--http", "0", "--name", "remote")),
        "sse": ThreadedHttpServer(http_app("--sse", "0", "--name", "legacy")),
        "secure": ThreadedHttpServer(http_app("--http", "0", "--token", TOKEN, "--name", "secure")),
    }
    os.environ[TOKEN_VAR] = TOKEN
    yield servers
    os.environ.pop(TOKEN_VAR, None)
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="session")
async def shared(
    http_servers: dict[str, ThreadedHttpServer], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Shared]:
    cwd = tmp_path_factory.mktemp("mcp-cwd")
    asker = Asker()
    config = {
        "mcpServers": {
            "basic": {
                # stderr chatter is captured, never mixed into the protocol stream
                "command": command(BASIC, "--stderr", "basic: warming up"),
                "env": {"TN_A": "from-env", "TN_B": "only-env"},
                "environment": {"TN_A": "from-environment"},
                "cwd": str(cwd),
                "timeout": 20000,
                # push elicitation and clientInfo exist only in the handshake era
                "protocol": "legacy",
            },
            "paged": {"command": command(PAGED, "--pages", "3", "--per-page", "2")},
            "remote": {"url": http_servers["http"].url(), "timeout": 20000, "protocol": "legacy"},
            "legacy": {"url": http_servers["sse"].url("/sse"), "timeout": 20000},
            "secure": {
                "type": "remote",
                "url": http_servers["secure"].url(),
                "headers": {"Authorization": f"Bearer ${{{TOKEN_VAR}}}"},
            },
            "off": {"command": "never-started", "disabled": True},
        }
    }
    source = await load_mcp_with_context(config, asker)
    yield Shared(source, asker, cwd, {t.name: t for t in source.tools}, http_servers)
    await source.close()


ERA_NAMES = ("dual", "legacy", "modern")


@pytest.fixture(scope="session")
def era_http() -> Iterator[dict[str, ThreadedHttpServer]]:
    """The SDK era server over streamable HTTP, one per era (dual, legacy-only, modern-only)."""
    servers = {era: ThreadedHttpServer(eras_app("--era", era)) for era in ERA_NAMES}
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="session")
async def eras(era_http: dict[str, ThreadedHttpServer]) -> AsyncIterator[ErasShared]:
    """One source over the era server in every era and transport: `s_<era>` (stdio child) and
    `h_<era>` (HTTP), all in `auto`, with a recording `wait_for`."""
    asker = Asker()
    config: dict[str, Any] = {}
    for era in ERA_NAMES:
        config[f"s_{era}"] = {"command": command(ERAS, "--era", era), "timeout": 20000}
        config[f"h_{era}"] = {"url": era_http[era].url(), "timeout": 20000}
    source = await load_mcp_with_context(config, asker)
    yield ErasShared(source, asker, era_http)
    await source.close()


@pytest.fixture(scope="session")
def asks() -> Iterator[ThreadedHttpServer]:
    """`input_server()` over HTTP (2026-07-28 only): a resource and a prompt that ask for input
    first (by input requests), sampling, a never-ending asker, a resource that never answers."""
    server = ThreadedHttpServer(input_app())
    yield server
    server.stop()
