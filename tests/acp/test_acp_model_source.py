"""`toolnexus.acp` as a model source, against real ACP agent processes written with the SDK."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.support.polling import wait_until
from tests.support.processes import live_processes

from toolnexus import create_in_process_client
from toolnexus.acp import (
    ACPError,
    ACPOptions,
    ACPPermissionRequest,
    ACPPermissionTimeoutError,
    load_acp,
)
from toolnexus.errors import SpawnError, ToolnexusError

AGENT = str(Path(__file__).parents[1] / "support" / "acp_agent.py")


def options(mode: str = "echo", **kw: Any) -> tuple[ACPOptions, str]:
    """Options for the test agent in `mode`, and a marker only its command line carries."""
    marker = f"acp-{uuid.uuid4().hex}"
    return ACPOptions(command=sys.executable, args=[AGENT, mode, marker], **kw), marker


def ask(text: str, history: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"messages": [*(history or []), {"role": "user", "content": text}]}


async def no_process_left(marker: str) -> None:
    await wait_until(lambda: not live_processes(marker), timeout=10)


@pytest.fixture(scope="module")
def echo() -> Any:
    client = load_acp(options()[0])
    yield client
    client.close()


async def test_the_reply_is_the_message_chunks_only(echo: Any) -> None:
    model = create_in_process_client(model="acp", generate=echo.generate)
    result = await model.run("hello there")
    assert result.text == "echo: hello there"  # no thought, no tool narration


async def test_later_turns_send_only_what_the_session_lacks(echo: Any) -> None:
    first = await echo.generate(ask("one"))
    history = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": first["content"]},
    ]
    second = await echo.generate(ask("two", history))
    assert second == {"content": "echo: two"}
    # A transcript that does not continue the session's is sent whole, marked as replacing it.
    other = await echo.generate(ask("three", [{"role": "user", "content": "elsewhere"}]))
    assert other["content"].startswith("echo: [This conversation replaces everything earlier")
    assert "[user]\nelsewhere" in other["content"] and other["content"].endswith("[user]\nthree")


async def test_an_acp_agent_is_a_sub_agents_model(echo: Any) -> None:
    from toolnexus.agents import agent

    helper = agent("helper", does="echoes", model="acp")
    result = await helper.run("delegated", in_process=echo.generate)
    assert result.status == "done"
    assert result.text.startswith("echo: ") and "delegated" in result.text


async def test_permission_is_refused_by_default_and_the_reason_reaches_the_host(
    caplog: pytest.LogCaptureFixture,
) -> None:
    opts, _ = options("ask")
    with load_acp(opts) as client, caplog.at_level(logging.WARNING, "toolnexus"):
        reply = await client.generate(ask("write it"))
    assert reply == {"content": "permission:no echo: write it"}
    assert client.refusals == [
        '"Write notes.txt": no permission policy (ACPOptions(permission=...) decides)'
    ]
    assert "ACP agent permission request refused" in caplog.text


async def test_a_host_policy_answers_permission_requests() -> None:
    seen: list[ACPPermissionRequest] = []
    choices = ["maybe", "allow_once"]  # the last one first: an option kind, then no option id

    async def policy(request: ACPPermissionRequest) -> str | None:
        seen.append(request)
        wanted = choices.pop()
        return next((i for i, kind in request.options.items() if kind == wanted), wanted)

    opts, _ = options("ask", permission=policy)
    with load_acp(opts) as client:
        assert await client.generate(ask("go")) == {"content": "permission:yes echo: go"}
        assert seen[0].title == "Write notes.txt"
        assert dict(seen[0].options) == {"yes": "allow_once", "no": "reject_once"}
        assert client.refusals == []
        # A policy choosing no option the agent offered refuses.
        again = (await client.generate(ask("again")))["content"]
        assert again.startswith("permission:no echo: ") and again.endswith("again")
    assert client.refusals == [
        "\"Write notes.txt\": the permission policy chose 'maybe', not one of the options"
    ]


async def test_an_agent_dying_mid_prompt_is_a_precise_error() -> None:
    opts, marker = options("die")
    client = load_acp(opts)
    try:
        with pytest.raises(ACPError, match=r"exited \(status 3\) before answering session/prompt"):
            await client.generate(ask("hi"))
        assert not client.is_alive()
        with pytest.raises(ACPError, match="the ACP session has ended"):
            await client.generate(ask("again"))
    finally:
        client.close()
    await no_process_left(marker)


async def test_a_flood_of_message_chunks_is_cut_at_the_bound() -> None:
    opts, marker = options("flood", max_reply_chars=50_000)
    client = load_acp(opts)
    try:
        with pytest.raises(ACPError, match="reply exceeded 50000 characters"):
            await client.generate(ask("hi"))
    finally:
        client.close()
    await no_process_left(marker)


async def test_an_agent_that_never_answers_times_out_and_is_ended() -> None:
    opts, marker = options("hang", permission_timeout=0.5)
    client = load_acp(opts)
    try:
        with pytest.raises(
            ACPPermissionTimeoutError, match=r"no session/prompt reply within 0\.5s"
        ) as caught:
            await client.generate(ask("hi"))
        assert isinstance(caught.value, ToolnexusError) and isinstance(caught.value, TimeoutError)
        await no_process_left(marker)
    finally:
        client.close()


async def test_cancelling_a_turn_sends_session_cancel(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    opts, _ = options("cancel", env={"ACP_AGENT_LOG": str(log)})
    with load_acp(opts) as client:
        turn = asyncio.ensure_future(client.generate(ask("slow")))
        await wait_until(lambda: log.exists() and "prompt" in log.read_text())
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        assert log.read_text().split() == ["prompt", "cancelled"]
        assert client.is_alive()  # the agent answered `cancelled`: the session goes on
        assert await client.generate(ask("next")) == {"content": "echo: next"}


async def test_close_ends_the_whole_process_tree() -> None:
    opts, marker = options("child")
    client = load_acp(opts)
    reply = await client.generate(ask("hi"))
    grandchild = int(reply["content"].split()[0].removeprefix("grandchild:"))
    assert os.path.exists(f"/proc/{grandchild}")
    await client.aclose()
    await client.aclose()  # idempotent
    await no_process_left(marker)
    await wait_until(lambda: not _runs(grandchild), timeout=10)
    assert "ended" in repr(client)
    with pytest.raises(ACPError, match=r"the ACP session has ended \(closed\)"):
        await client.generate(ask("after close"))


def _runs(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_command_that_cannot_start_is_a_spawn_error(tmp_path: Path) -> None:
    with pytest.raises(SpawnError, match='cannot start "/nonexistent/agent"'):
        load_acp(ACPOptions(command="/nonexistent/agent"))
    with pytest.raises(SpawnError, match="is not a directory"):
        load_acp(ACPOptions(command=sys.executable, cwd=str(tmp_path / "missing")))


def test_a_process_that_is_no_acp_agent_fails_the_handshake() -> None:
    marker = f"acp-{uuid.uuid4().hex}"
    opts = ACPOptions(command=sys.executable, args=["-c", "import sys; sys.exit(5)", marker])
    with pytest.raises(ACPError, match=r"exited \(status 5\) before answering initialize"):
        load_acp(opts)
    assert not live_processes(marker)


def test_a_silent_process_times_out_in_the_handshake() -> None:
    marker = f"acp-{uuid.uuid4().hex}"
    opts = ACPOptions(
        command=sys.executable,
        args=["-c", "import time; time.sleep(60)", marker],
        start_timeout=0.5,
    )
    with pytest.raises(ACPPermissionTimeoutError, match=r"handshake within 0\.5s"):
        load_acp(opts)
    assert not live_processes(marker)
