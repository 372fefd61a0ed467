"""The `"auth"` entry of a server's config, checked (no SDK import: reading config stays light)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from toolnexus.errors import ConfigError

DEFAULT_REDIRECT_URI = "http://127.0.0.1:33418/callback"
"""Where the authorization server sends the browser back to, unless `redirectUri` says."""

Grant = Literal["authorization_code", "client_credentials"]
TokenAuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]
_TOKEN_AUTH_METHODS: tuple[TokenAuthMethod, ...] = (
    "client_secret_basic",
    "client_secret_post",
    "none",
)

_KEYS = frozenset(
    {
        "type",
        "scope",
        "scopes",
        "clientId",
        "clientSecret",
        "clientMetadataUrl",
        "redirectUri",
        "store",
        "issuer",
        "tokenEndpointAuthMethod",
    }
)


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """One server's checked `"auth"` entry.

    `grant` is `"authorization_code"` (config type `"oauth"`: a person signs in) or
    `"client_credentials"` (machine to machine). `client_secret` is kept as configured, so a
    `${ENV}` reference is expanded only when a token is requested; it never shows in a repr.
    `store` is `"memory"`, `"file:<dir>"` or `None` (the default file store).
    `token_endpoint_auth_method` is how a pre-registered client authenticates at the token
    endpoint; `None` picks from what the authorization server's metadata supports.
    """

    grant: Grant = "authorization_code"
    scope: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    client_metadata_url: str | None = None
    redirect_uri: str = DEFAULT_REDIRECT_URI
    store: str | None = None
    issuer: str | None = None
    token_endpoint_auth_method: TokenAuthMethod | None = None


def parse_oauth_settings(value: Any) -> OAuthSettings:
    """Check an `"auth"` value: `"oauth"`, `{"type": "oauth", ...}` or
    `{"type": "client_credentials", "clientId", "clientSecret", ...}`.

    Raises `ConfigError` naming the offending key (never showing a secret)."""
    if value == "oauth":
        return OAuthSettings()
    if not isinstance(value, Mapping):
        raise ConfigError('"auth" must be "oauth" or an object with "type": "oauth"')
    unknown = sorted(str(k) for k in value if k not in _KEYS)
    if unknown:
        raise ConfigError(f'"auth" has unknown key "{unknown[0]}"')
    kind = value.get("type", "oauth")
    if kind not in ("oauth", "client_credentials"):
        raise ConfigError('"auth"."type" must be "oauth" or "client_credentials"')
    grant: Grant = "client_credentials" if kind == "client_credentials" else "authorization_code"
    client_id = _text(value, "clientId")
    secret = _text(value, "clientSecret", secret=True)
    if grant == "client_credentials" and (client_id is None or secret is None):
        raise ConfigError('"auth" of type "client_credentials" needs "clientId" and "clientSecret"')
    metadata_url = _text(value, "clientMetadataUrl")
    if metadata_url is not None:
        parts = urlsplit(metadata_url)
        if parts.scheme != "https" or not parts.netloc or parts.path in ("", "/"):
            raise ConfigError('"auth"."clientMetadataUrl" must be an https URL with a path')
    redirect = _text(value, "redirectUri") or DEFAULT_REDIRECT_URI
    if urlsplit(redirect).scheme not in ("http", "https") or not urlsplit(redirect).netloc:
        raise ConfigError('"auth"."redirectUri" must be an http(s) URL')
    issuer = _text(value, "issuer")
    if issuer is not None and urlsplit(issuer).scheme not in ("http", "https"):
        raise ConfigError('"auth"."issuer" must be an http(s) URL')
    store = _text(value, "store")
    if store is not None and store != "memory" and not (store.startswith("file:") and store[5:]):
        raise ConfigError('"auth"."store" must be "memory" or "file:<directory>"')
    method = _token_auth_method(value, grant, client_id, secret)
    return OAuthSettings(
        grant=grant,
        scope=_scope(value),
        client_id=client_id,
        client_secret=secret,
        client_metadata_url=metadata_url,
        redirect_uri=redirect,
        store=store,
        issuer=issuer,
        token_endpoint_auth_method=method,
    )


def _token_auth_method(
    value: Mapping[str, Any], grant: Grant, client_id: str | None, secret: str | None
) -> TokenAuthMethod | None:
    """`tokenEndpointAuthMethod`, checked against the client it is for."""
    raw = value.get("tokenEndpointAuthMethod")
    if raw is None:
        return None
    method = next((m for m in _TOKEN_AUTH_METHODS if m == raw), None)
    if method is None:
        choices = ", ".join(f'"{m}"' for m in _TOKEN_AUTH_METHODS)
        raise ConfigError(f'"auth"."tokenEndpointAuthMethod" must be one of {choices}')
    if client_id is None:
        raise ConfigError('"auth"."tokenEndpointAuthMethod" needs a pre-registered "clientId"')
    if method != "none" and secret is None:
        raise ConfigError(f'"auth"."tokenEndpointAuthMethod" "{method}" needs "clientSecret"')
    if method == "none" and grant == "client_credentials":
        raise ConfigError(
            '"auth"."tokenEndpointAuthMethod" "none" cannot authenticate "client_credentials"'
        )
    return method


def _scope(value: Mapping[str, Any]) -> str | None:
    """`scope` (space-separated) or `scopes` (a list, or a string like `scope`)."""
    if "scope" in value and "scopes" in value:
        raise ConfigError('"auth" takes "scope" or "scopes", not both')
    key = "scopes" if "scopes" in value else "scope"
    raw = value.get(key)
    if raw is None:
        return None
    if isinstance(raw, list) and all(isinstance(s, str) and s.strip() for s in raw):
        words = [s.strip() for s in raw]
    elif isinstance(raw, str):
        words = raw.split()
    else:
        raise ConfigError(f'"auth"."{key}" must be a list of scope names or a string')
    return " ".join(dict.fromkeys(words)) or None


def _text(value: Mapping[str, Any], key: str, *, secret: bool = False) -> str | None:
    raw = value.get(key)
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip():
        what = "a non-empty string" if not secret else 'a non-empty string (e.g. "${ENV_VAR}")'
        raise ConfigError(f'"auth"."{key}" must be {what}')
    return raw if secret else raw.strip()
