"""Shared MCP servers for the MCP source tests.

Three HTTP servers (streamable, SSE-only, bearer-protected; uvicorn on 127.0.0.1 in threads) run
for the whole session, and one `McpSource` loaded over them plus two stdio servers serves the
read-only tests. Each stdio server is a real child process.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest

from support.mcp_fixtures import TOKEN, TOKEN_VAR, Asker, Shared
from support.mcp_servers import BASIC, PAGED, ThreadedHttpServer, command
from support.mcp_servers.basic_server import http_app
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
            },
            "paged": {"command": command(PAGED, "--pages", "3", "--per-page", "2")},
            "remote": {"url": http_servers["http"].url(), "timeout": 20000},
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
