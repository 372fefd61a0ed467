"""The A2A agent as an OAuth-protected resource: its card declares the `oauth2` scheme (flows
from the issuer's metadata), it has a protected-resource document of its own, and it takes
only tokens issued for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest_asyncio
from a2a.client.card_resolver import parse_agent_card

from support import a2a_oracle as oracle
from support.a2a_secured import answer_did, echo_tool
from support.oauth_server import AuthServer, free_port
from toolnexus.serve import ResourceAuth, RunTaskClient, ServeHandle
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool

CARD = "/.well-known/agent-card.json"


async def _serve(auth: ResourceAuth, **options: Any) -> ServeHandle:
    return await Toolkit(extra_tools=[echo_tool()]).serve(
        "127.0.0.1:0",
        mcp={},
        a2a={"name": "guarded"},
        client=RunTaskClient(answer_did),
        auth=auth,
        **options,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def agent(authz: AuthServer) -> AsyncIterator[ServeHandle]:
    auth = ResourceAuth(
        issuer=authz.issuer, scopes=["agent:use"], tool_scopes={"echo": ["tools:echo"]}
    )
    handle = await _serve(auth, auth_token="operator-token-41")
    yield handle
    await handle.stop()


def _send(text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": "1",
        "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}},
    }


async def test_card_declares_the_oauth2_scheme(agent, authz):
    async with httpx2.AsyncClient() as http:
        response = await http.get(agent.url + CARD)
    assert response.status_code == 200  # open: a client reads the scheme before it has a token
    card = response.json()
    oracle.check_card(card)
    scopes = {"agent:use": "Needed for every request", "tools:echo": "Needed for calling echo"}
    metadata_url = f"{authz.issuer}/.well-known/oauth-authorization-server"
    code = {
        "authorizationUrl": f"{authz.issuer}/authorize",
        "tokenUrl": f"{authz.issuer}/token",
        "scopes": scopes,
    }
    machine = {"tokenUrl": f"{authz.issuer}/token", "scopes": scopes}
    assert card["securitySchemes"]["oauth2"] == {
        "oauth2SecurityScheme": {
            "flows": {"authorizationCode": {**code, "pkceRequired": True}},
            "oauth2MetadataUrl": metadata_url,
        },
        "type": "oauth2",
        "flows": {"authorizationCode": code},
        "oauth2MetadataUrl": metadata_url,
    }
    assert card["securitySchemes"]["oauth2ClientCredentials"] == {
        "oauth2SecurityScheme": {
            "flows": {"clientCredentials": machine},
            "oauth2MetadataUrl": metadata_url,
        },
        "type": "oauth2",
        "flows": {"clientCredentials": machine},
        "oauth2MetadataUrl": metadata_url,
    }
    assert card["securitySchemes"]["bearer"]["type"] == "http"  # the static token, too
    assert card["securityRequirements"] == [
        {"schemes": {"oauth2": {"list": ["agent:use"]}}},
        {"schemes": {"oauth2ClientCredentials": {"list": ["agent:use"]}}},
        {"schemes": {"bearer": {}}},
    ]
    assert card["security"] == [
        {"oauth2": ["agent:use"]},
        {"oauth2ClientCredentials": ["agent:use"]},
        {"bearer": []},
    ]
    parsed = parse_agent_card(card).security_schemes["oauth2"].oauth2_security_scheme
    assert parsed.flows.authorization_code.token_url == f"{authz.issuer}/token"


async def test_each_resource_has_its_metadata(agent, authz):
    async with httpx2.AsyncClient() as http:
        root = (await http.get(agent.url + "/.well-known/oauth-protected-resource")).json()
        mcp = (await http.get(agent.url + "/.well-known/oauth-protected-resource/mcp")).json()
    assert root["resource"] == agent.url + "/"
    assert mcp["resource"] == agent.url + "/mcp"
    assert root["authorization_servers"] == mcp["authorization_servers"] == [authz.issuer]


async def test_agent_takes_only_its_own_tokens(agent, authz):
    async with httpx2.AsyncClient() as http:
        denied = await http.post(agent.url + "/", json=_send("hi"))
        assert denied.status_code == 401
        challenge = denied.headers["www-authenticate"]
        root_metadata = agent.url + "/.well-known/oauth-protected-resource"
        assert challenge.startswith(f'Bearer resource_metadata="{root_metadata}"')
        assert 'scope="agent:use"' in challenge

        for_mcp = authz.token(agent.url + "/mcp", scope="agent:use")
        wrong = await http.post(
            agent.url + "/", json=_send("hi"), headers={"Authorization": f"Bearer {for_mcp}"}
        )
        assert wrong.status_code == 401
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]

        no_scope = authz.token(agent.url + "/", scope="other")
        refused = await http.post(
            agent.url + "/", json=_send("hi"), headers={"Authorization": f"Bearer {no_scope}"}
        )
        assert refused.status_code == 403

        good = authz.token(agent.url + "/", scope="agent:use")
        answer = await http.post(
            agent.url + "/",
            json=_send("hi"),
            headers={"Authorization": f"Bearer {good}", "A2A-Version": "1.0"},
        )
    assert answer.status_code == 200
    task = answer.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "did: hi"}]


async def test_card_without_a_reachable_issuer_names_the_metadata_url():
    dead = f"http://127.0.0.1:{free_port()}"
    handle = await _serve(ResourceAuth(issuer=dead))
    async with handle, httpx2.AsyncClient() as http:
        card = (await http.get(handle.url + CARD)).json()
    oracle.check_card(card)
    scheme = card["securitySchemes"]["oauth2"]
    assert scheme["oauth2SecurityScheme"] == {
        "flows": {},
        "oauth2MetadataUrl": f"{dead}/.well-known/oauth-authorization-server",
    }
    assert "bearer" not in card["securitySchemes"]  # no static token: no bearer scheme
    assert card["securityRequirements"] == [{"schemes": {"oauth2": {}}}]


class _Recording(RunTaskClient):
    """Answers `did: <task>` and records, per task, the tools its run was given: their names,
    the names declared to a model, and what calling `echo` gave."""

    def __init__(self) -> None:
        super().__init__(answer_did)
        self.runs: list[tuple[list[str], list[str], tuple[str, bool]]] = []

    async def ask(self, prompt: Any, toolkit: Any = None, **options: Any) -> Any:
        echoed = await toolkit.execute("echo", {"text": "x"})
        declared = [d["function"]["name"] for d in toolkit.to_openai()]
        self.runs.append(
            ([t.name for t in toolkit.tools()], declared, (echoed.output, echoed.is_error))
        )
        return await super().ask(prompt, toolkit, **options)


async def test_a_task_runs_with_only_the_tools_its_callers_scopes_allow(authz):
    def ping(args: dict[str, Any], ctx: Any) -> str:
        return "pong"

    recording = _Recording()
    toolkit = Toolkit(
        builtins=False, extra_tools=[echo_tool(), Tool("ping", "Ping", None, "native", ping)]
    )
    auth = ResourceAuth(
        issuer=authz.issuer, scopes=["agent:use"], tool_scopes={"echo": ["tools:echo"]}
    )
    handle = await toolkit.serve(
        "127.0.0.1:0",
        a2a={"name": "scoped"},
        client=recording,
        auth=auth,
        auth_token="operator-token-77",
    )
    async with handle, httpx2.AsyncClient() as http:
        for bearer in (
            authz.token(handle.url + "/", scope="agent:use"),
            authz.token(handle.url + "/", scope="agent:use tools:echo"),
            "operator-token-77",  # the static token: every tool, as on the MCP side
        ):
            sent = await http.post(
                handle.url + "/",
                json=_send("hi"),
                headers={"Authorization": f"Bearer {bearer}", "A2A-Version": "1.0"},
            )
            assert sent.status_code == 200
            task = sent.json()["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert recording.runs == [
        (["ping"], ["ping"], ("Unknown tool: echo. Available tools: ping", True)),
        (["echo", "ping"], ["echo", "ping"], ("echo: x", False)),
        (["echo", "ping"], ["echo", "ping"], ("echo: x", False)),
    ]
    # The toolkit itself is untouched by the runs' views.
    assert [t.name for t in toolkit.tools()] == ["echo", "ping"]


async def test_a_scoped_task_sees_the_tools_registered_since_an_earlier_one(authz):
    """The view of a set of scopes is kept across tasks, yet follows the toolkit's tool set."""

    def ping(args: dict[str, Any], ctx: Any) -> str:
        return "pong"

    recording = _Recording()
    toolkit = Toolkit(builtins=False, extra_tools=[echo_tool()])
    auth = ResourceAuth(
        issuer=authz.issuer, scopes=["agent:use"], tool_scopes={"echo": ["tools:echo"]}
    )
    handle = await toolkit.serve("127.0.0.1:0", a2a={"name": "scoped"}, client=recording, auth=auth)
    bearer = authz.token(handle.url + "/", scope="agent:use")
    async with handle, httpx2.AsyncClient() as http:
        for step in range(3):
            if step == 2:
                toolkit.register(Tool("ping", "Ping", None, "native", ping))
            sent = await http.post(
                handle.url + "/",
                json=_send("hi"),
                headers={"Authorization": f"Bearer {bearer}", "A2A-Version": "1.0"},
            )
            assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [names for names, _, _ in recording.runs] == [[], [], ["ping"]]
