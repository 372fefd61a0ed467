"""Serving as an OAuth-protected resource, against a small authorization server run here.

The authorization server is a Starlette app on a loopback port: RFC 8414 metadata, a JWKS
and an RFC 7662 introspection endpoint. Tokens are signed in the test with `cryptography`
keys through PyJWT; the official MCP SDK client calls the gateway with them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from support.oauth_server import AuthServer, free_port
from toolnexus.serve import ResourceAuth, ServeHandle
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext

STATIC = "static-token-5e1f"


def _tools() -> list[Tool]:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

    def echo(args: dict[str, Any], ctx: ToolContext) -> str:
        return "echo: " + args["text"]

    def secret(args: dict[str, Any], ctx: ToolContext) -> str:
        return "the secret"

    return [
        Tool("echo", "Echo the text back", schema, "native", echo),
        Tool("secret", "Needs a scope of its own", None, "native", secret),
    ]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(authz: AuthServer) -> AsyncIterator[ServeHandle]:
    auth = ResourceAuth(
        issuer=authz.issuer,
        scopes=["tools:read"],
        tool_scopes={"secret": ["tools:secret"]},
        jwks_refresh_interval=0,
    )
    handle = await Toolkit(builtins=False, extra_tools=_tools()).serve(
        "127.0.0.1:0", mcp={"name": "gateway"}, auth=auth, auth_token=STATIC
    )
    yield handle
    await handle.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def introspected(authz: AuthServer) -> AsyncIterator[ServeHandle]:
    auth = ResourceAuth(
        issuer=authz.issuer,
        introspection_endpoint=f"{authz.issuer}/introspect",
        client_id="gateway",
        client_secret="gateway-secret-77",
    )
    handle = await Toolkit(builtins=False, extra_tools=_tools()).serve(
        "127.0.0.1:0", mcp={}, auth=auth
    )
    yield handle
    await handle.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient() as client:
        yield client


def _resource(handle: ServeHandle) -> str:
    return handle.url + "/mcp"


def _metadata_url(handle: ServeHandle) -> str:
    return handle.url + "/.well-known/oauth-protected-resource/mcp"


async def _call(handle: ServeHandle, token: str, tool: str, args: dict[str, Any]) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as authed,
        Client(streamable_http_client(_resource(handle), http_client=authed)) as client,
    ):
        return await client.call_tool(tool, args)


def _rpc(tool: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}},
    }


_MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


async def test_protected_resource_metadata(gateway, authz, http):
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ]:
        response = await http.get(gateway.url + path)
        assert response.status_code == 200, path
        assert response.json() == {
            "resource": _resource(gateway),
            "authorization_servers": [authz.issuer],
            "scopes_supported": ["tools:read", "tools:secret"],
            "bearer_methods_supported": ["header"],
        }


async def test_missing_token_is_401_with_resource_metadata(gateway, http):
    for headers in [{}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer"}]:
        response = await http.post(gateway.url + "/mcp", json=_rpc("echo"), headers=headers)
        assert response.status_code == 401
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith(f'Bearer resource_metadata="{_metadata_url(gateway)}"')
        assert "error=" not in challenge  # no credentials: no error code (RFC 6750)
        assert 'scope="tools:read"' in challenge


async def test_sdk_client_with_a_valid_token(gateway, authz):
    token = authz.token(_resource(gateway))
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as authed,
        Client(streamable_http_client(_resource(gateway), http_client=authed)) as client,
    ):
        names = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("echo", {"text": "hi"})
    assert names == ["echo"]  # `secret` needs a scope this token lacks
    assert (result.content[0].text, result.is_error) == ("echo: hi", False)


async def test_tools_list_follows_the_callers_scopes(gateway, authz):
    async def listed(token: str) -> list[str]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as authed,
            Client(streamable_http_client(_resource(gateway), http_client=authed)) as client,
        ):
            return [t.name for t in (await client.list_tools()).tools]

    both = authz.token(_resource(gateway), scope="tools:read tools:secret")
    assert await listed(both) == ["echo", "secret"]
    assert await listed(authz.token(_resource(gateway))) == ["echo"]
    assert await listed(STATIC) == ["echo", "secret"]  # the operator's token has every scope


async def test_refused_tokens_are_401_invalid_token(gateway, authz, http):
    resource = _resource(gateway)
    other_key = rsa.generate_private_key(65537, 2048)
    now = int(time.time())
    refused = {
        "wrong audience": authz.token("http://127.0.0.1:1/mcp"),
        "expired": authz.token(resource, exp=now - 120),
        "not yet valid": authz.token(resource, nbf=now + 600),
        "wrong issuer": authz.token(resource, iss="http://127.0.0.1:2"),
        "no exp": authz.token(resource, exp=None),
        "bad signature": authz.token(resource, key=other_key),
        "unknown kid": authz.token(resource, kid="nope", key=other_key),
        "not a jwt": "opaque-but-no-introspection",
        "garbage jwt": "a.b.c",
    }
    for why, token in refused.items():
        response = await http.post(
            resource, json=_rpc("echo"), headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 401, why
        challenge = response.headers["www-authenticate"]
        assert f'resource_metadata="{_metadata_url(gateway)}"' in challenge, why
        assert 'error="invalid_token"' in challenge, why
        assert token not in response.text and token not in challenge, why


async def test_small_clock_skew_is_tolerated(gateway, authz):
    token = authz.token(_resource(gateway), exp=int(time.time()) - 5)
    result = await _call(gateway, token, "echo", {"text": "late"})
    assert result.content[0].text == "echo: late"


async def test_tool_scope_is_403_insufficient_scope(gateway, authz, http):
    token = authz.token(_resource(gateway))
    response = await http.post(
        _resource(gateway),
        json=_rpc("secret"),
        headers={"Authorization": f"Bearer {token}", **_MCP_HEADERS},
    )
    assert response.status_code == 403
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="tools:read tools:secret"' in challenge
    assert f'resource_metadata="{_metadata_url(gateway)}"' in challenge

    allowed = authz.token(_resource(gateway), scope="tools:read tools:secret")
    result = await _call(gateway, allowed, "secret", {})
    assert result.content[0].text == "the secret"


async def test_route_scope_is_403(gateway, authz, http):
    token = authz.token(_resource(gateway), scope="something:else")
    response = await http.post(
        _resource(gateway), json=_rpc("echo"), headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]


async def test_static_token_still_works(gateway):
    result = await _call(gateway, STATIC, "secret", {})
    assert result.content[0].text == "the secret"


async def test_rotated_key_is_fetched_on_unknown_kid(gateway, authz):
    authz.keys["ec-2"] = ec.generate_private_key(ec.SECP256R1())
    before = authz.jwks_fetches
    token = authz.token(_resource(gateway), kid="ec-2")
    result = await _call(gateway, token, "echo", {"text": "rotated"})
    assert result.content[0].text == "echo: rotated"
    assert authz.jwks_fetches == before + 1
    again = await _call(gateway, authz.token(_resource(gateway), kid="ec-2"), "echo", {"text": "x"})
    assert again.content[0].text == "echo: x"
    assert authz.jwks_fetches == before + 1  # cached


async def test_opaque_token_by_introspection(introspected, authz, http):
    resource = _resource(introspected)
    authz.opaque["opaque-good-1"] = {"scope": "tools:read", "aud": resource, "client_id": "c"}
    authz.opaque["opaque-other-aud"] = {"aud": "http://127.0.0.1:1/mcp"}
    authz.opaque["opaque-expired"] = {"exp": int(time.time()) - 600}
    result = await _call(introspected, "opaque-good-1", "echo", {"text": "opaque"})
    assert result.content[0].text == "echo: opaque"
    assert authz.introspection_auth[-1] is not None
    assert authz.introspection_auth[-1].startswith("Basic ")
    for token in ["opaque-unknown", "opaque-other-aud", "opaque-expired"]:
        response = await http.post(
            resource, json=_rpc("echo"), headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 401, token
        assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_unreachable_authorization_server_is_503(http):
    dead = f"http://127.0.0.1:{free_port()}"
    handle = await Toolkit(builtins=False, extra_tools=_tools()).serve(
        "127.0.0.1:0", mcp={}, auth=ResourceAuth(issuer=dead)
    )
    async with handle:
        response = await http.post(
            handle.url + "/mcp", json=_rpc("echo"), headers={"Authorization": "Bearer a.b.c"}
        )
    assert response.status_code == 503
    assert "a.b.c" not in response.text


async def test_no_token_in_logs(gateway, authz, http, caplog):
    caplog.set_level(logging.DEBUG)
    resource = _resource(gateway)
    good = authz.token(resource)
    bad = authz.token("http://127.0.0.1:1/mcp")
    await _call(gateway, good, "echo", {"text": "logged?"})
    for token in [bad, good]:
        await http.post(
            resource,
            json=_rpc("secret"),
            headers={"Authorization": f"Bearer {token}", **_MCP_HEADERS},
        )
    text = caplog.text + "".join(str(r.__dict__) for r in caplog.records)
    for token in [good, bad, STATIC]:
        for piece in token.split("."):
            assert piece not in text


def test_bad_auth_config_is_refused():
    from toolnexus.errors import ConfigError

    for bad in [
        ResourceAuth(issuer="not a url"),
        ResourceAuth(issuer=[]),
        ResourceAuth(issuer="http://127.0.0.1:1", audience="mcp"),
        ResourceAuth(issuer="http://127.0.0.1:1", leeway=-1),
        ResourceAuth(issuer="http://127.0.0.1:1", algorithms=["HS256"]),
        ResourceAuth(issuer="http://127.0.0.1:1", algorithms=["none"]),
    ]:
        with pytest.raises(ConfigError):
            bad.validate()
    assert "gateway-secret" not in repr(
        ResourceAuth(issuer="http://a", client_secret="gateway-secret")
    )


async def test_tool_scopes_keys_are_served_or_configured_names_and_typos_are_refused(authz, http):
    from toolnexus.errors import ConfigError

    long_name = "read_the_quarterly_report_of_every_department_and_summarise_it_for_me"  # 68
    tools = [*_tools(), Tool(long_name, "A long name", None, "native", lambda a, c: "report")]
    toolkit = Toolkit(extra_tools=tools)
    [served] = [t.name for t in toolkit.tools() if t.name.startswith("read_the_")]
    assert served != long_name and len(served) == 64

    typo = ResourceAuth(issuer=authz.issuer, tool_scopes={"secrte": ["tools:secret"]})
    with pytest.raises(ConfigError) as refused:
        await toolkit.serve("127.0.0.1:0", mcp={}, auth=typo)
    assert "'secrte' names no served tool (did you mean 'secret'?)" in str(refused.value)

    for key in (long_name, served):  # the configured name protects the served one, as its own
        auth = ResourceAuth(
            issuer=authz.issuer, tool_scopes={key: ["tools:report"]}, jwks_refresh_interval=0
        )
        handle = await toolkit.serve("127.0.0.1:0", mcp={"name": "long"}, auth=auth)
        try:
            resource = handle.url + "/mcp"
            token = authz.token(resource)
            response = await http.post(
                resource,
                json=_rpc(served),
                headers={"Authorization": f"Bearer {token}", **_MCP_HEADERS},
            )
            assert response.status_code == 403
            assert 'scope="tools:report ' in response.headers["www-authenticate"]
        finally:
            await handle.stop()
