"""Credentials for remote A2A agents, placed where the agent's card says.

An agent entry's `auth` says what the host holds — a bearer token, an API key, or an OAuth
client id and secret — and the card's `securitySchemes` say where it goes: the API key's header,
query parameter or cookie name, the OAuth token endpoint. Every credential is a secret from the
moment it is read (`toolnexus._secrets`), and `${VAR}` values are expanded on each use.

The client credentials grant is one form POST to the token endpoint the card names (RFC 6749,
with the RFC 8707 `resource` of the agent's endpoint). The MCP SDK's OAuth providers are not
used for it: they find the authorization server through a resource's `401` and its RFC 9728
document, while an A2A card names its token endpoint outright. The token answer is read with
the SDK's `OAuthToken` model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from toolnexus._env import expand_env
from toolnexus._secrets import remember
from toolnexus.errors import A2AError, ConfigError
from toolnexus.oauth import OAuthSettings, parse_oauth_settings

if TYPE_CHECKING:
    import httpx2

    from toolnexus.oauth import Authorization

__all__ = [
    "AUTH_TYPES",
    "AgentAuth",
    "AgentCredentials",
    "Placed",
    "card_schemes",
    "parse_auth",
    "unanswered",
]

AUTH_TYPES = ("bearer", "apiKey", "client_credentials", "oauth")
# A token this close to its expiry is renewed before it is sent.
EXPIRY_MARGIN_S = 30.0
_API_KEY_PLACES = ("header", "query", "cookie")


@dataclass(frozen=True, slots=True)
class AgentAuth:
    """An agent entry's `auth`, checked; secret values are still as written (`${VAR}`)."""

    type: str
    token: str | None = field(default=None, repr=False)
    key: str | None = field(default=None, repr=False)
    name: str | None = None
    location: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] | None = None
    token_url: str | None = None
    scheme: str | None = None
    oauth: OAuthSettings | None = None


def _text(entry: Mapping[str, Any], key: str, what: str, *, required: bool = False) -> str | None:
    value = entry.get(key)
    if value is None:
        if required:
            raise ConfigError(f'{what} needs "{key}"')
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f'{what}: "{key}" must be a non-empty string')
    return value


def _secret(entry: Mapping[str, Any], key: str, what: str) -> str:
    value = _text(entry, key, what, required=True)
    assert value is not None
    if "${" not in value:
        remember(value)  # a literal credential is as secret as an expanded one
    return value


def _scopes(entry: Mapping[str, Any], what: str) -> tuple[str, ...] | None:
    value = entry.get("scopes", entry.get("scope"))
    if value is None:
        return None
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(s, str) and s.strip() for s in value):
        return tuple(value)
    raise ConfigError(f'{what}: "scopes" must be a list of strings (or one space-separated string)')


def parse_auth(value: Any, where: str) -> AgentAuth | None:
    """The `auth` of an agent entry (`where` names the agent in messages); `None` for none.

    Forms: `{"type": "bearer", "token"}`, `{"type": "apiKey", "key", "name"?, "in"?}`,
    `{"type": "client_credentials", "clientId", "clientSecret", "scopes"?, "tokenUrl"?}`, and
    `"oauth"` or `{"type": "oauth", ...}` (a person signs in: the keys of an MCP server's
    OAuth entry); each may name the card's `scheme` to use. Secrets may be `${VAR}`."""
    if value is None:
        return None
    what = f"{where}: auth"
    if value == "oauth":
        return AgentAuth("oauth", oauth=parse_oauth_settings("oauth"))
    if not isinstance(value, Mapping):
        raise ConfigError(f"{what} must be an object with a type ({', '.join(AUTH_TYPES)})")
    kind = value.get("type")
    if kind not in AUTH_TYPES:
        raise ConfigError(f'{what}: "type" must be one of {", ".join(AUTH_TYPES)}, not {kind!r}')
    scheme = _text(value, "scheme", what)
    if kind == "oauth":
        try:
            settings = parse_oauth_settings({k: v for k, v in value.items() if k != "scheme"})
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        return AgentAuth("oauth", oauth=settings, scheme=scheme)
    if kind == "bearer":
        return AgentAuth("bearer", token=_secret(value, "token", what), scheme=scheme)
    if kind == "apiKey":
        location = _text(value, "in", what)
        if location is not None and location not in _API_KEY_PLACES:
            raise ConfigError(f'{what}: "in" must be one of {", ".join(_API_KEY_PLACES)}')
        return AgentAuth(
            "apiKey",
            key=_secret(value, "key", what),
            name=_text(value, "name", what),
            location=location,
            scheme=scheme,
        )
    token_url = _text(value, "tokenUrl", what)
    if token_url is not None and not token_url.startswith(("http://", "https://")):
        raise ConfigError(f'{what}: "tokenUrl" must be an http(s) URL')
    return AgentAuth(
        "client_credentials",
        client_id=_text(value, "clientId", what, required=True),
        client_secret=_secret(value, "clientSecret", what),
        scopes=_scopes(value, what),
        token_url=token_url,
        scheme=scheme,
    )


# -- what the card declares ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scheme:
    """One security scheme of a card, in either spelling: `kind` is `http`, `apiKey`, `oauth2`,
    `openIdConnect` or `mutualTLS`."""

    name: str
    kind: str
    http_scheme: str = ""
    key_name: str = ""
    key_location: str = ""
    flows: Mapping[str, Any] = field(default_factory=dict)
    metadata_url: str = ""


_V10_KINDS = {
    "httpAuthSecurityScheme": "http",
    "apiKeySecurityScheme": "apiKey",
    "oauth2SecurityScheme": "oauth2",
    "openIdConnectSecurityScheme": "openIdConnect",
    "mtlsSecurityScheme": "mutualTLS",
}


def _scheme(name: str, entry: Mapping[str, Any]) -> Scheme | None:
    found = [(k, entry[k]) for k in _V10_KINDS if isinstance(entry.get(k), Mapping)]
    if found:
        kind, body = _V10_KINDS[found[0][0]], found[0][1]
    else:
        kind, body = str(entry.get("type", "")), entry
        if kind not in _V10_KINDS.values():
            return None
    flows = body.get("flows")
    return Scheme(
        name=name,
        kind=kind,
        http_scheme=str(body.get("scheme", "")),
        key_name=str(body.get("name", "")),
        key_location=str(body.get("location", body.get("in", ""))),
        flows=flows if isinstance(flows, Mapping) else {},
        metadata_url=str(body.get("oauth2MetadataUrl", "")),
    )


def card_schemes(card: Mapping[str, Any]) -> dict[str, Scheme]:
    """The card's security schemes by name (ones of an unknown kind left out)."""
    declared = card.get("securitySchemes")
    if not isinstance(declared, Mapping):
        return {}
    schemes = {}
    for name, entry in declared.items():
        scheme = _scheme(str(name), entry) if isinstance(entry, Mapping) else None
        if scheme is not None:
            schemes[scheme.name] = scheme
    return schemes


def unanswered(card: Mapping[str, Any], header_names: Iterable[str]) -> list[str]:
    """The card's security schemes when it requires one and `header_names` carry none of
    them (no `Authorization`, no header of its API keys); else `[]`."""
    schemes = card_schemes(card)
    if not schemes or not (card.get("securityRequirements") or card.get("security")):
        return []
    names = {n.lower() for n in header_names}
    keys = {s.key_name.lower() for s in schemes.values() if s.kind == "apiKey"}
    return [] if "authorization" in names or names & keys else list(schemes)


def required_scopes(card: Mapping[str, Any], scheme: str) -> tuple[str, ...]:
    """The scopes the card's requirements list for `scheme` (1.0, else 0.3 spelling)."""
    for requirement in card.get("securityRequirements") or ():
        schemes = requirement.get("schemes") if isinstance(requirement, Mapping) else None
        if isinstance(schemes, Mapping) and isinstance(schemes.get(scheme), Mapping):
            listed = schemes[scheme].get("list")
            listed = listed if isinstance(listed, list) else []
            return tuple(s for s in listed if isinstance(s, str))
    for requirement in card.get("security") or ():
        if isinstance(requirement, Mapping) and isinstance(requirement.get(scheme), list):
            return tuple(s for s in requirement[scheme] if isinstance(s, str))
    return ()


# -- credentials in use -------------------------------------------------------------------------


@dataclass(slots=True)
class Placed:
    """Where credentials go on one request."""

    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)


class AgentCredentials:
    """An agent's credentials, placed on each request as its card says; client-credentials
    tokens are fetched, kept until shortly before they expire, and renewed after a `401`."""

    def __init__(
        self,
        auth: AgentAuth,
        *,
        card: Mapping[str, Any],
        card_url: str,
        endpoint: str,
        name: str = "",
    ) -> None:
        self.auth = auth
        self.endpoint = endpoint
        self.card_url = card_url
        self.name = name or card_url
        schemes = card_schemes(card)
        self.scheme = self._choose(schemes)
        self._token: str | None = None
        self._expires = 0.0
        self._lock = asyncio.Lock()
        self._token_url = auth.token_url
        self._scopes = auth.scopes
        self._authorization: Authorization | None = None
        self.signed_in = False  # whether a sign-in (type oauth) has completed here
        if auth.type == "apiKey":
            self.key_name = auth.name or (self.scheme.key_name if self.scheme else "")
            self.key_location = (
                auth.location or (self.scheme.key_location if self.scheme else "") or "header"
            )
            if not self.key_name:
                raise ConfigError(
                    f"the agent card at {card_url} declares no apiKey scheme: give the key's "
                    'header name as auth "name" (and "in": header, query or cookie)'
                )
            if self.key_location not in _API_KEY_PLACES:
                raise A2AError(
                    f"the agent card at {card_url} puts its API key in "
                    f"{self.key_location!r}, which is not a header, query or cookie"
                )
        if auth.type == "client_credentials":
            flow = self._flow("clientCredentials")
            if self._token_url is None and isinstance(flow.get("tokenUrl"), str):
                self._token_url = urljoin(card_url, flow["tokenUrl"])
            if self._scopes is None and self.scheme is not None:
                self._scopes = required_scopes(card, self.scheme.name)
            if self._token_url is None and not (self.scheme and self.scheme.metadata_url):
                raise ConfigError(
                    f"the agent card at {card_url} names no token endpoint for the client "
                    'credentials flow: give auth "tokenUrl"'
                )

    def _choose(self, schemes: Mapping[str, Scheme]) -> Scheme | None:
        wanted = self.auth.scheme
        if wanted is not None:
            if wanted not in schemes:
                raise ConfigError(
                    f"the agent card at {self.card_url} declares no security scheme {wanted!r}"
                    f" (it declares {', '.join(schemes) or 'none'})"
                )
            return schemes[wanted]
        for scheme in schemes.values():
            if self.auth.type == "bearer" and (
                scheme.kind == "http" and scheme.http_scheme.lower() == "bearer"
            ):
                return scheme
            if self.auth.type == "apiKey" and scheme.kind == "apiKey":
                return scheme
            if self.auth.type == "client_credentials" and "clientCredentials" in scheme.flows:
                return scheme
            if self.auth.type == "oauth" and "authorizationCode" in scheme.flows:
                return scheme
        return None

    def _flow(self, name: str) -> Mapping[str, Any]:
        flow = self.scheme.flows.get(name) if self.scheme is not None else None
        return flow if isinstance(flow, Mapping) else {}

    @property
    def renewable(self) -> bool:
        return self.auth.type == "client_credentials"

    @property
    def authorization(self) -> Authorization | None:
        """The OAuth sign-in of a `type: oauth` agent (the MCP SDK's client, through
        `toolnexus.oauth`): discovery from the agent's `401`, PKCE, `resource`, refresh."""
        if self.auth.type != "oauth":
            return None
        if self._authorization is None:
            from toolnexus.oauth import Authorization

            assert self.auth.oauth is not None
            self._authorization = Authorization(
                self.endpoint, self.auth.oauth, name=self.name, data={"agent": self.name}
            )
            self._authorization.hold = False  # a call never waits inline for a person
        return self._authorization

    @property
    def httpx_auth(self) -> httpx2.Auth | None:
        authorization = self.authorization
        return authorization.httpx_auth if authorization is not None else None

    async def place(self) -> Placed:
        """The headers (and query parameters) one request carries."""
        auth = self.auth
        if auth.type == "oauth":
            return Placed()  # `httpx_auth` signs each request
        if auth.type == "bearer":
            assert auth.token is not None
            return Placed(headers={"Authorization": f"Bearer {expand_env(auth.token)}"})
        if auth.type == "apiKey":
            assert auth.key is not None
            key = expand_env(auth.key)
            if self.key_location == "query":
                return Placed(params={self.key_name: key})
            if self.key_location == "cookie":
                return Placed(headers={"Cookie": f"{self.key_name}={key}"})
            return Placed(headers={self.key_name: key})
        return Placed(headers={"Authorization": f"Bearer {await self._access_token()}"})

    @staticmethod
    def card_headers(auth: AgentAuth) -> dict[str, str]:
        """What the card request carries before the card is known: a bearer token (the card
        may be protected like the rest of the agent, as a toolnexus agent with a static token
        is), an API key whose header is named in the config."""
        if auth.type == "bearer" and auth.token is not None:
            return {"Authorization": f"Bearer {expand_env(auth.token)}"}
        if auth.type == "apiKey" and auth.key and auth.name and auth.location in (None, "header"):
            return {auth.name: expand_env(auth.key)}
        return {}

    async def renew(self) -> None:
        """Forget the access token (the agent refused it): the next request fetches another."""
        self._token = None

    # -- the client credentials grant ------------------------------------------------------------

    async def _access_token(self) -> str:
        if self._token is not None and time.monotonic() < self._expires - EXPIRY_MARGIN_S:
            return self._token
        async with self._lock:
            if self._token is not None and time.monotonic() < self._expires - EXPIRY_MARGIN_S:
                return self._token
            self._token, self._expires = await self._fetch_token()
            return self._token

    async def _token_endpoint(self) -> str:
        if self._token_url is not None:
            return self._token_url
        from mcp.shared.auth import OAuthMetadata
        from pydantic import ValidationError

        from toolnexus._http import shared_client

        assert self.scheme is not None
        url = urljoin(self.card_url, self.scheme.metadata_url)
        response = await shared_client().get(url, headers={"Accept": "application/json"})
        if response.status_code != 200:
            raise A2AError(f"authorization server metadata at {url}: HTTP {response.status_code}")
        try:
            metadata = OAuthMetadata.model_validate_json(response.content)
        except ValidationError:
            raise A2AError(f"authorization server metadata at {url} is not valid") from None
        self._token_url = str(metadata.token_endpoint)
        return self._token_url

    async def _fetch_token(self) -> tuple[str, float]:
        import httpx2
        from mcp.shared.auth import OAuthToken
        from pydantic import ValidationError

        from toolnexus._http import shared_client

        auth = self.auth
        assert auth.client_id is not None and auth.client_secret is not None
        url = await self._token_endpoint()
        form = {"grant_type": "client_credentials", "resource": self.endpoint}
        if self._scopes:
            form["scope"] = " ".join(self._scopes)
        secret = expand_env(auth.client_secret)
        response = await shared_client().post(
            url,
            data=form,
            auth=httpx2.BasicAuth(auth.client_id, secret),
            headers={"Accept": "application/json"},
        )
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code != 200:
            error = answer.get("error") if isinstance(answer, dict) else None
            detail = f" ({error})" if isinstance(error, str) else ""
            raise A2AError(
                f"the token endpoint {url} refused the client credentials of {auth.client_id}: "
                f"HTTP {response.status_code}{detail}"
            )
        try:
            token = OAuthToken.model_validate(answer)
        except ValidationError:
            raise A2AError(f"the token endpoint {url} answered without an access token") from None
        remember(token.access_token)
        remember(token.refresh_token)
        lifetime = token.expires_in if token.expires_in is not None else 3600
        return token.access_token, time.monotonic() + lifetime
