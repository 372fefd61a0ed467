"""No token or secret shows up anywhere: every log record of every logger at DEBUG, error
outputs, metric events, results and reprs, across the auth flows: serving, A2A agents, and
OAuth-protected MCP servers.

One run goes through all of them with a handler on the root logger at DEBUG (the SDKs', HTTP
clients' and servers' loggers included), then greps everything it saw for every secret."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from a2a.types import a2a_pb2 as pb
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from support.a2a_secured import answer_did, echo_tool, secured_agent
from support.oauth_server import AuthServer
from support.sdk_oauth import follow_authorization
from toolnexus.a2a import agent, agent_tools
from toolnexus.client import create_client
from toolnexus.serve import ResourceAuth, RunTaskClient
from toolnexus.testing import ScriptedModel, override, text, tool_call, tools
from toolnexus.toolkit import Toolkit, create_toolkit
from toolnexus.types import Answer, Request, ToolContext

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

STATIC = "leak-static-token-6610"
INTROSPECTION_SECRET = "leak-introspection-secret-3071"
ROBOT_SECRET = "leak-robot-secret-8841"
API_KEY = "leak-api-key-2250"
BEARER = "leak-bearer-4417"
OPAQUE = "leak-opaque-token-9913"
PROVIDER_KEY = "sk-leak-provider-key-5154"
M2M_SECRET = "leak-m2m-secret-7290"


class _Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        self.lines.append(repr(record.__dict__))


@pytest.fixture
def everything() -> Iterator[_Everything]:
    handler = _Everything()
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    levels = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    before = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for name in levels:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(before)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _client(metrics: list[dict[str, Any]], **options: Any) -> Any:
    """A client with a provider key, whose metric events land in `metrics`."""
    return create_client(
        base_url="http://127.0.0.1:1/v1",
        style="openai",
        model="m",
        api_key=PROVIDER_KEY,
        on_metric=metrics.append,
        **options,
    )


async def _mcp_call(url: str, token: str) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as authed,
        Client(streamable_http_client(url, http_client=authed)) as client,
    ):
        await client.list_tools()
        return await client.call_tool("echo", {"text": "x"})


async def test_no_secret_anywhere(authz: AuthServer, everything, monkeypatch):
    monkeypatch.setenv("LEAK_ROBOT_SECRET", ROBOT_SECRET)
    monkeypatch.setenv("LEAK_BEARER", BEARER)
    authz.clients["leak-robot"] = ROBOT_SECRET
    seen: list[str] = []  # outputs, metric events, reprs
    calls: list[dict[str, Any]] = []

    # The gateway and the agent, guarded by OAuth, with a static token and an introspection
    # client secret.
    auth = ResourceAuth(
        issuer=authz.issuer,
        scopes=["agent:use"],
        tool_scopes={"echo": ["tools:echo"]},
        introspection_endpoint=f"{authz.issuer}/introspect",
        client_id="leak-gateway",
        client_secret=INTROSPECTION_SECRET,
    )
    handle = await Toolkit(extra_tools=[echo_tool()]).serve(
        "127.0.0.1:0",
        mcp={},
        a2a={"name": "leaky", "skills": []},
        client=RunTaskClient(answer_did),
        auth=auth,
        auth_token=STATIC,
        on_call=calls.append,
    )
    mcp_url = handle.url + "/mcp"
    tokens = [
        authz.token(mcp_url, scope="agent:use tools:echo"),  # good
        authz.token(mcp_url, scope="agent:use"),  # lacks the tool's scope: 403
        authz.token("http://127.0.0.1:1/mcp", scope="agent:use"),  # another audience: 401
        authz.token(mcp_url, exp=1),  # expired: 401
        OPAQUE,
        STATIC,
    ]
    authz.opaque[OPAQUE] = {"scope": "agent:use tools:echo", "aud": mcp_url}
    try:
        for token in tokens:
            try:
                seen.append(repr(await _mcp_call(mcp_url, token)))
            except Exception as exc:  # refused: what the SDK client says about it
                seen.append(repr(exc) + str(exc))

        # Our outbound tool: client credentials to the agent, through a client run with metrics.
        robot = {
            "type": "client_credentials",
            "clientId": "leak-robot",
            "clientSecret": "${LEAK_ROBOT_SECRET}",
        }
        agent_tool_list = await agent_tools(agent(handle.url, poll_every=10, auth=robot))
        seen.append(repr(agent_tool_list))
        metrics: list[dict[str, Any]] = []
        client = _client(metrics)
        toolkit = Toolkit(extra_tools=agent_tool_list)
        model = ScriptedModel(tools(tool_call("leaky_general", {"task": "go"})), text("done"))
        with override(client, model):
            result = await client.run("use the agent", toolkit)
        seen += [repr(result), repr(client), repr(metrics), repr(calls)]
        assert "did: go" in repr(result.messages)

        # A wrong client secret, a wrong bearer, an API key in the query.
        bad = {**robot, "clientSecret": "leak-wrong-secret-0402"}
        [bad_tool] = await agent_tools(agent(handle.url, auth=bad))
        failed = await bad_tool.execute({"task": "x"}, ToolContext(timeout=10))
        assert failed.is_error
        seen.append(repr(failed))
    finally:
        await handle.stop()

    key_scheme = pb.SecurityScheme(
        api_key_security_scheme=pb.APIKeySecurityScheme(location="query", name="k")
    )
    async with secured_agent({"k": key_scheme}, lambda r: r.query_params.get("k") == API_KEY) as p:
        [keyed] = await agent_tools(
            agent(p.url, poll_every=10, auth={"type": "apiKey", "key": API_KEY})
        )
        seen.append(repr(await keyed.execute({"task": "echo q"}, ToolContext(timeout=10))))
        wrong = agent(p.url, poll_every=10, auth={"type": "bearer", "token": "${LEAK_BEARER}"})
        seen.append(repr(wrong))
        [refused] = await agent_tools(wrong)
        seen.append(repr(await refused.execute({"task": "echo no"}, ToolContext(timeout=10))))

    issued = [t for t in tokens if t.count(".") == 2]
    issued += [a for a in authz.issued_tokens]
    secrets = [STATIC, INTROSPECTION_SECRET, ROBOT_SECRET, API_KEY, BEARER, OPAQUE, PROVIDER_KEY]
    secrets += ["leak-wrong-secret-0402"]
    pieces = [piece for token in issued for piece in token.split(".")[1:]]
    text_seen = "\n".join(everything.lines + seen)
    assert len(everything.lines) > 50  # the SDKs and servers did log at DEBUG
    for secret in secrets + pieces:
        assert secret not in text_seen, f"leaked: {secret[:6]}…"


async def test_no_secret_anywhere_on_the_mcp_client_side(
    oauth_world, everything, monkeypatch, tmp_path
):
    """Signing in to an OAuth-protected MCP server (wait_for, step-up; without wait_for, a
    step-up's suspension resumed), client credentials, a wrong client secret: nothing issued or
    configured shows up."""
    monkeypatch.setenv("LEAK_M2M_SECRET", M2M_SECRET)
    monkeypatch.setenv("LEAK_WRONG_SECRET", "leak-wrong-m2m-secret-66")
    provider = oauth_world.provider
    provider.add_client("leak-m2m", M2M_SECRET, grant_types=["client_credentials"])
    seen: list[str] = []

    async def wait_for(request: Request) -> Answer:
        assert request.url is not None
        landed = await follow_authorization(request.url)
        return Answer(request.id, True, {"callbackUrl": landed})

    def entry(auth: dict[str, Any]) -> dict[str, Any]:
        return {"url": oauth_world.mcp_url, "auth": {**auth, "store": "memory"}}

    config = {
        "mcpServers": {
            "person": entry({"type": "oauth"}),
            "robot": entry(
                {
                    "type": "client_credentials",
                    "clientId": "leak-m2m",
                    "clientSecret": "${LEAK_M2M_SECRET}",
                }
            ),
            "wrong": entry(
                {
                    "type": "client_credentials",
                    "clientId": "leak-m2m",
                    "clientSecret": "${LEAK_WRONG_SECRET}",
                }
            ),
        }
    }
    toolkit = await create_toolkit(config, builtins=False, wait_for=wait_for)
    metrics: list[dict[str, Any]] = []
    client = _client(metrics, wait_for=wait_for)
    try:
        assert toolkit.mcp_status() == {
            "person": "connected",
            "robot": "connected",
            "wrong": "failed",
        }
        model = ScriptedModel(
            tools(
                tool_call("person_whoami", {}),
                tool_call("person_admin_report", {}),  # 403 insufficient_scope: step-up
                tool_call("robot_whoami", {}),
            ),
            text("done"),
        )
        with override(client, model):
            result = await client.run("who am I", toolkit)
        seen += [repr(result), repr(metrics), repr(toolkit.mcp_servers()), repr(toolkit)]
        assert "admin report" in repr(result.messages)
    finally:
        await toolkit.close()

    # No wait_for: the sign-in is finished later, then a step-up in the middle of a call is a
    # suspension the host resumes, once declined and once accepted; the credentials live in a
    # file store (with its lock file) this time.
    store = f"file:{tmp_path / 'auth'}"
    later = await create_toolkit(
        {"mcpServers": {"person": {"url": oauth_world.mcp_url, "auth": {"store": store}}}},
        builtins=False,
    )
    try:
        first = later.mcp_auth_request("person")
        assert first is not None
        seen += [repr(first), json.dumps(first.to_dict()), repr(later.mcp_servers())]
        assert await later.mcp_authorize("person", await wait_for(first))
        for decline in (True, False):
            suspended = await later.execute("person_admin_report", {})
            request = suspended.metadata["pending"] if suspended.metadata else None
            assert isinstance(request, Request)
            seen += [repr(suspended), json.dumps(request.to_dict()), repr(later.mcp_servers())]
            answer = Answer(request.id, False, reason="no") if decline else await wait_for(request)
            resumed = await later.execute(
                "person_admin_report", {}, ToolContext(answer=answer, request=request)
            )
            seen.append(repr(resumed))
        assert resumed.output == "admin report"
    finally:
        await later.close()
    for path in (tmp_path / "auth").iterdir():
        if path.suffix == ".lock":
            seen.append(path.read_text())  # the record itself holds the tokens, by design

    secrets = [*provider.issued_secrets(), M2M_SECRET, "leak-wrong-m2m-secret-66", PROVIDER_KEY]
    text_seen = "\n".join(everything.lines + seen)
    assert provider.issued_secrets() and len(everything.lines) > 50
    for secret in secrets:
        assert secret not in text_seen, f"leaked: {secret[:6]}…"
