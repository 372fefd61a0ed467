"""Our outbound A2A tool with credentials: the card's `securitySchemes` say where they go.

Against a real a2a-sdk agent whose card declares the scheme and whose route refuses requests
without the credential, and against a toolnexus agent served as an OAuth-protected resource
(client credentials from the loopback authorization server)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

import jwt
import pytest
import pytest_asyncio
from a2a.types import a2a_pb2 as pb
from starlette.requests import Request

from support.a2a_secured import answer_did, secured_agent
from support.oauth_server import AuthServer
from toolnexus.a2a import agent, agent_tools
from toolnexus.errors import ConfigError
from toolnexus.serve import ResourceAuth, RunTaskClient, ServeHandle
from toolnexus.toolkit import Toolkit, create_toolkit
from toolnexus.types import Tool, ToolContext, ToolResult

pytestmark = pytest.mark.filterwarnings(
    # the SDK server leaves its own task coroutines unawaited when it shuts down
    "ignore::pytest.PytestUnraisableExceptionWarning"
)

BEARER = "agent-bearer-token-7731"
API_KEY = "agent-api-key-5529"
ROBOT_SECRET = "robot-client-secret-1207"


def _bearer_scheme() -> pb.SecurityScheme:
    return pb.SecurityScheme(http_auth_security_scheme=pb.HTTPAuthSecurityScheme(scheme="Bearer"))


def _key_scheme(location: str, name: str) -> pb.SecurityScheme:
    return pb.SecurityScheme(
        api_key_security_scheme=pb.APIKeySecurityScheme(location=location, name=name)
    )


async def _tool(url: str, **options: Any) -> Tool:
    [tool] = await agent_tools(agent(url, poll_every=10, **options))
    return tool


async def _call(tool: Tool, task: str) -> ToolResult:
    return await tool.execute({"task": task}, ToolContext(timeout=20))


def _bearer_agent() -> Any:
    """An a2a-sdk agent declaring the bearer scheme and taking only `BEARER`."""

    def allow(request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {BEARER}"

    return secured_agent({"bearer": _bearer_scheme()}, allow)


async def test_bearer_from_the_environment(monkeypatch):
    monkeypatch.setenv("A2A_TEST_BEARER", BEARER)
    async with _bearer_agent() as peer:
        tool = await _tool(peer.url, auth={"type": "bearer", "token": "${A2A_TEST_BEARER}"})
        result = await _call(tool, "echo hi")
        assert (result.output, result.is_error) == ("echo: echo hi", False)

        wrong = await _tool(peer.url, auth={"type": "bearer", "token": "not-the-token"})
        refused = await _call(wrong, "echo hi")
    assert refused.is_error and refused.output == "HTTP 401: no entry"
    shown = repr(agent(peer.url, auth={"type": "bearer", "token": "repr-hidden-token-5"}))
    assert "repr-hidden-token-5" not in shown


@pytest.mark.parametrize(
    ("location", "check"),
    [
        ("header", lambda r: r.headers.get("x-agent-key") == API_KEY),
        ("query", lambda r: parse_qs(r.url.query).get("api_key") == [API_KEY]),
        ("cookie", lambda r: r.cookies.get("agent_key") == API_KEY),
    ],
)
async def test_api_key_goes_where_the_card_says(location, check):
    name = {"header": "X-Agent-Key", "query": "api_key", "cookie": "agent_key"}[location]
    async with secured_agent({"key": _key_scheme(location, name)}, check) as peer:
        tool = await _tool(peer.url, auth={"type": "apiKey", "key": API_KEY})
        result = await _call(tool, "echo keyed")
        assert (result.output, result.is_error) == ("echo: echo keyed", False)
        assert not peer.refused


async def test_api_key_without_a_card_scheme_needs_its_name():
    async with secured_agent({}, lambda r: r.headers.get("x-key") == API_KEY) as peer:
        with pytest.raises(ConfigError, match="declares no apiKey scheme"):
            await _tool(peer.url, auth={"type": "apiKey", "key": API_KEY})
        tool = await _tool(peer.url, auth={"type": "apiKey", "key": API_KEY, "name": "X-Key"})
        assert (await _call(tool, "echo named")).output == "echo: echo named"


async def test_a_card_asking_for_credentials_warns_when_none_are_given(caplog):
    async with secured_agent({"bearer": _bearer_scheme()}, lambda r: False) as peer:
        with caplog.at_level(logging.WARNING, logger="toolnexus"):
            await _tool(peer.url)
    assert f'A2A agent "{peer.url}" asks for credentials (bearer)' in caplog.text


_CC = {"type": "client_credentials", "clientId": "c", "clientSecret": "s"}


def test_bad_auth_entries_are_config_errors():
    url = "http://127.0.0.1:1"
    for auth, message in [
        ("oauth-please", "must be an object"),
        ({"type": "basic"}, '"type" must be one of'),
        ({"type": "bearer"}, 'needs "token"'),
        ({"type": "apiKey", "key": "bad-place-key-77", "in": "body"}, '"in" must be one of'),
        (
            {"type": "client_credentials", "clientSecret": "no-client-id-secret-3"},
            'needs "clientId"',
        ),
        ({**_CC, "scopes": 3}, "list"),
        ({**_CC, "tokenUrl": "x"}, "URL"),
    ]:
        with pytest.raises(ConfigError, match=message):
            agent(url, auth=auth)
    with pytest.raises(ConfigError, match="Authorization header"):
        agent(url, headers={"Authorization": "Bearer x"}, auth={"type": "bearer", "token": "y"})


async def test_config_entry_with_auth(monkeypatch):
    monkeypatch.setenv("A2A_TEST_BEARER", BEARER)
    async with _bearer_agent() as peer:
        config = {
            "agents": {
                "peer": {
                    "card": peer.url,
                    "pollEvery": 10,
                    "auth": {"type": "bearer", "token": "${A2A_TEST_BEARER}"},
                }
            }
        }
        toolkit = await create_toolkit(config, builtins=False)
        try:
            result = await toolkit.execute("secured_echo", {"task": "echo configured"})
        finally:
            await toolkit.close()
    assert (result.output, result.is_error) == ("echo: echo configured", False)


async def test_bearer_reaches_a_toolnexus_agent_with_a_static_token():
    """Its card is public (a2a.md §2.1); every other route needs the bearer."""
    handle = await Toolkit().serve(
        "127.0.0.1:0",
        a2a={"name": "static"},
        client=RunTaskClient(answer_did),
        auth_token=BEARER,
    )
    async with handle:
        refused = await _call(await _tool(handle.url), "unguarded")
        assert refused.is_error and "401" in str(refused.output)
        tool = await _tool(handle.url, auth={"type": "bearer", "token": BEARER})
        result = await _call(tool, "guarded")
    assert (result.output, result.is_error) == ("did: guarded", False)


# -- client credentials against a toolnexus agent that takes OAuth tokens ----------------------


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def oauth_agent(authz: AuthServer) -> AsyncIterator[ServeHandle]:
    authz.clients["robot"] = ROBOT_SECRET
    handle = await Toolkit().serve(
        "127.0.0.1:0",
        a2a={"name": "guarded", "skills": []},
        client=RunTaskClient(answer_did),
        auth=ResourceAuth(issuer=authz.issuer, scopes=["agent:use"]),
    )
    yield handle
    await handle.stop()


_ROBOT = {"type": "client_credentials", "clientId": "robot", "clientSecret": "${ROBOT_SECRET}"}


async def test_client_credentials_from_the_card(oauth_agent, authz, monkeypatch):
    monkeypatch.setenv("ROBOT_SECRET", ROBOT_SECRET)
    before = len(authz.token_requests)
    tool = await _tool(oauth_agent.url, auth=_ROBOT)
    first = await _call(tool, "one")
    second = await _call(tool, "two")
    assert (first.output, first.is_error) == ("did: one", False)
    assert second.output == "did: two"
    [request] = authz.token_requests[before:]  # the token is kept for the second call
    assert request == {
        "client_id": "robot",
        "via": "basic",  # client_secret_basic, as RFC 6749 prefers
        "grant_type": "client_credentials",
        "resource": oauth_agent.url + "/",  # the agent's resource (RFC 8707)
        "scope": "agent:use",  # what the card's requirement lists
    }


async def test_refused_token_is_renewed_once(oauth_agent, authz, monkeypatch):
    monkeypatch.setenv("ROBOT_SECRET", ROBOT_SECRET)
    tool = await _tool(oauth_agent.url, auth=_ROBOT)
    authz.expired_tokens = 1  # the first token is dead on arrival: the agent answers 401
    before = len(authz.token_requests)
    result = await _call(tool, "again")
    assert (result.output, result.is_error) == ("did: again", False)
    assert len(authz.token_requests) == before + 2


async def test_wrong_client_secret_is_a_clear_error(oauth_agent, authz):
    bad = {**_ROBOT, "clientSecret": "not-the-robot-secret"}
    tool = await _tool(oauth_agent.url, auth=bad)
    result = await _call(tool, "nope")
    assert result.is_error
    assert result.output == (
        f"the token endpoint {authz.issuer}/token refused the client credentials of robot: "
        "HTTP 401 (invalid_client)"
    )
    assert "not-the-robot-secret" not in result.output


async def test_token_endpoint_from_the_metadata_url(authz):
    """A card whose oauth2 scheme names only the issuer's metadata: the token endpoint is read
    from there."""
    authz.clients["robot"] = ROBOT_SECRET
    scheme = pb.SecurityScheme(
        oauth2_security_scheme=pb.OAuth2SecurityScheme(
            oauth2_metadata_url=f"{authz.issuer}/.well-known/oauth-authorization-server",
            flows=pb.OAuthFlows(
                client_credentials=pb.ClientCredentialsOAuthFlow(token_url="", scopes={})
            ),
        )
    )
    public = authz.keys["k1"].public_key()

    def allow(request: Request) -> bool:
        header = request.headers.get("authorization", "")
        try:
            claims = jwt.decode(header[7:], public, algorithms=["RS256"], audience=url + "/")
        except jwt.PyJWTError:
            return False
        return "agent:read" in claims["scope"].split()

    async with secured_agent(
        {"oauth": scheme}, allow, requirements={"oauth": ["agent:read"]}
    ) as peer:
        url = peer.url
        tool = await _tool(url, auth={**_ROBOT, "clientSecret": ROBOT_SECRET})
        result = await _call(tool, "echo discovered")
    assert (result.output, result.is_error) == ("echo: echo discovered", False)
    assert authz.token_requests[-1]["scope"] == "agent:read"
