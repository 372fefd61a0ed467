"""The `"auth"` server key and the token stores, without any server."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from toolnexus import ConfigError, FileTokenStore, MemoryTokenStore, TokenStore, create_toolkit
from toolnexus.oauth import OAuthSettings, parse_oauth_settings, token_store


def test_oauth_shorthand_and_full_entry() -> None:
    assert parse_oauth_settings("oauth") == OAuthSettings()
    settings = parse_oauth_settings(
        {
            "type": "oauth",
            "scopes": ["read", "write", "read"],
            "clientId": "cli",
            "clientSecret": "${SECRET}",
            "redirectUri": "http://127.0.0.1:9999/cb",
            "store": "memory",
        }
    )
    assert settings.scope == "read write"
    assert (settings.client_id, settings.client_secret) == ("cli", "${SECRET}")
    assert settings.redirect_uri == "http://127.0.0.1:9999/cb"
    assert "SECRET" not in repr(settings)
    assert parse_oauth_settings({"type": "oauth", "scope": "a  b"}).scope == "a b"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (True, '"auth" must be "oauth" or an object with "type": "oauth"'),
        ({"type": "basic"}, '"auth"."type" must be "oauth" or "client_credentials"'),
        (
            {"type": "oauth", "scopes": 3},
            '"auth"."scopes" must be a list of scope names or a string',
        ),
        (
            {"type": "oauth", "scope": "a", "scopes": ["b"]},
            '"auth" takes "scope" or "scopes", not both',
        ),
        ({"type": "oauth", "clientid": "x"}, '"auth" has unknown key "clientid"'),
        (
            {"type": "client_credentials", "clientId": "x"},
            '"auth" of type "client_credentials" needs "clientId" and "clientSecret"',
        ),
        (
            {"type": "oauth", "clientMetadataUrl": "http://x.example/doc"},
            '"auth"."clientMetadataUrl" must be an https URL with a path',
        ),
        (
            {"type": "oauth", "redirectUri": "callback"},
            '"auth"."redirectUri" must be an http(s) URL',
        ),
        (
            {"type": "oauth", "store": "disk"},
            '"auth"."store" must be "memory" or "file:<directory>"',
        ),
        ({"type": "oauth", "clientSecret": ""}, '"auth"."clientSecret" must be a non-empty string'),
        (
            {"type": "oauth", "clientId": "c", "tokenEndpointAuthMethod": "private_key_jwt"},
            '"auth"."tokenEndpointAuthMethod" must be one of "client_secret_basic", '
            '"client_secret_post", "none"',
        ),
        (
            {"type": "oauth", "tokenEndpointAuthMethod": "none"},
            '"auth"."tokenEndpointAuthMethod" needs a pre-registered "clientId"',
        ),
        (
            {"type": "oauth", "clientId": "c", "tokenEndpointAuthMethod": "client_secret_basic"},
            '"auth"."tokenEndpointAuthMethod" "client_secret_basic" needs "clientSecret"',
        ),
    ],
)
def test_a_bad_entry_names_the_key(entry: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_oauth_settings(entry)
    assert str(caught.value).startswith(message)


async def test_a_bad_auth_entry_fails_only_its_server() -> None:
    tk = await create_toolkit(
        {
            "mcpServers": {
                "local": {"command": "true", "auth": "oauth"},
                "both": {
                    "url": "http://127.0.0.1:9/mcp",
                    "headers": {"Authorization": "Bearer x"},
                    "auth": "oauth",
                },
                "typo": {"url": "http://127.0.0.1:9/mcp", "auth": {"type": "oauth2"}},
            }
        },
        builtins=False,
    )
    try:
        errors = {name: state.error for name, state in tk.mcp_servers().items()}
        assert errors == {
            "local": '"auth" is for remote servers (give "url"), not a local command',
            "both": '"auth" and an "Authorization" header cannot both be given',
            "typo": '"auth"."type" must be "oauth" or "client_credentials"',
        }
    finally:
        await tk.close()


async def test_an_unset_client_secret_variable_fails_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_SUCH_SECRET_VAR", raising=False)
    tk = await create_toolkit(
        {
            "mcpServers": {
                "m2m": {
                    "url": "http://127.0.0.1:9/mcp",
                    "auth": {
                        "type": "client_credentials",
                        "clientId": "c",
                        "clientSecret": "${NO_SUCH_SECRET_VAR}",
                    },
                }
            }
        },
        builtins=False,
    )
    try:
        state = tk.mcp_servers()["m2m"]
        assert state.status == "failed"
        assert state.error is not None and "NO_SUCH_SECRET_VAR" in state.error
    finally:
        await tk.close()


async def test_the_file_store_keeps_one_private_file_per_url(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "auth")
    url = "https://mcp.example/mcp"
    assert await store.load(url) is None
    await store.save(url, {"tokens": {"access_token": "a" * 20}})
    path = store.path_for(url)
    assert path.name == f"{__import__('hashlib').sha256(url.encode()).hexdigest()[:16]}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert await store.load(url) == {"tokens": {"access_token": "a" * 20}, "url": url}
    assert os.listdir(path.parent) == [path.name]  # no temporary file left behind
    assert await store.load("https://other.example/mcp") is None
    path.write_text(json.dumps({"url": "https://other.example/mcp"}))  # not this URL's
    assert await store.load(url) is None
    assert await store.delete(url) is True
    assert await store.delete(url) is False


async def test_the_default_directory_follows_toolnexus_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLNEXUS_HOME", str(tmp_path))
    store = token_store(None)
    assert isinstance(store, FileTokenStore)
    assert store.directory == tmp_path / "mcp-auth"
    named = token_store(f"file:{tmp_path / 'x'}")
    assert isinstance(named, FileTokenStore) and named.directory == tmp_path / "x"


async def test_the_memory_store_copies_records() -> None:
    store = MemoryTokenStore()
    record: dict[str, Any] = {"tokens": {"access_token": "secret-token"}}
    await store.save("u", record)
    record["tokens"]["access_token"] = "changed"
    loaded = await store.load("u")
    assert loaded is not None and loaded["tokens"]["access_token"] == "secret-token"
    assert "secret-token" not in repr(store)
    assert isinstance(store, TokenStore)
    with pytest.raises(ConfigError):
        token_store("disk")
