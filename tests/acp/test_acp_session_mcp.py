"""`serve --acp`: the MCP servers an editor gives a session (stdio, HTTP, SSE) are that
session's tools only, closed with it; bad ones fail `session/new` with an error naming them.
A real `toolnexus serve --acp` process, driven by the SDK's client side."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli_runner import BASIC_SERVER, QUICK_SERVER, clean_env
from tests.support.fake_llm import FakeLLM, call, text, tools
from tests.support.mcp_servers import ThreadedHttpServer, alive
from tests.support.mcp_servers.basic_server import http_app
from tests.support.polling import wait_until

import acp
from acp import schema

TOKEN = "editor-token-4711"


class Editor:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, **kwargs: Any) -> Any:
        return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))

    def result(self, call_id: str) -> str:
        done = [
            u
            for u in self.updates
            if u.session_update == "tool_call_update"
            and u.tool_call_id == call_id
            and u.status in ("completed", "failed")
        ]
        return str(done[-1].raw_output)


def serve_args(llm: FakeLLM, store: Path) -> list[str]:
    return [
        "-m", "toolnexus", "serve", "--acp", "--no-builtins",
        "--base-url", llm.url + "/v1", "--style", "openai", "--model", "m", "--api-key", "k",
        "--store", f"sqlite:{store}",
    ]  # fmt: skip


def stdio(name: str, script: Path, *args: str, **env: str) -> schema.McpServerStdio:
    return schema.McpServerStdio(
        name=name,
        command=sys.executable,
        args=[str(script), *args],
        env=[schema.EnvVariable(name=k, value=v) for k, v in env.items()],
    )


def declared(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


async def prompt(conn: Any, session_id: str) -> None:
    done = await conn.prompt(session_id=session_id, prompt=[acp.text_block("go")])
    assert done.stop_reason == "end_turn"


@pytest.fixture(scope="module")
def remote() -> Any:
    secure = ThreadedHttpServer(http_app("--http", "0", "--token", TOKEN, "--name", "secure"))
    legacy = ThreadedHttpServer(http_app("--sse", "0", "--name", "legacy"))
    yield secure, legacy
    secure.stop()
    legacy.stop()


async def test_the_editors_servers_are_the_sessions_own_and_bad_ones_are_refused(
    tmp_path: Path, remote: Any
) -> None:
    secure, legacy = remote
    servers = [
        stdio("local", BASIC_SERVER, FROM_EDITOR="yes"),
        schema.HttpMcpServer(
            type="http",
            name="web",
            url=secure.url(),
            headers=[schema.HttpHeader(name="Authorization", value=f"Bearer {TOKEN}")],
        ),
        schema.SseMcpServer(type="sse", name="old", url=legacy.url("/sse"), headers=[]),
    ]
    editor = Editor()
    with FakeLLM() as llm:
        async with acp.spawn_agent_process(
            editor, sys.executable, *serve_args(llm, tmp_path / "c.db"), env=clean_env()
        ) as (conn, _process):
            hello = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            mcp = hello.agent_capabilities.mcp_capabilities
            assert (mcp.http, mcp.sse) == (True, True)
            assert hello.agent_capabilities.session_capabilities.close is not None

            async def refused(*servers: Any) -> str:
                with pytest.raises(acp.RequestError) as failed:
                    await conn.new_session(cwd=str(tmp_path), mcp_servers=list(servers))
                assert failed.value.code == -32602
                return str(failed.value.data["mcpServers"])

            good = stdio("good", QUICK_SERVER, "--life-tools", TN_MARK=str(tmp_path))
            broken = schema.McpServerStdio(
                name="broken", command="/nonexistent/mcp-server", args=[], env=[]
            )
            said = await refused(good, broken)
            assert said.startswith('MCP server "broken" failed: ') and "good" not in said
            # The good server of the refused session was not left running.
            await wait_until(lambda: not _marked(str(tmp_path)), timeout=10)

            mcp_over_acp = schema.AcpMcpServer(type="acp", name="inline", server_id="s1")
            assert '"inline": the "acp" transport' in await refused(mcp_over_acp)
            expanded = schema.HttpMcpServer(
                type="http",
                name="leaky",
                url="http://127.0.0.1:9/mcp",
                headers=[schema.HttpHeader(name="X-Key", value="${OPENAI_API_KEY}")],
            )
            assert 'header "X-Key" holds "${"' in await refused(expanded)
            twice = await refused(good, stdio("good", QUICK_SERVER))
            assert 'MCP server "good": the name is given twice' in twice

            first = (await conn.new_session(cwd=str(tmp_path), mcp_servers=servers)).session_id
            other = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id

            llm.push(
                tools(
                    call("local_env", {"name": "FROM_EDITOR"}, id="c1"),
                    call("local_cwd", {}, id="c2"),
                    call("local_pid", {}, id="c3"),
                    call("web_auth_header", {}, id="c4"),
                    call("old_echo", {"text": "over sse"}, id="c5"),
                ),
                text("ok"),
            )
            await prompt(conn, first)
            offered = declared(llm.requests[-2].body)
            assert {"local_env", "web_auth_header", "old_echo"} <= set(offered)
            assert editor.result("c1") == "yes"
            assert editor.result("c2") == str(tmp_path)
            assert editor.result("c4") == "present"
            assert editor.result("c5") == "over sse"
            server_pid = int(editor.result("c3"))
            assert alive(server_pid)

            # Another session of the same editor has none of them.
            llm.push(text("plain"))
            await prompt(conn, other)
            assert not any(
                n.startswith(("local_", "web_", "old_")) for n in declared(llm.requests[-1].body)
            )

            # session/close ends the session's servers.
            await conn.close_session(session_id=first)
            await wait_until(lambda: not alive(server_pid), timeout=10)
            with pytest.raises(acp.RequestError, match="Invalid params"):
                await conn.prompt(session_id=first, prompt=[acp.text_block("again")])

            # session/resume opens the stored conversation again, with the servers it is given.
            resumed = await conn.resume_session(
                session_id=first,
                cwd=str(tmp_path),
                mcp_servers=[stdio("again", QUICK_SERVER, "--life-tools")],
            )
            assert resumed is not None
            llm.push(tools(call("again_pid", {}, id="c6")), text("ok"))
            await prompt(conn, first)
            sent = llm.requests[-2].body["messages"]
            assert [m["content"] for m in sent if m["role"] == "user"] == ["go", "go"]
            last_pid = int(editor.result("c6"))
            assert alive(last_pid)
        # The editor went away: the served process ends, and with it every session's servers.
        await wait_until(lambda: not alive(last_pid), timeout=10)
        await wait_until(lambda: not _marked(str(tmp_path)), timeout=10)


def _marked(mark: str) -> list[int]:
    """Pids of live processes whose environment has `TN_MARK=<mark>`."""
    needle = f"TN_MARK={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if needle in fh.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                continue
    return [pid for pid in found if alive(pid)]
