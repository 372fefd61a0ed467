"""A small OAuth authorization server for the auth tests: RFC 8414 metadata, a JWKS the test
can rotate, RFC 7662 introspection of opaque tokens, a client-credentials token endpoint, and
tokens signed with `cryptography` keys; and the MCP SDK's own authorization-server routes
over an auto-approving provider that mints such tokens."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from support.polling import wait_until

__all__ = [
    "AuthServer",
    "JwtApprover",
    "SdkAuthServer",
    "free_port",
    "running_auth_server",
    "running_sdk_auth_server",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class AuthServer:
    """Metadata, a JWKS whose keys the test can rotate, and introspection of opaque tokens."""

    def __init__(self) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.keys: dict[str, Any] = {"k1": rsa.generate_private_key(65537, 2048)}
        self.opaque: dict[str, dict[str, Any]] = {}
        self.jwks_fetches = 0
        self.introspection_auth: list[str | None] = []
        # Clients of the client-credentials grant (id -> secret), the token requests seen
        # (their form fields, the secret left out) and the lifetime of issued tokens.
        self.clients: dict[str, str] = {}
        self.token_requests: list[dict[str, str]] = []
        self.token_lifetime = 300
        self.expired_tokens = 0  # how many of the next tokens are issued already expired
        self.issued_tokens: list[str] = []  # by the token endpoint (for the leak test's grep)

    def jwk(self, kid: str) -> dict[str, Any]:
        public = self.keys[kid].public_key()
        algorithm = (
            jwt.algorithms.ECAlgorithm if kid.startswith("ec") else jwt.algorithms.RSAAlgorithm
        )
        entry: dict[str, Any] = algorithm.to_jwk(public, as_dict=True)
        entry.update(kid=kid, use="sig")
        return entry

    def app(self) -> Starlette:
        async def metadata(request: Request) -> JSONResponse:
            return JSONResponse(
                {
                    "issuer": self.issuer,
                    "authorization_endpoint": f"{self.issuer}/authorize",
                    "token_endpoint": f"{self.issuer}/token",
                    "jwks_uri": f"{self.issuer}/jwks",
                    "response_types_supported": ["code"],
                    "grant_types_supported": [
                        "authorization_code",
                        "client_credentials",
                        "refresh_token",
                    ],
                }
            )

        async def jwks(request: Request) -> JSONResponse:
            self.jwks_fetches += 1
            return JSONResponse({"keys": [self.jwk(k) for k in self.keys]})

        async def introspect(request: Request) -> JSONResponse:
            self.introspection_auth.append(request.headers.get("authorization"))
            form = await request.form()
            claims = self.opaque.get(str(form.get("token")))
            return JSONResponse({"active": True, **claims} if claims else {"active": False})

        async def token(request: Request) -> JSONResponse:
            form = {k: str(v) for k, v in (await request.form()).items()}
            client_id, secret = form.pop("client_id", ""), form.pop("client_secret", "")
            basic = request.headers.get("authorization", "")
            via = "post"
            if basic.startswith("Basic "):
                decoded = base64.b64decode(basic[6:]).decode()
                client_id, _, secret = decoded.partition(":")
                via = "basic"
            self.token_requests.append({"client_id": client_id, "via": via, **form})
            if form.get("grant_type") != "client_credentials":
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
            if self.clients.get(client_id) != secret or not secret:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            scope = form.get("scope", "")
            exp = int(time.time()) + self.token_lifetime
            if self.expired_tokens > 0:
                self.expired_tokens -= 1
                exp = int(time.time()) - 600  # the agent refuses it; the client still trusts it
            access = self.token(
                form.get("resource", ""), client_id=client_id, sub=client_id, scope=scope, exp=exp
            )
            self.issued_tokens.append(access)
            answer = {"access_token": access, "token_type": "Bearer", "scope": scope}
            return JSONResponse({**answer, "expires_in": self.token_lifetime})

        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/jwks", jwks),
                Route("/introspect", introspect, methods=["POST"]),
                Route("/token", token, methods=["POST"]),
            ]
        )

    def token(self, audience: str, *, kid: str = "k1", key: Any = None, **claims: Any) -> str:
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "aud": audience,
            "sub": "user-1",
            "client_id": "client-1",
            "iat": now,
            "exp": now + 300,
            "scope": "tools:read",
        }
        payload.update(claims)
        payload = {k: v for k, v in payload.items() if v is not None}
        alg = "ES256" if kid.startswith("ec") else "RS256"
        return jwt.encode(payload, key or self.keys[kid], algorithm=alg, headers={"kid": kid})


@contextlib.asynccontextmanager
async def running_auth_server() -> AsyncIterator[AuthServer]:
    """An `AuthServer` listening on a loopback port of the running loop."""
    server = AuthServer()
    config = uvicorn.Config(
        server.app(), host="127.0.0.1", port=server.port, log_config=None, lifespan="off"
    )
    runner = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(runner.serve())
    await wait_until(lambda: runner.started or task.done())
    yield server
    runner.should_exit = True
    with contextlib.suppress(Exception):
        await task


# -- the SDK's own authorization-server routes, minting JWTs this server's JWKS verifies ---------


class JwtApprover:
    """An in-memory `OAuthAuthorizationServerProvider` for the SDK's `create_auth_routes`: it
    approves every authorization at once and issues JWT access tokens signed by `server`'s key
    (so a resource server can verify them against the JWKS), with refresh tokens."""

    def __init__(self, server: AuthServer, issuer: str, scopes: list[str]) -> None:
        self.server = server
        self.issuer = issuer
        self.scopes = scopes
        self.clients: dict[str, Any] = {}
        self.codes: dict[str, Any] = {}
        self.refresh: dict[str, Any] = {}
        self.authorized_scopes: list[list[str]] = []  # the scopes of each authorization

    async def get_client(self, client_id: str) -> Any:
        return self.clients.get(client_id)

    async def register_client(self, client_info: Any) -> None:
        # RFC 7591 lets a server grant more than asked: every client may step up later.
        client_info.scope = " ".join(self.scopes)
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: Any, params: Any) -> str:
        from mcp.server.auth.provider import AuthorizationCode, construct_redirect_uri

        code = "code-" + secrets.token_urlsafe(16)
        self.authorized_scopes.append(list(params.scopes or []))
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=self.issuer
        )

    async def load_authorization_code(self, client: Any, authorization_code: str) -> Any:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client: Any, authorization_code: Any) -> Any:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> Any:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: Any, refresh_token: Any, scopes: list[str]
    ) -> Any:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> Any:
        return None  # the resource server verifies the JWTs itself

    async def revoke_token(self, token: Any) -> None:
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> Any:
        from mcp.server.auth.provider import RefreshToken
        from mcp.shared.auth import OAuthToken

        access = self.server.token(
            resource or "", iss=self.issuer, client_id=client_id, scope=" ".join(scopes)
        )
        self.server.issued_tokens.append(access)
        refresh = "rt-" + secrets.token_urlsafe(24)
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        self.server.issued_tokens.append(refresh)
        return OAuthToken(
            access_token=access,
            expires_in=300,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )


@dataclass
class SdkAuthServer:
    """The SDK's authorization-server routes on a loopback port: `issuer` (with the trailing
    `/` the SDK's models give a path-less URL), the provider, and the `AuthServer` whose key
    signs the tokens (its JWKS at `<issuer>jwks`)."""

    issuer: str
    provider: JwtApprover
    keys: AuthServer

    @property
    def jwks_uri(self) -> str:
        return self.issuer + "jwks"


@contextlib.asynccontextmanager
async def running_sdk_auth_server(scopes: list[str]) -> AsyncIterator[SdkAuthServer]:
    """An authorization server built from the MCP SDK's `create_auth_routes` (metadata,
    authorize, token, registration, revocation) over `JwtApprover`, granting `scopes`."""
    from mcp.server.auth.routes import create_auth_routes
    from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
    from pydantic import AnyHttpUrl

    keys = AuthServer()
    issuer = keys.issuer + "/"
    provider = JwtApprover(keys, issuer, scopes)
    routes = create_auth_routes(
        provider=provider,  # type: ignore[arg-type]
        issuer_url=AnyHttpUrl(issuer),
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=scopes, default_scopes=scopes[:1]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )

    async def jwks(request: Request) -> JSONResponse:
        return JSONResponse({"keys": [keys.jwk(k) for k in keys.keys]})

    app = Starlette(routes=[*routes, Route("/jwks", jwks)])
    config = uvicorn.Config(app, host="127.0.0.1", port=keys.port, log_config=None, lifespan="off")
    runner = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(runner.serve())
    await wait_until(lambda: runner.started or task.done())
    try:
        yield SdkAuthServer(issuer, provider, keys)
    finally:
        runner.should_exit = True
        with contextlib.suppress(Exception):
            await task
