"""The official MCP client with its OAuth provider, against our gateway: it answers our `401`
by reading `/.well-known/oauth-protected-resource/mcp`, registers with the authorization server
(the SDK's own routes, auto-approving), signs in with PKCE, calls tools, and steps up when a
tool's scope is missing (`403 insufficient_scope`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest_asyncio
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from mcp import Client
from support.a2a_secured import echo_tool
from support.oauth_server import SdkAuthServer, running_sdk_auth_server
from toolnexus.serve import ResourceAuth, ServeHandle
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext

REDIRECT = "http://127.0.0.1:33418/callback"


class _Memory:
    """The SDK's `TokenStorage`, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class _Browser:
    """Follows the authorization URL like a browser would; the callback gets what it landed on."""

    def __init__(self) -> None:
        self.landed: list[str] = []
        self.visited: list[str] = []

    async def redirect(self, url: str) -> None:
        self.visited.append(url)
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            response = await http.get(url)
        assert response.status_code in (302, 303, 307), response.text
        self.landed.append(response.headers["location"])

    async def callback(self) -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(self.landed[-1]).query)
        assert "code" in query, self.landed[-1]
        return AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0]
        )


def _secret_tool() -> Tool:
    def secret(args: dict[str, object], ctx: ToolContext) -> str:
        return "the secret"

    return Tool("secret", "Needs its own scope", None, "native", secret)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def world() -> AsyncIterator[tuple[SdkAuthServer, ServeHandle]]:
    async with running_sdk_auth_server(["tools:read", "tools:secret"]) as server:
        auth = ResourceAuth(
            issuer=server.issuer,
            jwks_uri=server.jwks_uri,
            scopes=["tools:read"],
            tool_scopes={"secret": ["tools:secret"]},
        )
        handle = await Toolkit(builtins=False, extra_tools=[echo_tool(), _secret_tool()]).serve(
            "127.0.0.1:0", mcp={"name": "gateway"}, auth=auth
        )
        yield server, handle
        await handle.stop()


async def test_sdk_oauth_client_signs_in_and_steps_up(world, caplog):
    caplog.set_level(logging.DEBUG)
    server, gateway = world
    url = gateway.url + "/mcp"
    browser = _Browser()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="sdk-client",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=_Memory(),
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
    )
    async with (
        httpx2.AsyncClient(auth=provider) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        names = [t.name for t in (await client.list_tools()).tools]
        echoed = await client.call_tool("echo", {"text": "signed in"})
        assert len(browser.visited) == 1
        # The authorize request named our resource and the scope our 401 asked for.
        query = parse_qs(urlsplit(browser.visited[0]).query)
        assert query["resource"] == [url]
        assert query["scope"] == ["tools:read"]
        assert query["code_challenge_method"] == ["S256"]

        secret = await client.call_tool("secret", {})  # 403 insufficient_scope: step-up
    assert names == ["echo"]  # `secret` is not listed for a token without its scope
    assert echoed.content[0].text == "echo: signed in"
    assert (secret.content[0].text, secret.is_error) == ("the secret", False)
    assert len(browser.visited) == 2
    assert server.provider.authorized_scopes[-1] == ["tools:read", "tools:secret"]
    logged = caplog.text + "".join(repr(r.__dict__) for r in caplog.records)
    assert len(server.keys.issued_tokens) == 4  # two access and two refresh tokens
    for token in server.keys.issued_tokens:
        assert token.rsplit(".", 1)[-1] not in logged
