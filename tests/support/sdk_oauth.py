"""An OAuth world for the client-side auth tests, built from the MCP SDK's own parts.

- `AutoApprove`: an in-memory `OAuthAuthorizationServerProvider` that approves every
  authorization request at once (the authorize endpoint redirects straight back with a code),
  counts what it does, and can expire or revoke what it issued.
- The authorization server: the SDK's `create_auth_routes` (metadata, authorize, token, dynamic
  registration, revocation) over that provider, plus the `client_credentials` grant the SDK's
  token handler does not have, on its own 127.0.0.1 port.
- The protected MCP server: an SDK `MCPServer` with `AuthSettings` naming that authorization
  server, serving `/.well-known/oauth-protected-resource/mcp` and answering `401` with
  `WWW-Authenticate: Bearer resource_metadata=...`; its `admin_report` tool needs the extra
  scope `admin` (a `403 insufficient_scope` challenge, so clients can step up).

Both servers run inside the test's event loop, so tests can look at and steer the provider.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    ProviderTokenVerifier,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_resource_metadata_url, create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.routing import Route

__all__ = ["SCOPE", "AutoApprove", "OAuthWorld", "follow_authorization", "running_oauth_world"]

SCOPE = "mcp"
"""The scope the protected MCP server requires for every request."""
ADMIN_SCOPE = "admin"
"""The extra scope `admin_report` requires (step-up)."""

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class AutoApprove(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Approves everything; keeps clients, codes and tokens in memory.

    `access_lifetime` is the `expires_in` (seconds) of new access tokens. Counters:
    `registrations`, `authorizations` (codes issued), `code_exchanges`, `refreshes`,
    `refresh_reuses` (a refresh token exchanged twice), `client_credentials_grants`.
    """

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.access_lifetime = 3600
        self.registrations = 0
        self.authorizations = 0
        self.code_exchanges = 0
        self.refreshes = 0
        self.client_credentials_grants = 0
        self.refusing_refresh = False
        self.hold_refreshes = 0.0  # see `load_refresh_token`
        self.spent_refresh: set[str] = set()
        self.refresh_reuses = 0  # refresh tokens exchanged a second time
        self._refresh_waiting: asyncio.Event | None = None
        self.issuer = ""  # set once the server listens
        self.accept_metadata_documents = False
        # What the metadata lists in `token_endpoint_auth_methods_supported`.
        self.token_auth_methods = ["none", "client_secret_post", "client_secret_basic"]

    # -- steering from tests --------------------------------------------------------------------

    def add_client(
        self,
        client_id: str,
        secret: str | None = None,
        *,
        grant_types: list[str] | None = None,
        redirect_uris: list[str] | None = None,
        auth_method: str | None = None,
    ) -> None:
        """Pre-register a client (a confidential one when `secret` is given), authenticating at
        the token endpoint by `auth_method` (default: the form body with a secret, else none)."""
        self.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=secret,
            redirect_uris=redirect_uris,  # type: ignore[arg-type]
            grant_types=grant_types or ["authorization_code", "refresh_token"],
            token_endpoint_auth_method=auth_method or ("client_secret_post" if secret else "none"),
            scope=f"{SCOPE} {ADMIN_SCOPE}",
        )

    def revoke_everything(self) -> None:
        """Forget every access and refresh token issued so far (a revocation at the server)."""
        self.access.clear()
        self.refresh.clear()

    def revoke_refresh_tokens(self) -> None:
        """Refuse every refresh token from now on, those issued so far and any a refresh that is
        already under way issues (access tokens stay good until they expire)."""
        self.refresh.clear()
        self.refusing_refresh = True

    def expire_access_tokens(self) -> None:
        """Make every issued access token expired server-side (refresh tokens stay good)."""
        for token in self.access.values():
            token.expires_at = int(time.time()) - 1

    def reset_counts(self) -> None:
        self.refusing_refresh = False
        self.hold_refreshes = 0.0
        self.registrations = self.authorizations = self.code_exchanges = 0
        self.refreshes = self.client_credentials_grants = self.refresh_reuses = 0

    def issued_secrets(self) -> list[str]:
        """Every access token, refresh token, code and client secret handed out (leak checks)."""
        found = [*self.access, *self.refresh, *self.codes]
        found += [c.client_secret for c in self.clients.values() if c.client_secret]
        return found

    # -- the provider protocol ------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        client = self.clients.get(client_id)
        if client is None and self.accept_metadata_documents and client_id.startswith("https://"):
            # A Client ID Metadata Document: a real server would fetch it; the test trusts it.
            client = OAuthClientInformationFull(
                client_id=client_id,
                redirect_uris=["http://127.0.0.1:33418/callback"],  # type: ignore[list-item]
                token_endpoint_auth_method="none",
                scope=f"{SCOPE} {ADMIN_SCOPE}",
            )
        return client

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.registrations += 1
        # RFC 7591 lets a server widen what it grants: every client may later step up to admin.
        client_info.scope = f"{SCOPE} {ADMIN_SCOPE}"
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = "code-" + secrets.token_urlsafe(16)
        self.authorizations += 1
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="user-1",
        )
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=self.issuer
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.code_exchanges += 1
        return self._issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        if self.hold_refreshes:
            # Widen the race window: the first refresh waits (up to `hold_refreshes` seconds)
            # for a second one to arrive, so two clients refreshing at nearly the same moment
            # are both answered from the same, not yet rotated, refresh token.
            waiting = self._refresh_waiting
            if waiting is not None:
                waiting.set()
            else:
                self._refresh_waiting = arrived = asyncio.Event()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(arrived.wait(), self.hold_refreshes)
                self._refresh_waiting = None
        return None if self.refusing_refresh else self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if refresh_token.token in self.spent_refresh:
            self.refresh_reuses += 1  # a strict server would revoke the whole grant here
        self.spent_refresh.add(refresh_token.token)
        self.refresh.pop(refresh_token.token, None)
        self.refreshes += 1
        return self._issue(
            refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def grant_client_credentials(
        self, client_id: str, scopes: list[str], resource: str | None
    ) -> OAuthToken:
        self.client_credentials_grants += 1
        return self._issue(client_id, scopes, resource, refresh=False)

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, *, refresh: bool = True
    ) -> OAuthToken:
        access = "at-" + secrets.token_urlsafe(24)
        lifetime = self.access_lifetime
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + max(lifetime, 60),  # the client's view may be shorter
            resource=resource,
            subject="user-1",
        )
        refresh_token = None
        if refresh:
            refresh_token = "rt-" + secrets.token_urlsafe(24)
            self.refresh[refresh_token] = RefreshToken(
                token=refresh_token, client_id=client_id, scopes=scopes, resource=resource
            )
        return OAuthToken(
            access_token=access,
            expires_in=lifetime,
            scope=" ".join(scopes),
            refresh_token=refresh_token,
        )


@dataclass
class OAuthWorld:
    """The running servers: the provider, the issuer URL and the protected MCP endpoint."""

    provider: AutoApprove
    issuer: str
    mcp_url: str
    calls: list[str] = field(default_factory=list)  # bearer tokens the MCP server saw

    def server_config(self, **auth: Any) -> dict[str, Any]:
        """An `mcp.json` entry for the protected server with `"auth": {"type": "oauth", ...}`."""
        return {"url": self.mcp_url, "auth": {"type": "oauth", **auth}}


# -- the authorization server ---------------------------------------------------------------------


def _authorization_server(provider: AutoApprove, issuer: str) -> Starlette:
    routes = create_auth_routes(
        provider=provider,
        issuer_url=AnyHttpUrl(issuer),
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=[SCOPE, ADMIN_SCOPE], default_scopes=[SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    for index, route in enumerate(routes):
        if isinstance(route, Route) and route.path == "/token":
            token = _with_client_credentials(provider, route.app)
            routes[index] = Route("/token", _Asgi(token), methods=["POST", "OPTIONS"])
        elif isinstance(route, Route) and route.path == "/.well-known/oauth-authorization-server":
            routes[index] = Route(route.path, _Asgi(_metadata(provider, issuer)), methods=["GET"])
    return Starlette(routes=routes)


def _metadata(provider: AutoApprove, issuer: str) -> App:
    """The SDK's metadata document, plus what these tests switch on (CIMD support)."""
    root = issuer.rstrip("/")
    base = OAuthMetadata.model_validate(
        {
            "issuer": issuer,
            "authorization_endpoint": f"{root}/authorize",
            "token_endpoint": f"{root}/token",
            "registration_endpoint": f"{root}/register",
            "revocation_endpoint": f"{root}/revoke",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": [SCOPE, ADMIN_SCOPE],
            "authorization_response_iss_parameter_supported": True,
        }
    )

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        document = base.model_dump(mode="json", exclude_none=True)
        document["token_endpoint_auth_methods_supported"] = provider.token_auth_methods
        if provider.accept_metadata_documents:
            document["client_id_metadata_document_supported"] = True
        await _json(send, 200, document)

    return app


def _with_client_credentials(provider: AutoApprove, sdk_token: App) -> App:
    """The SDK's token endpoint, with the `client_credentials` grant in front of it."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await sdk_token(scope, receive, send)
            return
        body = await _read_body(receive)
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if form.get("grant_type") != "client_credentials":
            await sdk_token(scope, _replay(body, receive), send)
            return
        client_id, secret = _client_auth(scope, form)
        client = provider.clients.get(client_id or "")
        if client is None or client.client_secret is None or client.client_secret != secret:
            await _json(send, 401, {"error": "invalid_client"})
            return
        if "client_credentials" not in client.grant_types:
            await _json(send, 400, {"error": "unauthorized_client"})
            return
        scopes = (form.get("scope") or SCOPE).split()
        token = provider.grant_client_credentials(client_id or "", scopes, form.get("resource"))
        await _json(send, 200, token.model_dump(mode="json", exclude_none=True))

    return app


def _client_auth(scope: Scope, form: dict[str, str]) -> tuple[str | None, str | None]:
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    basic = headers.get("authorization", "")
    if basic.lower().startswith("basic "):
        decoded = base64.b64decode(basic[6:]).decode()
        client_id, _, secret = decoded.partition(":")
        return unquote(client_id), unquote(secret)
    return form.get("client_id"), form.get("client_secret")


# -- the protected MCP server ---------------------------------------------------------------------


def _protected_mcp(provider: AutoApprove, issuer: str, resource: str, seen: list[str]) -> App:
    server = MCPServer(
        "protected",
        token_verifier=ProviderTokenVerifier(provider),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(issuer),
            resource_server_url=AnyHttpUrl(resource),
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def whoami(ctx: Context) -> str:
        """Who the bearer token belongs to."""
        return "user-1"

    @server.tool()
    def admin_report() -> str:
        """Needs the admin scope."""
        return "admin report"

    inner: App = server.streamable_http_app(streamable_http_path="/mcp")
    metadata_url = str(build_resource_metadata_url(AnyHttpUrl(resource)))

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        bearer = headers.get("authorization", "")
        token = bearer[7:] if bearer.lower().startswith("bearer ") else ""
        seen.append(token)
        body = await _read_body(receive)
        if _calls_tool(body, "admin_report"):
            granted = await provider.load_access_token(token)
            if granted is not None and ADMIN_SCOPE not in granted.scopes:
                challenge = (
                    f'Bearer error="insufficient_scope", scope="{SCOPE} {ADMIN_SCOPE}", '
                    f'resource_metadata="{metadata_url}"'
                )
                await _json(send, 403, {"error": "insufficient_scope"}, challenge)
                return
        await inner(scope, _replay(body, receive), send)

    async def lifespan_aware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await inner(scope, receive, send)
            return
        await app(scope, receive, send)

    return lifespan_aware


def _calls_tool(body: bytes, name: str) -> bool:
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return (
        isinstance(message, dict)
        and message.get("method") == "tools/call"
        and (message.get("params") or {}).get("name") == name
    )


# -- plumbing -------------------------------------------------------------------------------------


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read handed out again first."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # what follows the body: the disconnect

    return replay


async def _json(send: Send, status: int, payload: Any, challenge: str | None = None) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if challenge is not None:
        headers.append((b"www-authenticate", challenge.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _Asgi:
    """An ASGI callable Starlette routes to as an app (a bare function would be taken for a
    request handler)."""

    def __init__(self, app: App) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


class _Quiet(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bound_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.asynccontextmanager
async def _serving(app: App, sock: socket.socket, *, lifespan: str) -> AsyncIterator[None]:
    server = _Quiet(
        uvicorn.Config(app, log_config=None, access_log=False, lifespan=lifespan, ws="none")
    )
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        deadline = asyncio.get_running_loop().time() + 10
        while not server.started:
            if task.done() or asyncio.get_running_loop().time() > deadline:
                raise RuntimeError("test server did not start")
            await asyncio.sleep(0.005)
        yield
    finally:
        server.should_exit = True
        await task
        sock.close()


@contextlib.asynccontextmanager
async def running_oauth_world() -> AsyncIterator[OAuthWorld]:
    """The authorization server and the protected MCP server, each on its own loopback port."""
    as_sock, mcp_sock = _bound_socket(), _bound_socket()
    # With the trailing slash: the form the SDK's metadata models give a path-less issuer.
    issuer = f"http://127.0.0.1:{as_sock.getsockname()[1]}/"
    mcp_url = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"
    provider = AutoApprove()
    provider.issuer = issuer
    world = OAuthWorld(provider, issuer, mcp_url)
    async with (
        _serving(_authorization_server(provider, issuer), as_sock, lifespan="off"),
        _serving(_protected_mcp(provider, issuer, mcp_url, world.calls), mcp_sock, lifespan="on"),
    ):
        yield world


async def follow_authorization(url: str) -> str:
    """What a browser does with an authorization URL against the auto-approving server: follow
    it to the redirect and return the callback URL it lands on (not fetched)."""
    import httpx2

    async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as client:
        response = await client.get(url)
    location = response.headers.get("location")
    if response.status_code not in (302, 303, 307) or not location:
        raise AssertionError(f"authorize answered {response.status_code}: {response.text[:200]}")
    return str(location)
