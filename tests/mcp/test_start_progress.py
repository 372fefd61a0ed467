"""A slow MCP start is not silent: a line per server still starting after 2 s, and a start
that times out says what in the server's entry fixes it."""

from __future__ import annotations

import logging

import pytest

from support.mcp_servers import SLOW_START, command
from toolnexus.mcp_source import load_mcp_with_context

MODERN = "2026-07-28"


async def test_a_hung_start_reports_progress_then_names_the_remedy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolnexus")
    source = await load_mcp_with_context(
        {
            "probe": {
                "command": command(SLOW_START, "--hang", "server/discover"),
                "protocol": MODERN,
                "timeout": 2500,
            },
            "init": {
                "command": command(SLOW_START, "--hang", "initialize"),
                "protocol": "legacy",
                "timeout": 2500,
            },
            "quick": {"command": command(SLOW_START)},
        }
    )
    try:
        servers = source.servers
        assert servers["quick"].status == "connected"
        assert (servers["probe"].status, servers["probe"].error) == (
            "failed",
            "discover timed out after 2500 ms; a server older than MCP 2026-07-28 needs "
            '"protocol": "legacy" in its entry, a slow one a larger "timeout" (ms)',
        )
        assert (servers["init"].status, servers["init"].error) == (
            "failed",
            'initialize timed out after 2500 ms; a slow server needs a larger "timeout" (ms) '
            "in its entry",
        )
    finally:
        await source.close()
    progress = [
        r.getMessage()
        for r in caplog.records
        if r.name == "toolnexus" and "still starting" in r.getMessage()
    ]
    assert sorted(progress) == [
        '[toolnexus] MCP server "init" is still starting after 2 s (waiting for initialize; '
        'each phase may take up to its "timeout" of 2500 ms)',
        '[toolnexus] MCP server "probe" is still starting after 2 s (waiting for discover; '
        'each phase may take up to its "timeout" of 2500 ms)',
    ]
    assert all(
        r.levelno == logging.INFO for r in caplog.records if "still starting" in r.getMessage()
    )
