"""OAuth 2.1 for remote MCP servers, against the MCP SDK's own authorization-server routes (an
auto-approving in-memory provider) and a protected SDK MCP server in front of them."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.fake_llm import FakeLLM, call, text, tools
from support.polling import wait_until
from support.sdk_oauth import OAuthWorld, follow_authorization
from toolnexus import Answer, Context, FileTokenStore, MemoryTokenStore, Request, create_toolkit
from toolnexus.toolkit import Toolkit

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(autouse=True)
def fresh(
    oauth_world: OAuthWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Each test signs in from nothing: its own `$TOOLNEXUS_HOME`, counters at zero, tokens
    that last an hour."""
    monkeypatch.setenv("TOOLNEXUS_HOME", str(tmp_path / "home"))
    provider = oauth_world.provider
    provider.reset_counts()
    provider.access_lifetime = 3600
    provider.accept_metadata_documents = False
    yield
    provider.access_lifetime = 3600


class Browser:
    """A host's `wait_for`: follows the authorization URL like a browser would and answers with
    the callback URL it lands on (or declines)."""

    def __init__(self, *, decline: bool = False, as_code: bool = False) -> None:
        self.requests: list[Request] = []
        self.decline = decline
        self.as_code = as_code

    async def __call__(self, request: Request) -> Answer:
        self.requests.append(request)
        if self.decline:
            return Answer(request.id, False, reason="declined")
        landed = await follow_authorization(request.url or "")
        if self.as_code:
            from urllib.parse import parse_qs, urlsplit

            query = {k: v[0] for k, v in parse_qs(urlsplit(landed).query).items()}
            fields = {"code": query["code"], "state": query["state"], "iss": query["iss"]}
            return Answer(request.id, True, fields)
        return Answer(request.id, True, {"callbackUrl": landed})


def config(world: OAuthWorld, **auth: Any) -> dict[str, Any]:
    return {"mcpServers": {"p": world.server_config(**auth)}}


async def toolkit(world: OAuthWorld, wait_for: Any = None, **auth: Any) -> Toolkit:
    return await create_toolkit(config(world, **auth), builtins=False, wait_for=wait_for)


def record_path(world: OAuthWorld) -> Path:
    return FileTokenStore().path_for(world.mcp_url)


def secrets_in(text: str, world: OAuthWorld) -> list[str]:
    return [s for s in world.provider.issued_secrets() if s in text]


async def test_wait_for_gets_the_authorization_request_and_the_server_connects(
    oauth_world: OAuthWorld, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    tk = await toolkit(oauth_world, browser)
    try:
        assert tk.mcp_status() == {"p": "connected"}
        [request] = browser.requests
        assert request.kind == "authorization"
        assert request.prompt == 'Sign in to MCP server "p"'
        assert request.data == {"server": "p", "redirectUri": "http://127.0.0.1:33418/callback"}
        assert request.expiresAt is not None and request.expiresAt.endswith("Z")
        assert request.url is not None and "code_challenge_method=S256" in request.url
        assert "resource=" in request.url
        result = await tk.execute("p_whoami", {})
        assert (result.output, result.is_error) == ("user-1", False)
        assert oauth_world.provider.registrations == 1  # dynamic registration
    finally:
        await tk.close()
    path = record_path(oauth_world)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    record = json.loads(path.read_text())
    assert record["url"] == oauth_world.mcp_url
    assert {"tokens", "clientInfo", "expiresAt", "authorizationServer"} <= set(record)
    assert record["clientInfo"]["client_name"] == "toolnexus"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert oauth_world.provider.issued_secrets()
    assert secrets_in(logged, oauth_world) == []
    assert secrets_in(repr(tk.mcp_servers()), oauth_world) == []


async def test_a_code_and_state_answer_works_too(oauth_world: OAuthWorld) -> None:
    tk = await toolkit(oauth_world, Browser(as_code=True), store="memory")
    try:
        assert tk.mcp_status() == {"p": "connected"}
    finally:
        await tk.close()
    assert not record_path(oauth_world).exists()  # "memory": nothing written


async def test_without_wait_for_the_server_needs_auth_until_authorized(
    oauth_world: OAuthWorld,
) -> None:
    tk = await toolkit(oauth_world)
    try:
        state = tk.mcp_servers()["p"]
        assert (state.status, state.error, state.tool_count) == (
            "needs_auth",
            "authorization required",
            0,
        )
        assert [t.name for t in tk.tools()] == []
        request = tk.mcp_auth_request("p")
        assert request is not None and request.kind == "authorization"
        assert state.auth_url == request.url
        assert await tk.mcp_authorize("p", Answer("another-id", True, {})) is False
        landed = await follow_authorization(request.url or "")
        assert await tk.authorize("p", Answer(request.id, True, {"callbackUrl": landed}))
        assert tk.mcp_status() == {"p": "connected"}
        assert tk.mcp_auth_request("p") is None
        assert "p_whoami" in [t.name for t in tk.tools()]
        assert (await tk.execute("p_whoami", {})).output == "user-1"
        assert await tk.mcp_authorize("p", Answer(request.id, True, {})) is False  # done
    finally:
        await tk.close()


async def test_a_declined_sign_in_fails_the_server(
    oauth_world: OAuthWorld, caplog: pytest.LogCaptureFixture
) -> None:
    tk = await toolkit(oauth_world, Browser(decline=True))
    try:
        state = tk.mcp_servers()["p"]
        assert state.status == "failed"
        assert state.error == "authorization declined (declined)"
    finally:
        await tk.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    tk = await toolkit(oauth_world)
    try:
        request = tk.mcp_auth_request("p")
        assert request is not None
        assert await tk.mcp_authorize("p", Answer(request.id, False, reason="expired")) is False
        assert tk.mcp_servers()["p"].error == "authorization declined (expired)"
    finally:
        await tk.close()


async def test_a_second_process_reuses_the_stored_token(
    oauth_world: OAuthWorld, tmp_path: Path
) -> None:
    first = await toolkit(oauth_world, Browser())
    await first.close()
    assert oauth_world.provider.authorizations == 1
    script = textwrap.dedent(
        """
        import asyncio, json, sys
        from toolnexus import create_toolkit

        async def main():
            tk = await create_toolkit(json.loads(sys.argv[1]), builtins=False)
            try:
                result = await tk.execute("p_whoami", {})
                print(json.dumps([tk.mcp_status(), result.output]))
            finally:
                await tk.close()

        asyncio.run(main())
        """
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        json.dumps(config(oauth_world)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ},
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 0, err.decode()
    assert json.loads(out.decode().strip().splitlines()[-1]) == [{"p": "connected"}, "user-1"]
    assert oauth_world.provider.authorizations == 1  # nobody was asked again


async def test_an_expired_stored_token_is_refreshed_without_asking(
    oauth_world: OAuthWorld,
) -> None:
    first = await toolkit(oauth_world, Browser())
    await first.close()
    path = record_path(oauth_world)
    record = json.loads(path.read_text())
    record["expiresAt"] = 1.0  # as if the hour had passed
    path.write_text(json.dumps(record))
    tk = await toolkit(oauth_world)  # no wait_for: nobody could be asked
    try:
        assert tk.mcp_status() == {"p": "connected"}
        assert oauth_world.provider.refreshes == 1
        assert oauth_world.provider.authorizations == 1
        assert (await tk.execute("p_whoami", {})).output == "user-1"
    finally:
        await tk.close()
    refreshed = json.loads(path.read_text())
    assert refreshed["tokens"]["access_token"] != record["tokens"]["access_token"]
    assert refreshed["expiresAt"] > 1.0


async def signed_in(world: OAuthWorld) -> Toolkit:
    """A toolkit signed in through `mcp_authorize`, its tokens in memory."""
    tk = await toolkit(world, store="memory")
    request = tk.mcp_auth_request("p")
    assert request is not None
    landed = await follow_authorization(request.url or "")
    assert await tk.mcp_authorize("p", Answer(request.id, True, {"callbackUrl": landed}))
    return tk


async def test_a_token_about_to_expire_is_refreshed_during_the_session(
    oauth_world: OAuthWorld,
) -> None:
    # due for refresh half its life after it arrives: 1.5 s of slack for a loaded machine
    oauth_world.provider.access_lifetime = 3
    tk = await signed_in(oauth_world)
    try:

        async def refreshed() -> bool:
            result = await tk.execute("p_whoami", {})
            assert (result.output, result.is_error) == ("user-1", False)
            return oauth_world.provider.refreshes > 0

        await wait_until(refreshed, timeout=30, check_every=0.1)
        assert oauth_world.provider.authorizations == 1  # nobody was asked
    finally:
        await tk.close()


async def test_a_revoked_refresh_token_returns_the_server_to_needs_auth(
    oauth_world: OAuthWorld,
) -> None:
    first = await toolkit(oauth_world, Browser())
    await first.close()
    path = record_path(oauth_world)
    record = json.loads(path.read_text())
    record["expiresAt"] = 1.0
    path.write_text(json.dumps(record))
    oauth_world.provider.revoke_everything()
    tk = await toolkit(oauth_world)
    try:
        state = tk.mcp_servers()["p"]
        assert state.status == "needs_auth"
        assert state.error == (
            "authorization required (the authorization server refused the stored refresh "
            "token: HTTP 400)"
        )
        request = tk.mcp_auth_request("p")
        assert request is not None
        landed = await follow_authorization(request.url or "")
        assert await tk.mcp_authorize("p", Answer(request.id, True, {"callbackUrl": landed}))
        assert tk.mcp_status() == {"p": "connected"}
    finally:
        await tk.close()


async def test_a_refresh_refused_mid_session_hands_the_new_sign_in_to_the_host(
    oauth_world: OAuthWorld,
) -> None:
    oauth_world.provider.access_lifetime = 1
    tk = await signed_in(oauth_world)
    try:
        assert tk.mcp_status() == {"p": "connected"}
        oauth_world.provider.revoke_refresh_tokens()

        async def suspended() -> Any:
            result = await tk.execute("p_whoami", {})
            return result if result.is_error else None

        # (A refresh already under way at the revocation may renew the tokens once more.)
        result = await wait_until(suspended, timeout=30, check_every=0.1)
        request = pending_of(result)
        assert result.output == f"{request.prompt}\n{request.url}"
        assert tk.mcp_status() == {"p": "connected"}  # the call waits, the server stays
        landed = await follow_authorization(request.url or "")
        resumed = await tk.execute(
            "p_whoami",
            {},
            Context(answer=Answer(request.id, True, {"callbackUrl": landed}), request=request),
        )
        assert (resumed.output, resumed.is_error) == ("user-1", False)
        assert oauth_world.provider.authorizations == 2
    finally:
        await tk.close()


def pending_of(result: Any) -> Request:
    """The `authorization` Request of a mid-call sign-in's suspension, checked."""
    assert result.is_error
    request = (result.metadata or {}).get("pending")
    assert isinstance(request, Request), result.output
    assert request.kind == "authorization"
    assert request.prompt == 'Sign in to MCP server "p"'
    assert request.url is not None and "code_challenge_method=S256" in request.url
    assert request.expiresAt is not None
    assert result.metadata == {"pending": request, "server": "p"}
    return request


async def test_a_tool_needing_more_scope_steps_up(oauth_world: OAuthWorld) -> None:
    browser = Browser()
    tk = await toolkit(oauth_world, browser, store="memory")
    try:
        result = await tk.execute("p_admin_report", {})
        assert (result.output, result.is_error) == ("admin report", False)
        assert len(browser.requests) == 2
        assert "scope=mcp+admin" in (browser.requests[1].url or "")
        assert (await tk.execute("p_whoami", {})).output == "user-1"  # the union kept mcp
    finally:
        await tk.close()


async def test_configured_scopes_are_always_requested(oauth_world: OAuthWorld) -> None:
    browser = Browser()
    tk = await toolkit(oauth_world, browser, store="memory", scopes=["admin"])
    try:
        assert tk.mcp_status() == {"p": "connected"}
        assert "scope=mcp+admin" in (browser.requests[0].url or "")
        assert (await tk.execute("p_admin_report", {})).output == "admin report"
        assert len(browser.requests) == 1  # granted up front: no step-up
    finally:
        await tk.close()


async def test_a_preregistered_client_id_skips_registration(oauth_world: OAuthWorld) -> None:
    oauth_world.provider.add_client(
        "pre-registered", redirect_uris=["http://127.0.0.1:33418/callback"]
    )
    browser = Browser()
    tk = await toolkit(oauth_world, browser, store="memory", clientId="pre-registered")
    try:
        assert tk.mcp_status() == {"p": "connected"}
        assert "client_id=pre-registered" in (browser.requests[0].url or "")
        assert oauth_world.provider.registrations == 0
    finally:
        await tk.close()


@pytest.mark.parametrize(
    ("supported", "registered", "configured"),
    [
        # An authorization server that takes only HTTP Basic (the conformance suite's
        # pre-registration scenario): chosen from its metadata.
        (["client_secret_basic"], "client_secret_basic", None),
        (["client_secret_post"], "client_secret_post", None),
        # Both listed: Basic, which every authorization server must support (RFC 6749 2.3.1).
        (["client_secret_post", "client_secret_basic"], "client_secret_basic", None),
        # The config's method is kept as it is.
        (["client_secret_post", "client_secret_basic"], "client_secret_post", "client_secret_post"),
    ],
)
async def test_a_preregistered_confidential_client_authenticates_as_the_server_accepts(
    oauth_world: OAuthWorld, supported: list[str], registered: str, configured: str | None
) -> None:
    provider = oauth_world.provider
    provider.token_auth_methods = supported
    provider.add_client(
        "confidential",
        "s3cret-Value-1",
        redirect_uris=["http://127.0.0.1:33418/callback"],
        auth_method=registered,
    )
    method = {"tokenEndpointAuthMethod": configured} if configured else {}
    try:
        tk = await toolkit(
            oauth_world,
            Browser(),
            store="memory",
            clientId="confidential",
            clientSecret="s3cret-Value-1",
            **method,
        )
        try:
            assert tk.mcp_status() == {"p": "connected"}
            assert provider.code_exchanges == 1
        finally:
            await tk.close()
    finally:
        provider.token_auth_methods = ["none", "client_secret_post", "client_secret_basic"]


async def test_a_client_id_metadata_document_is_used_where_supported(
    oauth_world: OAuthWorld,
) -> None:
    oauth_world.provider.accept_metadata_documents = True
    document = "https://client.example/toolnexus/client.json"
    browser = Browser()
    tk = await toolkit(oauth_world, browser, store="memory", clientMetadataUrl=document)
    try:
        assert tk.mcp_status() == {"p": "connected"}
        assert "client_id=https%3A%2F%2Fclient.example" in (browser.requests[0].url or "")
        assert oauth_world.provider.registrations == 0
    finally:
        await tk.close()


async def test_client_credentials_need_no_person(
    oauth_world: OAuthWorld, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "m2m-secret-value-42"
    monkeypatch.setenv("P_CLIENT_SECRET", secret)
    oauth_world.provider.add_client("machine", secret, grant_types=["client_credentials"])
    tk = await create_toolkit(
        {
            "mcpServers": {
                "p": {
                    "url": oauth_world.mcp_url,
                    "auth": {
                        "type": "client_credentials",
                        "clientId": "machine",
                        "clientSecret": "${P_CLIENT_SECRET}",
                        "store": "memory",
                    },
                }
            }
        },
        builtins=False,
    )
    try:
        assert tk.mcp_status() == {"p": "connected"}
        assert (await tk.execute("p_whoami", {})).output == "user-1"
        assert oauth_world.provider.client_credentials_grants == 1
        assert oauth_world.provider.authorizations == 0
    finally:
        await tk.close()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert secret not in logged
    assert secrets_in(logged, oauth_world) == []


async def test_wrong_client_credentials_fail_the_server_readably(
    oauth_world: OAuthWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("P_CLIENT_SECRET", "not-the-right-secret")
    oauth_world.provider.add_client(
        "machine2", "the-right-secret", grant_types=["client_credentials"]
    )
    tk = await create_toolkit(
        {
            "mcpServers": {
                "p": {
                    "url": oauth_world.mcp_url,
                    "auth": {
                        "type": "client_credentials",
                        "clientId": "machine2",
                        "clientSecret": "${P_CLIENT_SECRET}",
                        "store": "memory",
                    },
                }
            }
        },
        builtins=False,
    )
    try:
        state = tk.mcp_servers()["p"]
        assert state.status == "failed"
        assert state.error is not None and state.error.startswith("authorization failed: ")
        assert "not-the-right-secret" not in state.error
    finally:
        await tk.close()


class SdkStorage:
    """A host's own MCP SDK `TokenStorage`."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


@pytest.mark.parametrize("kind", ["token-store", "sdk-storage"])
async def test_the_toolkit_keeps_credentials_where_it_is_told(
    oauth_world: OAuthWorld, kind: str
) -> None:
    store: Any = MemoryTokenStore() if kind == "token-store" else SdkStorage()
    for _ in range(2):
        tk = await create_toolkit(
            config(oauth_world),
            builtins=False,
            wait_for=Browser(),
            mcp_token_storage=store,
        )
        try:
            assert tk.mcp_status() == {"p": "connected"}
        finally:
            await tk.close()
        assert oauth_world.provider.authorizations == 1  # the second round asked nobody
    assert not record_path(oauth_world).exists()
    if kind == "token-store":
        record = await store.load(oauth_world.mcp_url)
        assert record is not None and record["url"] == oauth_world.mcp_url
    else:
        assert store.tokens is not None and store.client is not None


async def test_the_call_budget_stops_while_a_person_steps_up(oauth_world: OAuthWorld) -> None:
    """The person's time is not the server's: a step-up that takes longer than the server's
    call timeout still completes the call."""

    class SlowPerson(Browser):
        async def __call__(self, request: Request) -> Answer:
            if self.requests:  # the step-up, not the first sign-in
                await asyncio.sleep(2.5)  # the person reads the consent page (the scenario)
            return await super().__call__(request)

    person = SlowPerson()
    tk = await create_toolkit(
        {"mcpServers": {"p": {**oauth_world.server_config(store="memory"), "timeout": 2000}}},
        builtins=False,
        wait_for=person,
    )
    try:
        result = await tk.execute("p_admin_report", {})
        assert (result.output, result.is_error) == ("admin report", False)
        assert len(person.requests) == 2
    finally:
        await tk.close()


async def test_a_step_up_without_wait_for_is_a_suspension_the_host_resumes(
    oauth_world: OAuthWorld,
) -> None:
    tk = await signed_in(oauth_world)
    try:
        result = await tk.execute("p_admin_report", {})
        request = pending_of(result)
        assert "scope=mcp+admin" in (request.url or "")
        assert request.data is not None
        assert request.data["mcp"] == {
            "server": "p",
            "tool": "admin_report",
            "arguments": {},
            "signIn": True,
        }
        assert request.data["server"] == "p"
        json.dumps(request.data)  # plain JSON: a host can keep it with the conversation
        # Meanwhile the server stays connected; another call needing no more scope is answered
        # once the sign-in is, a call made now shares the same sign-in.
        assert tk.mcp_status() == {"p": "connected"}
        landed = await follow_authorization(request.url or "")
        answer = Answer(request.id, True, {"callbackUrl": landed})
        assert (await tk.execute("p_admin_report", {}, Context(answer=answer))).output == (
            "admin report"  # the answer alone will do: the Request is remembered here
        )
        assert (await tk.execute("p_whoami", {})).output == "user-1"
        assert (await tk.execute("p_admin_report", {})).output == "admin report"  # granted now
    finally:
        await tk.close()


async def test_a_declined_step_up_is_an_error_and_the_server_carries_on(
    oauth_world: OAuthWorld,
) -> None:
    tk = await signed_in(oauth_world)
    try:
        request = pending_of(await tk.execute("p_admin_report", {}))
        declined = await tk.execute(
            "p_admin_report",
            {},
            Context(answer=Answer(request.id, False, reason="not now"), request=request),
        )
        assert (declined.output, declined.is_error) == (
            'MCP server "p" authorization declined (not now)',
            True,
        )
        assert tk.mcp_status() == {"p": "connected"}  # the connection lived through it
        assert (await tk.execute("p_whoami", {})).output == "user-1"
    finally:
        await tk.close()


async def test_an_answer_for_another_call_is_refused(oauth_world: OAuthWorld) -> None:
    tk = await signed_in(oauth_world)
    try:
        request = pending_of(await tk.execute("p_admin_report", {}))
        answer = Answer(request.id, True, {"callbackUrl": "http://127.0.0.1:33418/callback"})
        other = await tk.execute("p_whoami", {}, Context(answer=answer, request=request))
        assert (other.output, other.is_error) == ("the answer does not belong to this call", True)
    finally:
        await tk.close()


async def test_a_call_made_while_a_sign_in_waits_shares_it(oauth_world: OAuthWorld) -> None:
    tk = await signed_in(oauth_world)
    try:
        first = pending_of(await tk.execute("p_admin_report", {}))
        second = pending_of(await tk.execute("p_whoami", {}))
        assert second.id != first.id and second.url == first.url
        landed = await follow_authorization(first.url or "")
        answer = Answer(second.id, True, {"callbackUrl": landed})
        assert (await tk.execute("p_whoami", {}, Context(answer=answer))).output == "user-1"
        # The first call went on once the sign-in was done; its own resume returns its result.
        done = Answer(first.id, True, {"callbackUrl": landed})
        assert (await tk.execute("p_admin_report", {}, Context(answer=done))).output == (
            "admin report"
        )
        assert oauth_world.provider.authorizations == 2  # one sign-in for both
    finally:
        await tk.close()


async def test_the_client_loop_hands_a_mid_call_sign_in_to_its_wait_for(
    oauth_world: OAuthWorld, llm: FakeLLM, make_client: Callable[..., Any]
) -> None:
    tk = await signed_in(oauth_world)  # the toolkit has no wait_for: the client's answers
    try:
        browser = Browser()
        llm.push(tools(call("p_admin_report", {}, id="c1")), text("done"))
        result = await make_client("openai", wait_for=browser).run("report", tk)
        assert result.status == "done"
        assert [(c["name"], c["output"], c["is_error"]) for c in result.tool_calls] == [
            ("p_admin_report", "admin report", False)
        ]
        [request] = browser.requests
        assert request.kind == "authorization" and "scope=mcp+admin" in (request.url or "")
    finally:
        await tk.close()


async def test_without_wait_for_the_run_is_pending_on_the_sign_in(
    oauth_world: OAuthWorld, llm: FakeLLM, make_client: Callable[..., Any]
) -> None:
    tk = await signed_in(oauth_world)
    try:
        llm.push(tools(call("p_admin_report", {}, id="c1")))
        result = await make_client("openai").run("report", tk)
        assert result.status == "pending"
        request = result.pending
        assert request is not None and request.kind == "authorization"
        [made] = result.tool_calls
        landed = await follow_authorization(request.url or "")
        answer = Answer(request.id, True, {"callbackUrl": landed})
        resumed = await tk.execute(
            made["name"], made["args"], Context(answer=answer, request=request)
        )
        assert (resumed.output, resumed.is_error) == ("admin report", False)
    finally:
        await tk.close()


async def test_two_toolkits_sharing_a_store_follow_each_others_refreshes(
    oauth_world: OAuthWorld,
) -> None:
    """The authorization server rotates refresh tokens: whichever toolkit refreshes next must use
    the token the other one stored, not the one it read at start."""
    oauth_world.provider.access_lifetime = 1
    first = await toolkit(oauth_world, Browser())
    second = await toolkit(oauth_world)  # signed in from the shared file store
    try:
        assert second.mcp_status() == {"p": "connected"}

        for tk, refreshes in ((first, 1), (second, 2), (first, 3)):  # one after the other

            async def refreshed(tk: Toolkit = tk, refreshes: int = refreshes) -> bool:
                result = await tk.execute("p_whoami", {})
                assert (result.output, result.is_error) == ("user-1", False)
                return oauth_world.provider.refreshes >= refreshes

            await wait_until(refreshed, timeout=30, check_every=0.2)
        assert oauth_world.provider.authorizations == 1
        assert oauth_world.provider.refresh_reuses == 0
    finally:
        await first.close()
        await second.close()


# A child that has loaded everything a connect needs, then waits for "go" on stdin before it
# connects (its stored access token has expired: connecting starts with a refresh).
_REFRESHER = textwrap.dedent(
    """
    import asyncio, json, sys
    import toolnexus.mcp_source._connection  # the SDK and its OAuth client, loaded up front
    from toolnexus import create_toolkit

    async def main():
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        tk = await create_toolkit(json.loads(sys.argv[1]), builtins=False)
        try:
            result = await tk.execute("p_whoami", {})
            print(json.dumps([tk.mcp_status(), result.output]), flush=True)
        finally:
            await tk.close()

    asyncio.run(main())
    """
)


async def test_two_processes_refreshing_at_once_spend_the_refresh_token_once(
    oauth_world: OAuthWorld,
) -> None:
    first = await toolkit(oauth_world, Browser())
    await first.close()
    path = record_path(oauth_world)
    record = json.loads(path.read_text())
    record["expiresAt"] = 1.0  # as if the hour had passed
    path.write_text(json.dumps(record))
    oauth_world.provider.reset_counts()
    # The first refresh to reach the server is held until a second one arrives (or 1 s): two
    # refreshes made at once would both be answered from the same refresh token.
    oauth_world.provider.hold_refreshes = 1.0
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _REFRESHER,
            json.dumps(config(oauth_world)),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ},
        )
        for _ in range(2)
    ]
    try:
        for child in children:
            assert child.stdout is not None
            assert await asyncio.wait_for(child.stdout.readline(), 60) == b"ready\n"
        for child in children:  # both connect at the same moment
            assert child.stdin is not None
            child.stdin.write(b"go\n")
            await child.stdin.drain()
        outcomes = []
        for child in children:
            out, err = await asyncio.wait_for(child.communicate(), 60)
            assert child.returncode == 0, err.decode()
            outcomes.append(json.loads(out.decode().strip().splitlines()[-1]))
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()
    assert outcomes == [[{"p": "connected"}, "user-1"]] * 2
    # One refresh in all: the second process waits for the first and takes up what it stored.
    assert oauth_world.provider.refresh_reuses == 0
    assert oauth_world.provider.refreshes == 1
    assert oauth_world.provider.authorizations == 0  # nobody was asked to sign in again
    assert json.loads(path.read_text())["expiresAt"] > 1.0


@pytest.mark.parametrize("kind", ["file", "memory"])
async def test_two_toolkits_refreshing_at_once_refresh_once(
    oauth_world: OAuthWorld, kind: str
) -> None:
    """Toolkits of one process sharing a store, connecting at the same moment with an expired
    token: one refreshes, the other takes up what it stored."""
    store = FileTokenStore() if kind == "file" else MemoryTokenStore()
    first = await create_toolkit(
        config(oauth_world), builtins=False, wait_for=Browser(), mcp_token_storage=store
    )
    await first.close()
    record = await store.load(oauth_world.mcp_url)
    assert record is not None
    await store.save(oauth_world.mcp_url, {**record, "expiresAt": 1.0})  # the hour has passed
    oauth_world.provider.reset_counts()
    oauth_world.provider.hold_refreshes = 0.5  # a second refresh made at once would meet it
    both = await asyncio.gather(
        *(
            create_toolkit(config(oauth_world), builtins=False, mcp_token_storage=store)
            for _ in range(2)
        )
    )
    try:
        for tk in both:
            assert tk.mcp_status() == {"p": "connected"}
            assert (await tk.execute("p_whoami", {})).output == "user-1"
    finally:
        for tk in both:
            await tk.close()
    assert oauth_world.provider.refreshes == 1
    assert oauth_world.provider.refresh_reuses == 0
    assert oauth_world.provider.authorizations == 0
