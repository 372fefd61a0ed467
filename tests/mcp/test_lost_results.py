"""A call whose answer is lost with the connection: sent again once after the reconnect when
the tool is annotated `readOnlyHint` (or `idempotentHint`), never otherwise — over stdio (the
server dies mid-call) and streamable HTTP in both eras (the server restarts mid-call)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from support.mcp_servers import ERAS, ThreadedHttpServer, command
from support.mcp_servers.sdk_eras import app as eras_app
from toolnexus.mcp_source import McpSource, load_mcp_with_context
from toolnexus.types import ToolContext


def _calls(marker: Path) -> int:
    return len(marker.read_text().splitlines())


def _tool(source: McpSource, name: str) -> Any:
    return next(t for t in source.tools if t.name == name)


async def test_stdio_a_read_only_call_is_resent_after_the_respawn(tmp_path: Path) -> None:
    source = await load_mcp_with_context({"d": {"command": command(ERAS), "timeout": 20000}})
    try:
        marker = tmp_path / "read"
        result = await _tool(source, "d_fragile_read").execute({"marker": str(marker)})
        assert (result.output, result.is_error) == ("answered on call 2", False)
        assert _calls(marker) == 2
        assert source.status["d"] == "connected"
        # a tool without annotations: the loss is the answer, the call is not repeated
        plain = tmp_path / "plain"
        lost = await _tool(source, "d_fragile").execute({"marker": str(plain)})
        assert lost.is_error
        assert lost.output.startswith('MCP server "d" exited')
        assert _calls(plain) == 1
        again = await _tool(source, "d_fragile").execute({"marker": str(plain)})  # respawned
        assert (again.output, again.is_error) == ("answered on call 2", False)
    finally:
        await source.close()


async def _lost_mid_call(tmp_path: Path, era: str, tool: str) -> tuple[Any, int, Any]:
    server = ThreadedHttpServer(eras_app("--era", era, "--stateless"))
    port = server.port
    source = await load_mcp_with_context({"web": {"url": server.url(), "timeout": 10000}})
    try:
        marker = tmp_path / f"{era}-{tool}"
        holding = asyncio.Event()
        call = asyncio.ensure_future(
            _tool(source, f"web_{tool}").execute(
                {"marker": str(marker), "how": "hang"},
                ToolContext(on_progress=lambda event: holding.set()),
            )
        )
        await asyncio.wait_for(holding.wait(), 15)  # the server is inside the first call
        server.stop()  # blocks the loop: the new server is up before the client notices
        server = ThreadedHttpServer(eras_app("--era", era, "--stateless"), port=port)
        result = await asyncio.wait_for(call, 30)
        return result, _calls(marker), source.status["web"]
    finally:
        await source.close()
        server.stop()


@pytest.mark.parametrize("era", ["dual", "legacy"])
async def test_http_a_read_only_call_is_resent_after_the_reconnect(
    tmp_path: Path, era: str
) -> None:
    result, calls, status = await _lost_mid_call(tmp_path, era, "fragile_read")
    assert (result.output, result.is_error) == ("answered on call 2", False)
    assert (calls, status) == (2, "connected")


async def test_http_an_idempotent_call_is_resent_after_the_reconnect(tmp_path: Path) -> None:
    result, calls, status = await _lost_mid_call(tmp_path, "dual", "fragile_idempotent")
    assert (result.output, result.is_error) == ("answered on call 2", False)
    assert (calls, status) == (2, "connected")


@pytest.mark.parametrize("era", ["dual", "legacy"])
async def test_http_an_unannotated_call_is_never_resent(tmp_path: Path, era: str) -> None:
    result, calls, _ = await _lost_mid_call(tmp_path, era, "fragile")
    assert result.is_error
    assert result.output.startswith('MCP server "web" connection lost'), result.output
    assert calls == 1


async def test_a_stdio_server_that_cannot_start_again_is_retried_with_backoff(
    tmp_path: Path,
) -> None:
    from support.mcp_servers import SLOW_START
    from support.polling import wait_until

    broken = tmp_path / "broken"
    argv = command(SLOW_START, "--life-tools", "--fail-while", str(broken))
    source = await load_mcp_with_context({"f": {"command": argv}})
    try:
        echo = _tool(source, "f_echo")
        broken.write_text("")  # from now on the server cannot start
        assert (await _tool(source, "f_exit_later").execute({"code": 5})).output == "bye"
        await wait_until(lambda: source.status["f"] == "failed")
        assert (await echo.execute({"text": "a"})).is_error  # the death, reported once
        respawned = await echo.execute({"text": "b"})  # the respawn, which fails
        assert respawned.is_error
        error = source.servers["f"].error or ""
        assert "respawning failed once; tried again by a call after 1 s" in error
        assert "respawning failed once" in respawned.output
        broken.unlink()  # the server can start again: a later call brings it back

        async def answered() -> bool:
            result = await echo.execute({"text": "c"})
            return not result.is_error and result.output == "c"

        await wait_until(answered, timeout=15, check_every=0.2)
        assert source.status["f"] == "connected" and source.servers["f"].error is None
    finally:
        await source.close()
