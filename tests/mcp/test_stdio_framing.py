"""The stdio transport's framing, against a real child that frames its output awkwardly
(`support/stdio_framing.py`): messages written by concurrent calls never interleave, a reply
split across many writes or sharing one write with notifications is read whole, and once the
session is gone the child's output is still drained so it can exit by itself."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from support.polling import wait_until
from toolnexus import Toolkit, create_toolkit

FRAMING = Path(__file__).parents[1] / "support" / "stdio_framing.py"


def _config(exit_marker: Path) -> dict[str, object]:
    command = [sys.executable, str(FRAMING), str(exit_marker)]
    return {"mcpServers": {"f": {"command": command, "timeout": 20000}}, "builtins": False}


@pytest.fixture(scope="module")
async def framing(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Toolkit]:
    toolkit = await create_toolkit(_config(tmp_path_factory.mktemp("framing") / "exit"))
    assert toolkit.mcp_status() == {"f": "connected"}
    yield toolkit
    await toolkit.close()


async def test_concurrent_large_calls_each_get_their_own_answer(framing: Toolkit) -> None:
    # Each request is larger than a pipe holds, so senders wait for the child to read while
    # others write: a message that interleaved with another would be answered wrongly or not.
    texts = [f"call {i} of 24; " * (6000 + i) for i in range(24)]
    results = await asyncio.gather(*(framing.execute("f_echo", {"text": t}) for t in texts))
    assert [r.output for r in results] == texts
    assert not any(r.is_error for r in results)


async def test_a_reply_dribbled_a_few_bytes_at_a_time_is_read_whole(framing: Toolkit) -> None:
    result = await framing.execute("f_dribble", {"text": "piece by piece ✓"})
    assert (result.output, result.is_error) == ("piece by piece ✓", False)


async def test_notifications_sharing_one_write_with_the_reply_all_arrive(
    framing: Toolkit, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result = await framing.execute("f_burst", {"n": 5})
    assert (result.output, result.is_error) == ("after 5", False)
    logged = [m for m in caplog.messages if m.startswith('[toolnexus] MCP server "f": burst')]
    assert logged == [f'[toolnexus] MCP server "f": burst {i}' for i in range(5)]


async def test_output_after_the_session_is_drained_so_the_child_exits_by_itself(
    tmp_path: Path,
) -> None:
    # On stdin EOF the child writes 2 MiB before exiting: it can finish only while its stdout
    # is still read, and the marker is written only then (a child killed on the way is not).
    marker = tmp_path / "exit"
    toolkit = await create_toolkit(_config(marker))
    assert (await toolkit.execute("f_echo", {"text": "hi"})).output == "hi"
    await toolkit.close()
    await wait_until(marker.exists, timeout=10)
    assert marker.read_text() == "clean exit"
