"""`toolnexus auth <server>` end to end: the real command in a subprocess, its one-shot listener
on the redirect URI, a "browser" following the printed URL, and `--logout`."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from pathlib import Path

import httpx2
import pytest

from support.cli_runner import HANG_GUARD, REPO, clean_env
from support.oauth_server import free_port
from support.sdk_oauth import OAuthWorld, follow_authorization
from toolnexus import FileTokenStore

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def command(
    *args: str, home: Path, browser: bool = False, paste: bool = False
) -> tuple[int, str, str]:
    """Run `toolnexus ARGS`; with `browser`, follow the sign-in URL it prints back to its
    listener, the way a person's browser would; with `paste`, type the URL the browser ends up
    on into the command instead."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.PIPE if paste else asyncio.subprocess.DEVNULL,
        env=clean_env(TOOLNEXUS_HOME=str(home)),
        cwd=REPO,
    )
    assert child.stdout is not None and child.stderr is not None
    printed: list[str] = []

    async def read_out() -> None:
        assert child.stdout is not None
        async for raw in child.stdout:
            line = raw.decode()
            printed.append(line)
            url = line.strip()
            if url.startswith("http://") and "/authorize?" in url and (browser or paste):
                landed = await follow_authorization(url)
                if paste:
                    assert child.stdin is not None
                    child.stdin.write(landed.encode() + b"\n")
                    await child.stdin.drain()
                    continue
                async with httpx2.AsyncClient(timeout=10) as client:
                    page = await client.get(landed)
                assert page.status_code == 200 and "Signed in" in page.text

    reading = asyncio.ensure_future(read_out())
    err = await asyncio.wait_for(child.stderr.read(), HANG_GUARD)
    await asyncio.wait_for(child.wait(), HANG_GUARD)
    await reading
    return child.returncode or 0, "".join(printed), err.decode()


async def test_auth_signs_in_stores_reuses_and_logs_out(
    oauth_world: OAuthWorld, tmp_path: Path
) -> None:
    redirect = f"http://127.0.0.1:{free_port()}/callback"
    config = tmp_path / "mcp.json"
    entry = oauth_world.server_config(redirectUri=redirect)
    config.write_text(json.dumps({"mcpServers": {"hosted": entry}}))
    home = tmp_path / "home"
    oauth_world.provider.reset_counts()

    code, out, err = await command("tools", "--config", str(config), "--no-builtins", home=home)
    assert code == 0, err
    assert "needs_auth" in out and "sign in with: toolnexus auth hosted" in out

    code, out, err = await command(
        "auth", "hosted", "--config", str(config), "--no-browser", home=home, browser=True
    )
    assert code == 0, err
    assert 'Sign in to MCP server "hosted": open this URL in a browser' in out
    assert 'Signed in to MCP server "hosted" (2 tools); the credentials are stored.' in out
    path = FileTokenStore(home / "mcp-auth").path_for(oauth_world.mcp_url)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert oauth_world.provider.authorizations == 1
    for secret in oauth_world.provider.issued_secrets():
        assert secret not in out + err

    code, out, err = await command("auth", "hosted", "--config", str(config), home=home)
    assert (code, out.strip()) == (0, 'MCP server "hosted" is already signed in (2 tools).')
    assert oauth_world.provider.authorizations == 1

    code, out, _ = await command("auth", "hosted", "--config", str(config), "--logout", home=home)
    assert (code, out.strip()) == (0, 'Signed out of MCP server "hosted".')
    assert not path.exists()
    code, out, _ = await command("auth", "hosted", "--config", str(config), "--logout", home=home)
    assert (code, out.strip()) == (0, 'No stored sign-in for MCP server "hosted".')


async def test_auth_refuses_what_it_cannot_sign_in_to(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "plain": {"url": "http://127.0.0.1:9/mcp"},
                    "bad": {"url": "http://127.0.0.1:9/mcp", "auth": {"type": "saml"}},
                }
            }
        )
    )
    home = tmp_path / "home"
    code, _, err = await command("auth", "nope", "--config", str(config), home=home)
    assert (code, err.strip()) == (
        2,
        'toolnexus: error: no MCP server "nope" in ' + str(config) + " (servers: bad, plain)",
    )
    code, _, err = await command("auth", "plain", "--config", str(config), home=home)
    assert err.strip() == (
        'toolnexus: error: MCP server "plain" has no "auth" entry: there is nothing to sign in to'
    )
    code, _, err = await command("auth", "bad", "--config", str(config), home=home)
    assert err.strip() == (
        'toolnexus: error: MCP server "bad": "auth"."type" must be "oauth" or "client_credentials"'
    )


async def test_auth_with_a_redirect_elsewhere_takes_the_pasted_url(
    oauth_world: OAuthWorld, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    entry = oauth_world.server_config(redirectUri="https://app.example.com/oauth/callback")
    config.write_text(json.dumps({"mcpServers": {"hosted": entry}}))
    code, out, err = await command(
        "auth", "hosted", "--config", str(config), "--no-browser", home=tmp_path, paste=True
    )
    assert code == 0, err
    assert "Then paste the URL the browser ends up on:" in out
    assert 'Signed in to MCP server "hosted" (2 tools); the credentials are stored.' in out
