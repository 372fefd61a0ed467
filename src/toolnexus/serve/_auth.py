"""Serving as an OAuth-protected resource: metadata, bearer-token checks and per-tool scopes.

Tokens are verified with PyJWT (signatures through `cryptography`): it is already installed
with the mcp SDK, well kept and small, and it verifies every JOSE algorithm an authorization
server is likely to sign with — nothing here computes or compares a signature itself. The
issuer's JWKS and metadata are fetched with our own pooled `httpx2` client, on the event loop
without blocking it (PyJWT's `PyJWKClient` would fetch with blocking `urllib`); PyJWT only
turns each JWK into a key (`PyJWK`) and checks the token against it.

The SDK's auth pieces are used where they fit: its `TokenVerifier` protocol and `AccessToken`
(so the MCP server sees who called), `AuthenticatedUser` in the ASGI scope, and its
`ProtectedResourceMetadata` model for the RFC 9728 document. The gate itself is our own
middleware because it also accepts the static `auth_token`, guards the A2A profile, and
checks scopes per tool, which the SDK's whole-route `RequireAuthMiddleware` cannot.

No token value ever goes into a log, an error message or a response.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolnexus._http import HttpClients
from toolnexus.errors import ConfigError

if TYPE_CHECKING:
    import httpx2

__all__ = ["OAuthGate", "ResourceAuth", "TokenVerifierImpl", "metadata_path", "metadata_routes"]

METADATA_PATH = "/.well-known/oauth-protected-resource"
DEFAULT_ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip
INTROSPECTION_CACHE_S = 60.0


@dataclass(frozen=True, slots=True)
class ResourceAuth:
    """How the served endpoints check OAuth access tokens.

    - `issuer`: the authorization server(s) whose tokens are accepted (their `iss`); named in
      the protected-resource metadata.
    - `audience`: this resource's URL, which a token's `aud` must contain; by default the
      server's MCP endpoint (`<url>/mcp`), or its root when only the A2A profile is served.
    - `scopes`: scopes every request needs; `tool_scopes`: more scopes per tool name, checked
      on `tools/call` (`403 insufficient_scope` when missing).
    - `jwks_uri` / `introspection_endpoint`: where keys / token status come from; by default
      read from the issuer's metadata (OAuth, then OpenID discovery). JWT tokens are checked
      against the JWKS, other tokens through introspection (`client_id`/`client_secret`
      authenticate the resource there).
    - `leeway`: seconds of clock skew allowed on `exp`, `nbf` and `iat`.
    - `jwks_refresh_interval`: a token naming an unknown key refetches the JWKS (the issuer
      rotated its keys), at most once per this many seconds.
    """

    issuer: str | Sequence[str]
    audience: str | None = None
    scopes: Sequence[str] = ()
    tool_scopes: Mapping[str, Sequence[str]] = field(default_factory=dict)
    jwks_uri: str | None = None
    introspection_endpoint: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    leeway: float = 30.0
    algorithms: Sequence[str] = DEFAULT_ALGORITHMS
    jwks_refresh_interval: float = 30.0

    def issuers(self) -> tuple[str, ...]:
        return (self.issuer,) if isinstance(self.issuer, str) else tuple(self.issuer)

    def validate(self) -> None:
        issuers = self.issuers()
        if not issuers or not all(isinstance(i, str) and _is_http_url(i) for i in issuers):
            raise ConfigError("auth issuer must be one or more http(s) URLs")
        for name in ("audience", "jwks_uri", "introspection_endpoint"):
            value = getattr(self, name)
            if value is not None and not _is_http_url(value):
                raise ConfigError(f"auth {name} must be an http(s) URL, got {value!r}")
        weak = [a for a in self.algorithms if a not in DEFAULT_ALGORITHMS]
        if weak or not self.algorithms:
            # `none` and HMAC (a shared secret in a public JWKS) would let anyone mint tokens.
            raise ConfigError(f"auth algorithms must be among {', '.join(DEFAULT_ALGORITHMS)}")
        if self.leeway < 0:
            raise ConfigError("auth leeway must not be negative")


def _is_http_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _same_resource(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def metadata_path(resource: str) -> str:
    """The RFC 9728 metadata path of `resource` (the well-known prefix before its path)."""
    path = urlsplit(resource).path.rstrip("/")
    return METADATA_PATH + path


def metadata_url(resource: str) -> str:
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{metadata_path(resource)}"


def metadata_routes(auth: ResourceAuth, resource: str) -> list[Route]:
    """`GET` routes serving the metadata at the root well-known path and, when the resource
    has a path (`/mcp`), at the path-suffixed one MCP clients ask for first."""
    scopes = sorted({*auth.scopes, *(s for v in auth.tool_scopes.values() for s in v)})
    document = ProtectedResourceMetadata(
        resource=AnyHttpUrl(resource),
        authorization_servers=[AnyHttpUrl(i) for i in auth.issuers()],
        scopes_supported=scopes or None,
    )
    fields = document.model_dump(mode="json", exclude_none=True)
    # Identifiers verbatim: URL normalisation would add a `/` that `iss` comparisons reject.
    fields.update(resource=resource, authorization_servers=list(auth.issuers()))
    body = json.dumps(fields, separators=(",", ":")).encode("utf-8")

    async def serve_metadata(request: Request) -> Response:
        return Response(
            body,
            media_type="application/json",
            headers={"Cache-Control": "public, max-age=3600", "Access-Control-Allow-Origin": "*"},
        )

    paths = dict.fromkeys([METADATA_PATH, metadata_path(resource)])
    return [Route(p, serve_metadata, methods=["GET"]) for p in paths]


class _Unavailable(Exception):
    """The authorization server could not be reached or answered nonsense."""


class TokenVerifierImpl:
    """The SDK's `TokenVerifier`: JWTs against the issuer's JWKS, others by introspection."""

    def __init__(self, auth: ResourceAuth, resource: str) -> None:
        self.auth = auth
        self.resource = resource
        self.issuers = auth.issuers()
        self._http = HttpClients()
        self._lock = asyncio.Lock()
        self._discovered = False
        self._jwks_uri = auth.jwks_uri
        self._introspection = auth.introspection_endpoint
        self._keys: dict[str | None, Any] = {}
        self._keys_at = -float("inf")
        self._introspected: dict[bytes, tuple[float, AccessToken]] = {}

    async def aclose(self) -> None:
        await self._http.aclose()

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access info, or `None` when it is not valid for this resource.

        Raises `_Unavailable` when the authorization server cannot be asked."""
        await self._discover()
        if token.count(".") == 2 and self._jwks_uri is not None:
            return await self._verify_jwt(token)
        if self._introspection is not None:
            return await self._introspect(token)
        return None

    # -- discovery ---------------------------------------------------------------------------

    async def _discover(self) -> None:
        if self._discovered or self._jwks_uri is not None or self._introspection is not None:
            return
        async with self._lock:
            if self._discovered:
                return
            issuer = self.issuers[0]
            parts = urlsplit(issuer)
            base = f"{parts.scheme}://{parts.netloc}"
            path = parts.path.rstrip("/")
            candidates = [
                f"{base}/.well-known/oauth-authorization-server{path}",
                f"{base}/.well-known/openid-configuration{path}",
                f"{issuer.rstrip('/')}/.well-known/openid-configuration",
            ]
            for url in dict.fromkeys(candidates):
                document = await self._get_json(url, missing_ok=True)
                if not isinstance(document, dict):
                    continue
                if not _same_resource(str(document.get("issuer", "")), issuer):
                    continue  # metadata for another issuer is not this issuer's
                jwks = document.get("jwks_uri")
                introspection = document.get("introspection_endpoint")
                self._jwks_uri = jwks if isinstance(jwks, str) else None
                self._introspection = introspection if isinstance(introspection, str) else None
                self._discovered = True
                return
            raise _Unavailable(f"no authorization server metadata found for {issuer}")

    async def _get_json(self, url: str, *, missing_ok: bool = False) -> Any:
        import httpx2

        try:
            response = await self._client().get(url, headers={"Accept": "application/json"})
        except httpx2.HTTPError as exc:
            raise _Unavailable(f"GET {url} failed: {type(exc).__name__}") from None
        if missing_ok and response.status_code in (404, 405):
            return None
        if response.status_code != 200:
            raise _Unavailable(f"GET {url} answered HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError:
            raise _Unavailable(f"GET {url} did not answer JSON") from None

    def _client(self) -> httpx2.AsyncClient:
        return self._http.get()

    # -- JWT ---------------------------------------------------------------------------------

    async def _key(self, kid: str | None) -> Any:
        if kid in self._keys:
            return self._keys[kid]
        loop = asyncio.get_running_loop()
        async with self._lock:
            if kid in self._keys:
                return self._keys[kid]
            if loop.time() - self._keys_at < self.auth.jwks_refresh_interval:
                return None  # fetched just now: an unknown `kid` does not make us fetch again
            assert self._jwks_uri is not None
            document = await self._get_json(self._jwks_uri)
            self._keys_at = loop.time()
            self._keys = _parse_jwks(document)
            return self._keys.get(kid)

    async def _verify_jwt(self, token: str) -> AccessToken | None:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.auth.algorithms:
            return None
        kid = header.get("kid")
        key = await self._key(kid if isinstance(kid, str) else None)
        if key is None and kid is None and len(self._keys) == 1:
            key = next(iter(self._keys.values()))  # a JWKS of one key need not name it
        if key is None:
            return None
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=[self.resource, self.resource.rstrip("/")],
                issuer=self.issuers,
                leeway=self.auth.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            return None
        return self._access(token, claims)

    def _access(self, token: str, claims: Mapping[str, Any]) -> AccessToken:
        client_id = claims.get("client_id") or claims.get("azp") or claims.get("sub") or ""
        exp = claims.get("exp")
        subject = claims.get("sub")
        return AccessToken(
            token=token,
            client_id=str(client_id),
            scopes=_scopes(claims),
            expires_at=int(exp) if isinstance(exp, int | float) else None,
            resource=self.resource,
            subject=str(subject) if subject is not None else None,
            claims={k: v for k, v in claims.items() if k in ("iss", "sub", "aud", "act")},
        )

    # -- introspection (RFC 7662) ------------------------------------------------------------

    async def _introspect(self, token: str) -> AccessToken | None:
        import httpx2

        assert self._introspection is not None
        now = time.time()
        digest = hashlib.sha256(token.encode("utf-8")).digest()  # the cache never holds tokens
        cached = self._introspected.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        extra: dict[str, Any] = {}
        if self.auth.client_id is not None:
            extra["auth"] = httpx2.BasicAuth(self.auth.client_id, self.auth.client_secret or "")
        try:
            response = await self._client().post(
                self._introspection,
                data={"token": token, "token_type_hint": "access_token"},
                headers={"Accept": "application/json"},
                **extra,
            )
        except httpx2.HTTPError as exc:
            raise _Unavailable(f"introspection failed: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise _Unavailable(f"introspection answered HTTP {response.status_code}")
        try:
            claims = response.json()
        except ValueError:
            raise _Unavailable("introspection did not answer JSON") from None
        if not isinstance(claims, dict) or claims.get("active") is not True:
            return None
        leeway = self.auth.leeway
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if isinstance(exp, int | float) and exp + leeway < now:
            return None
        if isinstance(nbf, int | float) and nbf - leeway > now:
            return None
        iss = claims.get("iss")
        if iss is not None and iss not in self.issuers:
            return None
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else None
        if audiences is not None and not any(
            isinstance(a, str) and _same_resource(a, self.resource) for a in audiences
        ):
            return None
        access = self._access(token, claims)
        until = now + INTROSPECTION_CACHE_S
        if isinstance(exp, int | float):
            until = min(until, float(exp))
        if len(self._introspected) > 10_000:
            self._introspected.clear()
        self._introspected[digest] = (until, access)
        return access


def _parse_jwks(document: Any) -> dict[str | None, Any]:
    import jwt

    keys: dict[str | None, Any] = {}
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise _Unavailable("the JWKS has no `keys` list")
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            keys[entry.get("kid")] = jwt.PyJWK(entry)
        except jwt.PyJWTError:
            continue  # a key type we cannot use; others may still verify
    return keys


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, list):
        return [s for s in scp if isinstance(s, str)]
    if isinstance(scp, str):
        return scp.split()
    return []


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class OAuthGate:
    """ASGI middleware: every request but discovery documents and probes carries a valid
    bearer token — the static `auth_token` or an OAuth access token for this resource — and,
    for `tools/call`, the scopes that tool needs."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        verifier: TokenVerifierImpl,
        static_token: str | None,
        open_paths: Iterable[str],
    ) -> None:
        self.app = app
        self.verifier = verifier
        self.auth = verifier.auth
        self.static = static_token.encode("utf-8") if static_token is not None else None
        self.open_paths = frozenset(open_paths)
        self.challenge_base = f"Bearer resource_metadata={_quote(metadata_url(verifier.resource))}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization")
        scheme, _, credentials = (header or "").partition(" ")
        token = credentials.strip()
        if scheme.lower() != "bearer" or not token:
            await self._refuse(scope, receive, send, 401, None, "authentication required")
            return
        if self.static is not None and hmac.compare_digest(token.encode("utf-8"), self.static):
            await self.app(scope, receive, send)
            return
        try:
            access = await self.verifier.verify_token(token)
        except _Unavailable:
            response = JSONResponse(
                {"error": "temporarily_unavailable", "error_description": "cannot verify tokens"},
                status_code=503,
                headers={"Retry-After": "5"},
            )
            await response(scope, receive, send)
            return
        if access is None:
            await self._refuse(
                scope, receive, send, 401, "invalid_token", "the access token is not valid"
            )
            return
        needed = list(self.auth.scopes)
        replay: list[Message] = []
        if self.auth.tool_scopes and scope["method"] == "POST":
            # The body is whole in its first message: the guard before us read and replays it.
            first = await receive()
            replay.append(first)
            needed += self._tool_scopes(first.get("body", b""))
        missing = [s for s in dict.fromkeys(needed) if s not in access.scopes]
        if missing:
            await self._refuse(
                scope,
                receive,
                send,
                403,
                "insufficient_scope",
                "the access token lacks a required scope",
                scopes=list(dict.fromkeys([*needed, *access.scopes])),
            )
            return
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(access.scopes)

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)

    def _tool_scopes(self, body: bytes) -> list[str]:
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return []
        messages = message if isinstance(message, list) else [message]
        needed: list[str] = []
        for item in messages:
            if not isinstance(item, dict) or item.get("method") != "tools/call":
                continue
            params = item.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str):
                needed += self.auth.tool_scopes.get(name, ())
        return needed

    async def _refuse(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        status: int,
        error: str | None,
        description: str,
        *,
        scopes: Sequence[str] = (),
    ) -> None:
        challenge = self.challenge_base
        if error is not None:
            challenge += f", error={_quote(error)}, error_description={_quote(description)}"
        wanted = scopes or self.auth.scopes
        if wanted:
            challenge += f", scope={_quote(' '.join(wanted))}"
        body = {"error": error or "invalid_request", "error_description": description}
        response = JSONResponse(body, status_code=status, headers={"WWW-Authenticate": challenge})
        await response(scope, receive, send)
