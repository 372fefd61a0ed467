"""`toolnexus serve`: the MCP gateway (stdio, streamable HTTP) and the A2A agent, for real.

Serving runs as the real command in a subprocess; the errors it reports before serving anything
run in-process.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from support.cli_runner import (
    EXAMPLE_SKILLS,
    QUICK_TOOLS,
    REPO,
    broken_server,
    clean_env,
    one_line_error,
    processes_tagged,
    start_serve,
    stop_serve,
    tagged_env,
    write_config,
)
from support.fake_llm import FakeLLM, text
from support.polling import wait_until
from toolnexus.builtin import BUILTIN_NAMES
from toolnexus.client._errors import NO_API_KEY_MESSAGE


async def test_stdio_gateway_lists_and_calls_every_source(quick_config: Path) -> None:
    env, tag = tagged_env()
    params = StdioServerParameters(
        command=sys.executable,
        # -v: a log line per call goes to stderr; stdout must carry nothing but protocol.
        args=["-m", "toolnexus", "serve", "--stdio", "-v", "--config", str(quick_config),
              "--skills", str(EXAMPLE_SKILLS)],
        env=env,
        cwd=str(REPO),
    )  # fmt: skip
    async with Client(params) as client:
        listed = await client.list_tools()
        # The built-ins are in, as for `tools` and `run`, unless --no-builtins is given.
        assert [t.name for t in listed.tools] == [
            *(f"quick_{n}" for n in QUICK_TOOLS),
            "skill",
            *BUILTIN_NAMES,
        ]
        echoed = await client.call_tool("quick_echo", {"text": "through the gateway"})
        assert (echoed.content[0].text, echoed.is_error) == ("through the gateway", False)
        skill = await client.call_tool("skill", {"name": "hello-world"})
        assert skill.content[0].text.startswith('<skill_content name="hello-world">')
        bad = await client.call_tool("skill", {"name": 5})
        assert bad.is_error and "Invalid arguments for tool skill" in bad.content[0].text
    # The gateway exited when its stdin closed, and took its MCP server with it.
    assert processes_tagged(tag) == set()


async def test_http_gateway_serves_until_sigint(quick_config: Path) -> None:
    env, tag = tagged_env()
    proc, urls = await start_serve(
        "--mcp", "--config", str(quick_config), "--port", "0", "--builtins",
        "--tools", "quick_echo", "--tools", "read", "--auth-token", "s3cret", env=env,
    )  # fmt: skip
    url = urls["mcp"]
    try:
        assert url.startswith("http://127.0.0.1:")
        assert urls["tool count"] == "2"  # the exposed tools, not the whole toolkit
        async with httpx2.AsyncClient() as http:
            denied = await http.post(url, json={})
            assert denied.status_code == 401
        async with (
            httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}) as authed,
            Client(streamable_http_client(url, http_client=authed)) as client,
        ):
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["quick_echo", "read"]
            echoed = await client.call_tool("quick_echo", {"text": "hello"})
            assert echoed.content[0].text == "hello"
    finally:
        stdout, stderr = await stop_serve(proc, signal.SIGINT)
    assert proc.returncode == 0, stderr.decode()
    assert stdout == b""  # the URL and notes go to stderr
    assert "toolnexus: stopped" in stderr.decode()
    assert processes_tagged(tag) == set()


async def test_a2a_agent_answers_tasks_until_sigterm(fake_llm: FakeLLM) -> None:
    fake_llm.push(text("Hello from the agent."))
    # The token comes from the environment this time.
    env = clean_env(TOOLNEXUS_AUTH_TOKEN="from-env")
    proc, urls = await start_serve(
        "--a2a", "--skills", str(EXAMPLE_SKILLS), "--port", "0",
        "--base-url", fake_llm.url + "/v1", "--style", "openai", "--model", "m", "--api-key", "k",
        env=env,
    )  # fmt: skip
    try:
        base = urls["a2a"]
        async with httpx2.AsyncClient() as anonymous:
            # The card is public (a2a.md §2.1 as amended): it says how to authenticate.
            public = await anonymous.get(base + ".well-known/agent-card.json")
            assert public.status_code == 200 and "bearer" in public.text.lower()
            denied = await anonymous.post(base, json={"jsonrpc": "2.0", "id": 1, "method": "x"})
            assert (denied.status_code, denied.text) == (401, "unauthorized")
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer from-env"}) as http:
            card = (await http.get(base + ".well-known/agent-card.json")).json()
            assert [s["id"] for s in card["skills"]] == ["hello-world"]
            assert card["url"] == base
            send = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": {"role": "user", "parts": [{"kind": "text", "text": "hi"}]}},
            }
            task = (await http.post(base, json=send)).json()["result"]

            async def finished() -> dict[str, Any] | None:
                get = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task["id"]}}
                current: dict[str, Any] = (await http.post(base, json=get)).json()["result"]
                return current if current["status"]["state"] in ("completed", "failed") else None

            final = await wait_until(finished, timeout=60)
        assert final["status"]["state"] == "completed", final
        assert final["artifacts"][0]["parts"][0]["text"] == "Hello from the agent."
        assert fake_llm.requests[0].body["messages"][-1] == {"role": "user", "content": "hi"}
    finally:
        _stdout, stderr = await stop_serve(proc, signal.SIGTERM)
    assert proc.returncode == 0, stderr.decode()
    assert "toolnexus: stopped" in stderr.decode()


# -- one-line errors before serving (exit code 2), in-process -------------------------------------


def test_a2a_without_an_api_key_is_one_line(cli, fake_llm: FakeLLM) -> None:
    done = cli("serve", "--a2a", "--base-url", fake_llm.url, "--style", "anthropic", "--model", "m")
    assert one_line_error(done) == f"toolnexus: error: {NO_API_KEY_MESSAGE}"


def test_port_in_use_is_one_line(cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error(cli("serve", "--mcp", "--port", str(port)))
    assert line == f"toolnexus: error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_an_ipv6_host_needs_no_brackets(cli) -> None:
    try:
        taken = socket.socket(socket.AF_INET6)
        taken.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    with taken:
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error(cli("serve", "--mcp", "--host", "::1", "--port", str(port)))
    assert line == f"toolnexus: error: cannot listen on [::1]:{port}: Address already in use"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "nothing to serve: pass --mcp (or --stdio) and/or --a2a"),
        (["--a2a"], "the A2A agent answers tasks with a model: pass --base-url, --style, --model"),
        (["--stdio", "--a2a"], "--a2a needs HTTP: it cannot be served over --stdio"),
        (["--stdio", "--port", "1"], "--stdio serves over stdin/stdout: drop --host/--port"),
        (["--stdio", "--auth-token", "t"], "--auth-token applies to HTTP serving, not --stdio"),
        (["--mcp", "--auth-token", ""], "--auth-token must not be empty"),
        (["--mcp", "--port", "70000"], "--port must be between 0 and 65535, not 70000"),
    ],
)
def test_flag_errors_are_one_line(cli, args: list[str], message: str) -> None:
    assert one_line_error(cli("serve", *args)) == f"toolnexus: error: {message}"


def test_unreadable_config_is_one_line(cli, tmp_path: Path) -> None:
    line = one_line_error(cli("serve", "--mcp", "--config", str(tmp_path / "missing.json")))
    assert "cannot read config file" in line and "missing.json" in line


@pytest.mark.parametrize(
    ("config", "args", "message"),
    [
        ({"mcpServer": 5}, ["--mcp"], 'the config\'s "mcpServer" block must be an object, not int'),
        ({"a2a": ["x"]}, ["--mcp"], 'the config\'s "a2a" block must be an object, not list'),
        (
            {"mcpServer": {"tools": "read"}},
            ["--mcp", "--port", "0"],
            'the MCP profile\'s "tools" must be a list of tool names',
        ),
        (
            {"mcpServer": {"tools": "read"}},
            ["--stdio"],
            'the MCP profile\'s "tools" must be a list of tool names',
        ),
        (
            {"a2a": {"store": "mongodb://x"}},
            ["--base-url", "http://127.0.0.1:9", "--style", "openai", "--model", "m",
             "--api-key", "k", "--port", "0"],
            'Unknown A2A store: "mongodb://x" (expected "memory", "file:<dir>", '
            "postgres://… or redis://…)",
        ),
    ],
)  # fmt: skip
def test_malformed_profiles_are_one_line(
    cli, tmp_path: Path, config: dict[str, Any], args: list[str], message: str
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    line = one_line_error(cli("serve", "--config", str(path), *args))
    assert line == f"toolnexus: error: {message}"


def test_failed_mcp_server_is_one_line(cli, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"broken": broken_server()})
    line = one_line_error(cli("serve", "--mcp", "--port", "0", "--config", str(config)))
    assert line.startswith('toolnexus: error: MCP server "broken" failed: ')


async def test_stdio_gateway_without_prefixes(quick_config: Path) -> None:
    env, tag = tagged_env()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus", "serve", "--stdio", "--no-builtins", "--no-prefix",
              "--config", str(quick_config)],
        env=env,
        cwd=str(REPO),
    )  # fmt: skip
    async with Client(params) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == list(QUICK_TOOLS)
        echoed = await client.call_tool("echo", {"text": "unprefixed"})
        assert echoed.content[0].text == "unprefixed"
    assert processes_tagged(tag) == set()


def test_a_prefix_for_an_unknown_server_is_one_line(cli, quick_config: Path) -> None:
    outcome = cli("serve", "--mcp", "--config", str(quick_config), "--prefix", "nope=x")
    assert outcome.returncode != 0
    assert "--prefix 'nope=x': give SERVER=PREFIX for a server in the config" in outcome.stderr
