"""Server log notifications beyond the basics: the default level at 2026-07-28 keeps info out,
a flood is cut at 100 records per second with a warning counting what was dropped, and
`logging/setLevel` is sent at 2025-11-25 only for an explicit `logLevel` to a server that
declares `logging`."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from support.mcp_fixtures import ErasShared
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.sdk_eras import logging_server
from toolnexus.mcp_source import load_mcp_with_context

DROPPED = re.compile(r'^\[toolnexus\] MCP server "s_legacy" logs too fast; dropped (\d+) messages$')


async def test_the_default_level_keeps_info_out_at_2026(
    eras: ErasShared, caplog: pytest.LogCaptureFixture
) -> None:
    assert eras.source.servers["h_dual"].protocol == "2026-07-28"
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        assert (await eras.tool("h_dual", "chatty").execute()).output == "logged"
    levels = [r.mcp_level for r in caplog.records if getattr(r, "mcp_server", None) == "h_dual"]
    assert levels == ["warning"]


async def test_a_log_flood_is_cut_at_100_a_second(
    eras: ErasShared, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        flooded = await eras.tool("s_legacy", "flood").execute({"count": 250})
        assert flooded.output == "flooded 250"
        # the drop count is told when the second is over, even with nothing logged after it
        deadline = time.monotonic() + 15
        while not any(DROPPED.match(m) for m in caplog.messages):
            assert time.monotonic() < deadline, "no warning about the dropped messages"
            await asyncio.sleep(0.05)
    kept = [m for m in caplog.messages if m.startswith('[toolnexus] MCP server "s_legacy": flood')]
    dropped = [int(match[1]) for m in caplog.messages if (match := DROPPED.match(m))]
    assert kept[:100] == [f'[toolnexus] MCP server "s_legacy": flood {i}' for i in range(100)]
    assert len(kept) + sum(dropped) == 250
    assert len(kept) <= 100 * (len(dropped) + 1)  # at most 100 a second


@pytest.fixture
def logs_server() -> Iterator[ThreadedHttpServer]:
    """A fresh server per test: it remembers every level it was set to."""
    server = ThreadedHttpServer(logging_server().streamable_http_app())
    yield server
    server.stop()


@pytest.mark.parametrize(
    ("entry", "seen"),
    [
        ({"protocol": "legacy", "logLevel": "error"}, "error"),
        ({"protocol": "legacy"}, "unset"),  # the default is not an explicit choice
        ({"protocol": "legacy", "logLevel": None}, "unset"),
        ({"logLevel": "error"}, "unset"),  # 2026-07-28 has no logging/setLevel
    ],
)
async def test_set_level_goes_only_to_an_explicit_handshake_choice(
    logs_server: ThreadedHttpServer, entry: dict[str, Any], seen: str
) -> None:
    source = await load_mcp_with_context({"logs": {"url": logs_server.url(), **entry}})
    try:
        assert source.status["logs"] == "connected", source.servers["logs"].error
        assert source.servers["logs"].capabilities is not None
        assert "logging" in source.servers["logs"].capabilities
        [tool] = source.tools
        assert (await tool.execute()).output == seen
    finally:
        await source.close()
