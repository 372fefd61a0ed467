"""OAuth 2.1 for the remote things toolkits talk to (MCP servers today), on the MCP SDK's client.

- `TokenStore` is where credentials live between runs: `FileTokenStore` (the default, one
  `0600` file per protected resource under `$TOOLNEXUS_HOME/mcp-auth`), `MemoryTokenStore`, or
  your own.
- `OAuthSettings` / `parse_oauth_settings` read a server's `"auth"` config entry.
- `Authorization` is OAuth for one protected resource: the `httpx2.Auth` its client sends
  requests with, and the person's sign-in step as a `Request` of kind `authorization`
  (through `wait_for`, or parked until `answer()`).

Importing this package is light; `Authorization` loads the MCP SDK on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolnexus.oauth._errors import SignInFailed, SignInRequired
from toolnexus.oauth._settings import DEFAULT_REDIRECT_URI, OAuthSettings, parse_oauth_settings
from toolnexus.oauth._store import (
    FileTokenStore,
    MemoryTokenStore,
    TokenStore,
    TokenStoreError,
    default_token_dir,
    token_store,
)

if TYPE_CHECKING:
    from toolnexus.oauth._authorization import Authorization

__all__ = [
    "DEFAULT_REDIRECT_URI",
    "Authorization",
    "FileTokenStore",
    "MemoryTokenStore",
    "OAuthSettings",
    "SignInFailed",
    "SignInRequired",
    "TokenStore",
    "TokenStoreError",
    "default_token_dir",
    "parse_oauth_settings",
    "token_store",
]

_SDK_SIDE = frozenset({"Authorization"})


def __getattr__(name: str) -> Any:
    if name in _SDK_SIDE:
        from toolnexus.oauth import _authorization

        return getattr(_authorization, name)
    raise AttributeError(f"module 'toolnexus.oauth' has no attribute {name!r}")
