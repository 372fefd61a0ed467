"""`toolnexus serve --auth-issuer`: the gateway as an OAuth-protected resource, as a process."""

from __future__ import annotations

import asyncio
import re
import signal
import sys

import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from support.cli_runner import REPO, clean_env, run_main
from support.oauth_server import AuthServer


async def test_serve_with_auth_issuer(authz: AuthServer) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "toolnexus", "serve", "--mcp", "--port", "0", "--builtins",
        "--tools", "read", "--auth-issuer", authz.issuer, "--auth-scope", "tools:read",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=clean_env(), cwd=str(REPO),
    )  # fmt: skip
    assert proc.stderr is not None
    url = ""
    try:
        while True:
            line = (await asyncio.wait_for(proc.stderr.readline(), 120)).decode()
            assert line, "serve exited before listening"
            if found := re.match(r"toolnexus: MCP server at (http://\S+/mcp) ", line):
                url = found.group(1)
            if line.startswith("toolnexus: press Ctrl-C to stop"):
                break
        base = url.removesuffix("/mcp")
        async with httpx2.AsyncClient() as http:
            metadata = (await http.get(base + "/.well-known/oauth-protected-resource/mcp")).json()
            assert metadata["resource"] == url
            assert metadata["authorization_servers"] == [authz.issuer]
            denied = await http.post(url, json={})
            assert denied.status_code == 401
            assert "resource_metadata=" in denied.headers["www-authenticate"]
        token = authz.token(url)
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as authed,
            Client(streamable_http_client(url, http_client=authed)) as client,
        ):
            assert [t.name for t in (await client.list_tools()).tools] == ["read"]
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert token.split(".")[2] not in err.decode()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--stdio", "--auth-issuer", "http://127.0.0.1:1"], "not --stdio"),
        (["--mcp", "--auth-scope", "x"], "need --auth-issuer"),
        (["--mcp", "--auth-issuer", "nope"], "http(s) URL"),
    ],
)
def test_bad_auth_flags(capsys: pytest.CaptureFixture[str], flags: list[str], message: str) -> None:
    done = run_main(capsys, "serve", *flags)
    assert done.returncode != 0
    assert message in done.stderr
