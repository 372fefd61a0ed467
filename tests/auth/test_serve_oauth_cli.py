"""`toolnexus serve --auth-issuer`: the gateway as an OAuth-protected resource, as a process."""

from __future__ import annotations

import asyncio
import base64
import re
import signal
import sys

import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from support.cli_runner import REPO, clean_env, run_main
from support.oauth_server import AuthServer

SECRET = "cli-introspection-secret-9"


async def test_serve_with_auth_issuer(authz: AuthServer) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "toolnexus", "serve", "--mcp", "--port", "0", "--builtins",
        "--tools", "read", "--tools", "glob", "--auth-issuer", authz.issuer,
        "--auth-scope", "tools:read", "--auth-tool-scope", "glob=files:glob",
        "--auth-introspection-url", f"{authz.issuer}/introspect",
        "--auth-client-id", "gateway-cli", "--auth-client-secret", "${GW_SECRET}",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=clean_env(GW_SECRET=SECRET), cwd=str(REPO),
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
        assert await _listed(url, token) == ["read"]  # glob needs files:glob
        wider = authz.token(url, scope="tools:read files:glob")
        assert await _listed(url, wider) == ["read", "glob"]
        authz.opaque["cli-opaque-token"] = {"scope": "tools:read", "aud": url}
        assert await _listed(url, "cli-opaque-token") == ["read"]
        basic = base64.b64encode(f"gateway-cli:{SECRET}".encode()).decode()
        assert authz.introspection_auth[-1] == f"Basic {basic}"
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert token.split(".")[2] not in err.decode()
    assert SECRET not in err.decode()


async def _listed(url: str, token: str) -> list[str]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as authed,
        Client(streamable_http_client(url, http_client=authed)) as client,
    ):
        return [t.name for t in (await client.list_tools()).tools]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--stdio", "--auth-issuer", "http://127.0.0.1:1"], "not --stdio"),
        (["--mcp", "--auth-scope", "x"], "need --auth-issuer"),
        (["--mcp", "--auth-issuer", "nope"], "http(s) URL"),
        (["--mcp", "--auth-tool-scope", "a=b"], "need --auth-issuer"),
        (["--mcp", "--auth-issuer", "http://127.0.0.1:1", "--auth-tool-scope", "a"], "TOOL=SCOPE"),
        (["--mcp", "--auth-issuer", "http://127.0.0.1:1", "--auth-tool-scope", "=s"], "TOOL=SCOPE"),
        (
            ["--mcp", "--auth-issuer", "http://127.0.0.1:1", "--auth-client-secret", "x"],
            "needs --auth-client-id",
        ),
        (
            [
                *["--mcp", "--auth-issuer", "http://127.0.0.1:1", "--auth-client-id", "c"],
                *["--auth-client-secret", "${TN_UNSET_SECRET_VAR}"],
            ],
            "TN_UNSET_SECRET_VAR is not set",
        ),
    ],
)
def test_bad_auth_flags(capsys: pytest.CaptureFixture[str], flags: list[str], message: str) -> None:
    done = run_main(capsys, "serve", *flags)
    assert done.returncode != 0
    assert message in done.stderr
