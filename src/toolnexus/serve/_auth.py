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

Over 600 lines in one module because metadata, token checks and per-tool scopes all read one
`ResourceAuth` and the verifier's key caches.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import urlsplit

from mcp.server.auth.middleware.auth_context import auth_context_var, get_access_token
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
from toolnexus._secrets import remember
from toolnexus.errors import ConfigError

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "OAuthCard",
    "OAuthGate",
    "PerScopeSet",
    "ResourceAuth",
    "TokenVerifierImpl",
    "card_scopes",
    "granted_scopes",
    "metadata_path",
    "metadata_routes",
    "oauth_card_schemes",
    "visible_tools",
]

T = TypeVar("T")

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

    def __post_init__(self) -> None:
        remember(self.client_secret)  # redacted wherever it might show up

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
        if not _scope_list(self.scopes):
            raise ConfigError("auth scopes must be a list of scope strings")
        if not isinstance(self.tool_scopes, Mapping) or not all(
            isinstance(tool, str) and _scope_list(scopes)
            for tool, scopes in self.tool_scopes.items()
        ):
            raise ConfigError("auth tool_scopes must map tool names to lists of scope strings")


def _scope_list(scopes: Any) -> bool:
    return (
        isinstance(scopes, Iterable)
        and not isinstance(scopes, str)
        and all(isinstance(s, str) and s and not any(c.isspace() for c in s) for s in scopes)
    )


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


def _all_scopes(auth: ResourceAuth) -> list[str]:
    return sorted({*auth.scopes, *(s for v in auth.tool_scopes.values() for s in v)})


def metadata_routes(auth: ResourceAuth, resources: Sequence[str]) -> list[Route]:
    """`GET` routes serving one RFC 9728 document per resource at its path-suffixed well-known
    path (`.../oauth-protected-resource/mcp`, the one MCP clients ask for first); the root
    well-known path serves the resource at the server's root (the A2A agent), else the first."""
    scopes = _all_scopes(auth)

    def document_of(resource: str) -> bytes:
        document = ProtectedResourceMetadata(
            resource=AnyHttpUrl(resource),
            authorization_servers=[AnyHttpUrl(i) for i in auth.issuers()],
            scopes_supported=scopes or None,
        )
        fields = document.model_dump(mode="json", exclude_none=True)
        # Identifiers verbatim: URL normalisation would add a `/` that `iss` comparisons reject.
        fields.update(resource=resource, authorization_servers=list(auth.issuers()))
        return json.dumps(fields, separators=(",", ":")).encode("utf-8")

    documents: dict[str, bytes] = {}
    for resource in resources:
        documents.setdefault(metadata_path(resource), document_of(resource))
    documents.setdefault(METADATA_PATH, document_of(resources[0]))

    def serve(body: bytes) -> Any:
        async def serve_metadata(request: Request) -> Response:
            return Response(
                body,
                media_type="application/json",
                headers={
                    "Cache-Control": "public, max-age=3600",
                    "Access-Control-Allow-Origin": "*",
                },
            )

        return serve_metadata

    return [Route(path, serve(body), methods=["GET"]) for path, body in documents.items()]


class _Unavailable(Exception):
    """The authorization server could not be reached or answered nonsense."""


class TokenVerifierImpl:
    """The SDK's `TokenVerifier`: JWTs against the issuer's JWKS, others by introspection.

    `resources` are the resource identifiers this server answers for (the MCP endpoint, the
    A2A agent): a token is valid at one of them when its audience names it. `verify_token`
    (the SDK's protocol) checks against the first."""

    def __init__(self, auth: ResourceAuth, resources: str | Sequence[str]) -> None:
        self.auth = auth
        self.resources = (resources,) if isinstance(resources, str) else tuple(resources)
        self.resource = self.resources[0]
        self.issuers = auth.issuers()
        self._http = HttpClients()
        self._lock = asyncio.Lock()
        self._discovered = False
        self._server_metadata: tuple[dict[str, Any], str] | None = None
        self._jwks_uri = auth.jwks_uri
        self._introspection = auth.introspection_endpoint
        self._keys: dict[str | None, Any] = {}
        self._keys_at = -float("inf")
        # sha256(token) -> (until, access, audiences), looked up by hash.
        self._introspected: dict[bytes, tuple[float, AccessToken, list[str] | None]] = {}

    async def aclose(self) -> None:
        await self._http.aclose()

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access info, or `None` when it is not valid for this resource.

        Raises `_Unavailable` when the authorization server cannot be asked."""
        return await self.verify(token, self.resource)

    async def verify(self, token: str, resource: str) -> AccessToken | None:
        """`verify_token` for one of this server's `resources`."""
        await self._discover()
        if token.count(".") == 2 and self._jwks_uri is not None:
            return await self._verify_jwt(token, resource)
        if self._introspection is not None:
            return await self._introspect(token, resource)
        return None

    # -- discovery ---------------------------------------------------------------------------

    async def server_metadata(self) -> tuple[dict[str, Any], str]:
        """The first issuer's authorization-server metadata (RFC 8414, else OpenID discovery)
        and the URL it was read from; fetched once. Raises `_Unavailable`."""
        if self._server_metadata is not None:
            return self._server_metadata
        async with self._lock:
            if self._server_metadata is not None:
                return self._server_metadata
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
                self._server_metadata = (document, url)
                return self._server_metadata
            raise _Unavailable(f"no authorization server metadata found for {issuer}")

    async def _discover(self) -> None:
        """Fill in the JWKS and introspection URLs not configured from the issuer's metadata;
        when some are configured, an issuer without metadata is no error."""
        if self._discovered:
            return
        configured = self.auth.jwks_uri is not None or self.auth.introspection_endpoint is not None
        if self.auth.jwks_uri is not None and self.auth.introspection_endpoint is not None:
            self._discovered = True
            return
        try:
            document, _ = await self.server_metadata()
        except _Unavailable:
            if not configured:
                raise
            self._discovered = True
            return
        jwks = document.get("jwks_uri")
        introspection = document.get("introspection_endpoint")
        if self._jwks_uri is None and isinstance(jwks, str):
            self._jwks_uri = jwks
        if self._introspection is None and isinstance(introspection, str):
            self._introspection = introspection
        self._discovered = True

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

    async def _verify_jwt(self, token: str, resource: str) -> AccessToken | None:
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
                audience=list(dict.fromkeys([resource, resource.rstrip("/")])),
                issuer=self.issuers,
                leeway=self.auth.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            return None
        return self._access(token, claims, resource)

    def _access(self, token: str, claims: Mapping[str, Any], resource: str) -> AccessToken:
        client_id = claims.get("client_id") or claims.get("azp") or claims.get("sub") or ""
        exp = claims.get("exp")
        subject = claims.get("sub")
        return AccessToken(
            token=token,
            client_id=str(client_id),
            scopes=_scopes(claims),
            expires_at=int(exp) if isinstance(exp, int | float) else None,
            resource=resource,
            subject=str(subject) if subject is not None else None,
            claims={k: v for k, v in claims.items() if k in ("iss", "sub", "aud", "act")},
        )

    # -- introspection (RFC 7662) ------------------------------------------------------------

    async def _introspect(self, token: str, resource: str) -> AccessToken | None:
        now = time.time()
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        cached = self._introspected.get(digest)
        if cached is None or cached[0] <= now:
            cached = await self._ask_introspection(token, digest, now)
            if cached is None:
                return None
        _, access, audiences = cached
        if audiences is not None and not any(_same_resource(a, resource) for a in audiences):
            return None
        return access.model_copy(update={"resource": resource})

    async def _ask_introspection(
        self, token: str, digest: bytes, now: float
    ) -> tuple[float, AccessToken, list[str] | None] | None:
        import httpx2

        assert self._introspection is not None
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
        if audiences is not None:
            audiences = [a for a in audiences if isinstance(a, str)]
        until = now + INTROSPECTION_CACHE_S
        if isinstance(exp, int | float):
            until = min(until, float(exp))
        if len(self._introspected) > 10_000:
            self._introspected.clear()
        entry = (until, self._access(token, claims, self.resource), audiences)
        self._introspected[digest] = entry
        return entry


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
    bearer token — the static `auth_token` or an OAuth access token for the resource the path
    belongs to (`/mcp…` the MCP endpoint, anything else the agent) — and, for `tools/call`, the
    scopes that tool needs. The verified token is what the SDK's `get_access_token()` returns
    while the request runs (the MCP server lists only the tools its scopes allow)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        verifier: TokenVerifierImpl,
        static_token: str | None,
        open_paths: Iterable[str],
        mcp_resource: str | None = None,
    ) -> None:
        self.app = app
        self.verifier = verifier
        self.auth = verifier.auth
        self.static = static_token.encode("utf-8") if static_token is not None else None
        self.open_paths = frozenset(open_paths)
        self.mcp_resource = mcp_resource
        others = [r for r in verifier.resources if r != mcp_resource]
        self.other_resource = others[0] if others else verifier.resource
        self.challenges = {
            r: f"Bearer resource_metadata={_quote(metadata_url(r))}" for r in verifier.resources
        }

    def _resource_of(self, path: str) -> str:
        if self.mcp_resource is not None and (path == "/mcp" or path.startswith("/mcp/")):
            return self.mcp_resource
        return self.other_resource

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        resource = self._resource_of(scope["path"])
        header = Headers(scope=scope).get("authorization")
        scheme, _, credentials = (header or "").partition(" ")
        token = credentials.strip()
        if scheme.lower() != "bearer" or not token:
            await self._refuse(scope, receive, send, resource, 401, None, "authentication required")
            return
        if self.static is not None and hmac.compare_digest(token.encode("utf-8"), self.static):
            await self.app(scope, receive, send)
            return
        try:
            access = await self.verifier.verify(token, resource)
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
                scope,
                receive,
                send,
                resource,
                401,
                "invalid_token",
                "the access token is not valid",
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
                resource,
                403,
                "insufficient_scope",
                "the access token lacks a required scope",
                scopes=list(dict.fromkeys([*needed, *access.scopes])),
            )
            return
        user = AuthenticatedUser(access)
        scope["user"] = user
        scope["auth"] = AuthCredentials(access.scopes)

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        reset = auth_context_var.set(user)
        try:
            await self.app(scope, replayed, send)
        finally:
            auth_context_var.reset(reset)

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
        resource: str,
        status: int,
        error: str | None,
        description: str,
        *,
        scopes: Sequence[str] = (),
    ) -> None:
        challenge = self.challenges[resource]
        if error is not None:
            challenge += f", error={_quote(error)}, error_description={_quote(description)}"
        wanted = scopes or self.auth.scopes
        if wanted:
            challenge += f", scope={_quote(' '.join(wanted))}"
        body = {"error": error or "invalid_request", "error_description": description}
        response = JSONResponse(body, status_code=status, headers={"WWW-Authenticate": challenge})
        await response(scope, receive, send)


def served_tool_scopes(
    tool_scopes: Mapping[str, Sequence[str]], tools: Iterable[Any]
) -> dict[str, list[str]]:
    """`tool_scopes` keyed by the names the tools are served under.

    A key may be a tool's served name or the name it was configured with (a 70-character name
    is served cut to 64 with a hash suffix). A key naming neither is refused: a misspelt
    key would otherwise leave the tool it meant callable by every token.
    """
    served: dict[str, str] = {}
    for tool in tools:
        served.setdefault(tool.original_name, tool.name)
    for tool in tools:
        served[tool.name] = tool.name  # a served name wins over another tool's configured one
    resolved: dict[str, list[str]] = {}
    for key, scopes in tool_scopes.items():
        name = served.get(key)
        if name is None:
            close = difflib.get_close_matches(key, list(served), n=3, cutoff=0.6)
            hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
            raise ConfigError(
                f"auth tool_scopes: {key!r} names no served tool{hint}; a key must be a "
                "tool's name as configured or as served"
            )
        resolved.setdefault(name, [])
        resolved[name] += [s for s in scopes if s not in resolved[name]]
    return resolved


def visible_tools(
    tool_scopes: Mapping[str, Sequence[str]], granted: Iterable[str], names: Iterable[str]
) -> list[str]:
    """The `names` a caller granted `granted` may call under `tool_scopes`."""
    have = set(granted)
    return [n for n in names if all(s in have for s in tool_scopes.get(n, ()))]


def caller_identity() -> str:
    """Who the current request is, as A2A ownership records it: `""` for a caller without an
    OAuth access token (no auth, or the static `auth_token`: one identity), else the token's
    issuer and subject (its client id when it names no subject) as compact JSON."""
    access = get_access_token()
    if access is None:
        return ""
    issuer = (access.claims or {}).get("iss")
    subject = access.subject if access.subject is not None else access.client_id
    return json.dumps(["oauth", str(issuer or ""), str(subject)], separators=(",", ":"))


def granted_scopes() -> frozenset[str] | None:
    """The scopes the current request's OAuth access token grants, or `None` for a request
    without one (the static `auth_token`, or no auth): such a caller sees every tool."""
    access = get_access_token()
    return None if access is None else frozenset(access.scopes)


class PerScopeSet(Generic[T]):
    """What `build` makes of a set of granted scopes, built once per distinct set (callers
    holding the same scopes share it). At most `limit` sets are kept; past that, a new set's
    value is built for each request."""

    __slots__ = ("_build", "_cache", "_limit")

    def __init__(self, build: Callable[[frozenset[str]], T], *, limit: int = 1024) -> None:
        self._build = build
        self._cache: dict[frozenset[str], T] = {}
        self._limit = limit

    def get(self, granted: frozenset[str]) -> T:
        try:
            return self._cache[granted]
        except KeyError:
            value = self._build(granted)
            if len(self._cache) < self._limit:
                self._cache[granted] = value
            return value

    def clear(self) -> None:
        """Forget every value (what they were built from has changed)."""
        self._cache.clear()


# -- the agent card's oauth2 scheme --------------------------------------------------------------


def card_scopes(auth: ResourceAuth) -> dict[str, str]:
    """Scope name -> what it grants, for the card's flows."""
    described: dict[str, list[str]] = {}
    for scope in auth.scopes:
        described.setdefault(scope, []).append("every request")
    for tool, scopes in auth.tool_scopes.items():
        for scope in scopes:
            described.setdefault(scope, []).append(f"calling {tool}")
    return {s: "Needed for " + ", ".join(why) for s, why in sorted(described.items())}


def oauth_card_schemes(
    auth: ResourceAuth, metadata: Mapping[str, Any] | None, metadata_url: str
) -> dict[str, dict[str, Any]]:
    """The card's OAuth security schemes, each the A2A 1.0 `oauth2SecurityScheme` with the 0.3
    `type`/`flows`/`oauth2MetadataUrl` beside it. A 1.0 scheme holds one flow, so `oauth2`
    offers the authorization code flow (with PKCE) and `oauth2ClientCredentials` the client
    credentials one, as far as the issuer's metadata says it grants them (`oauth2` takes the
    client credentials flow when that is the only one). Without that metadata (the issuer could
    not be reached) one `oauth2` scheme names where it lives."""
    scopes = card_scopes(auth)
    flows: list[tuple[str, dict[str, Any]]] = []
    if metadata is not None:
        authorize = metadata.get("authorization_endpoint")
        token = metadata.get("token_endpoint")
        grants = metadata.get("grant_types_supported")
        grants = grants if isinstance(grants, list) else ["authorization_code", "implicit"]
        if isinstance(token, str) and isinstance(authorize, str) and "authorization_code" in grants:
            code = {"authorizationUrl": authorize, "tokenUrl": token, "scopes": scopes}
            flows.append(("authorizationCode", code))
        if isinstance(token, str) and "client_credentials" in grants:
            flows.append(("clientCredentials", {"tokenUrl": token, "scopes": scopes}))
    names = ["oauth2", "oauth2ClientCredentials"]
    schemes: dict[str, dict[str, Any]] = {}
    for name, (flow, fields) in zip(names, flows, strict=False):
        v10 = {**fields, "pkceRequired": True} if flow == "authorizationCode" else fields
        schemes[name] = {
            "oauth2SecurityScheme": {"flows": {flow: v10}, "oauth2MetadataUrl": metadata_url},
            "type": "oauth2",
            "flows": {flow: fields},
            "oauth2MetadataUrl": metadata_url,
        }
    if not schemes:
        schemes["oauth2"] = {
            "oauth2SecurityScheme": {"flows": {}, "oauth2MetadataUrl": metadata_url},
            "type": "oauth2",
            "flows": {},
            "oauth2MetadataUrl": metadata_url,
        }
    return schemes


def default_metadata_url(issuer: str) -> str:
    """The RFC 8414 metadata URL of `issuer` (where discovery looks first)."""
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server" + (
        parts.path.rstrip("/")
    )


CARD_DISCOVERY_TIMEOUT_S = 5.0
CARD_RETRY_S = 30.0


class OAuthCard:
    """The agent card of an OAuth-protected agent, served as bytes: its `oauth2` scheme's flows
    come from the issuer's metadata, read on the first card request (the verifier's own copy)
    and kept. While the issuer cannot be reached the card names only the metadata URL, and
    asks again at most every `CARD_RETRY_S` seconds."""

    def __init__(
        self,
        render: Callable[[Mapping[str, Mapping[str, Any]]], bytes],
        verifier: TokenVerifierImpl,
    ) -> None:
        self._render = render
        self._verifier = verifier
        self._auth = verifier.auth
        self._done: bytes | None = None
        self._fallback = render(
            oauth_card_schemes(self._auth, None, default_metadata_url(verifier.issuers[0]))
        )
        self._failed_at = -float("inf")

    async def __call__(self) -> bytes:
        if self._done is not None:
            return self._done
        loop = asyncio.get_running_loop()
        if loop.time() - self._failed_at < CARD_RETRY_S:
            return self._fallback
        try:
            async with asyncio.timeout(CARD_DISCOVERY_TIMEOUT_S):
                metadata, url = await self._verifier.server_metadata()
        except (_Unavailable, TimeoutError):
            self._failed_at = loop.time()
            return self._fallback
        self._done = self._render(oauth_card_schemes(self._auth, metadata, url))
        return self._done
