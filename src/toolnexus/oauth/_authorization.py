"""OAuth 2.1 for one protected resource, on the MCP SDK's client (`mcp.client.auth`).

The SDK's `OAuthClientProvider` does the protocol: discovery from the `401`, PKCE, the
`resource` parameter, client registration or a Client ID Metadata Document, `iss` checks,
issuer-bound credentials, refresh and scope step-up. This module adds what a library host
needs around it: credentials kept in a `TokenStore` across processes (with what a later
process needs to refresh without asking), refresh a little before expiry, the configured
scopes always requested, secrets registered for redaction, and the person's step — the
authorization URL — handed to the host as a `Request` of kind `authorization`.

Over 600 lines in one module because provider set-up, the token-endpoint auth method, step-up
and the token store hook all act on the one SDK provider's state.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import time
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)

from toolnexus._aio import call_in_thread_maybe_async
from toolnexus._env import expand_env
from toolnexus._log import logger
from toolnexus._secrets import remember
from toolnexus.oauth._errors import SignInFailed, SignInRequired
from toolnexus.oauth._settings import OAuthSettings
from toolnexus.oauth._store import TokenStore, token_store
from toolnexus.types import Answer, Request, error_message

__all__ = ["Authorization", "SignInFailed", "SignInRequired"]

WaitFor = Callable[[Request], Any]

SIGN_IN_VALID_FOR = timedelta(minutes=10)
"""How long the `Request` says its sign-in stays good (`expiresAt`)."""
_REFRESH_AHEAD = 60.0  # seconds before expiry a token is refreshed (half the life of short ones)


class _ExpectedEnds(logging.Filter):
    """Drops the SDK's "OAuth flow error" traceback when the flow ended on purpose here (a
    declined sign-in, one nobody can answer now): the owner reports those in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, SignInRequired | SignInFailed)


logging.getLogger("mcp.client.auth.oauth2").addFilter(_ExpectedEnds())


class Authorization:
    """OAuth for one protected resource `url`: an `httpx2.Auth` for the client that talks to it,
    plus the person's sign-in step.

    `name` is what the sign-in prompt calls the resource (`prompt` overrides the whole text;
    `data` is merged into the `Request`'s data). The credentials are kept in the store the
    settings name, else in `store`: a `TokenStore`, `"memory"`, `"file:<dir>"`, an SDK
    `TokenStorage` used as it is, or `None` for the default file store.

    When a person must sign in, `wait_for` (sync or async, `Request -> Answer`) is asked inline.
    Without it the sign-in is *parked*: `pending` holds the `Request`, `wait_parked()` returns,
    and the flow resumes once `answer()` delivers the host's `Answer`. With `hold` false (the
    owner is serving calls, not connecting) a sign-in parks only for a request made on behalf
    of a caller that can hand the `Request` to its host — `park_for()`, set by the owner,
    returns that caller (then `parked_for`) or `None` — and otherwise fails at once with
    `SignInRequired`. `pause` is set by the owner to stop its own clock while a person is
    asked.
    """

    def __init__(
        self,
        url: str,
        settings: OAuthSettings,
        *,
        name: str,
        store: TokenStore | TokenStorage | str | None = None,
        wait_for: WaitFor | None = None,
        prompt: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        self.url = url
        self.settings = settings
        self.name = name
        self.wait_for = wait_for
        self.hold = True
        self.pause: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext
        self.park_for: Callable[[], object | None] = _nobody
        self.pending: Request | None = None
        self.parked_for: object | None = None
        self._asked_for: object | None = None
        self._prompt = prompt or f'Sign in to "{name}"'
        self._data = data or {}
        self._store_spec = settings.store if settings.store is not None else store
        self._provider: OAuthClientProvider | None = None
        self._asked: Request | None = None
        self._answer: asyncio.Future[Answer | None] | None = None
        self._parked = asyncio.Event()

    # -- the owner's side -----------------------------------------------------------------------

    @property
    def httpx_auth(self) -> httpx2.Auth:
        """The SDK provider to pass as `auth=` (built on first use; an unset `${ENV}` in the
        client secret raises `EnvVarError` here)."""
        if self._provider is None:
            self._provider = self._build()
        return self._provider

    async def wait_parked(self) -> Request:
        """Return once a sign-in is parked, waiting for `answer()`: its `Request`."""
        while self.pending is None:
            self._parked.clear()
            await self._parked.wait()
        return self.pending

    def answer(self, answer: Answer | dict[str, Any] | None) -> bool:
        """Deliver the host's answer to the parked sign-in; false when none is parked or the
        answer is for another request."""
        pending, waiting = self.pending, self._answer
        coerced = Answer.coerce(answer)
        if pending is None or waiting is None or waiting.done():
            return False
        if coerced is not None and coerced.id != pending.id:
            return False
        self.pending = None
        waiting.set_result(coerced)
        return True

    def cancel(self) -> None:
        """Abandon a parked sign-in (its flow fails)."""
        self.pending = None
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(SignInFailed("sign-in abandoned"))

    async def forget(self) -> bool:
        """Delete the stored credentials for `url` (sign out); true when there were some."""
        store = self._storage_target()
        if isinstance(store, TokenStore):
            return await store.delete(self.url)
        return False

    @property
    def refresh_refused(self) -> str | None:
        """Why the last refresh was refused (`"HTTP 400"`), when it was; else `None`."""
        provider = self._provider
        return getattr(provider, "refused", None)

    # -- building the SDK provider --------------------------------------------------------------

    def _storage_target(self) -> TokenStore | TokenStorage:
        spec = self._store_spec
        if isinstance(spec, str) or spec is None:
            return token_store(spec)
        return spec  # a TokenStore, or an SDK TokenStorage used as it is

    def _build(self) -> OAuthClientProvider:
        s = self.settings
        secret = _expanded(s.client_secret)
        target = self._storage_target()
        storage = (
            _RecordStorage(target, self.url)
            if isinstance(target, TokenStore)
            else _Remembering(target)
        )
        if s.grant == "client_credentials":
            assert s.client_id is not None and secret is not None  # checked with the config
            with warnings.catch_warnings():
                # Without an `issuer` the SDK warns that it trusts the server's advertised one:
                # that is the documented default here, so the warning is noise to our users.
                warnings.simplefilter("ignore")
                provider: OAuthClientProvider = _client_credentials()(
                    self.url,
                    storage,
                    client_id=s.client_id,
                    client_secret=secret,
                    scope=s.scope,
                    issuer=s.issuer,
                    token_endpoint_auth_method=s.token_endpoint_auth_method
                    or "client_secret_basic",
                )
        else:
            metadata = OAuthClientMetadata(
                client_name="toolnexus",
                redirect_uris=[s.redirect_uri],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="client_secret_post" if secret else "none",
                scope=s.scope,
            )
            provider = _AuthorizationCode(
                self.url,
                metadata,
                storage,
                redirect_handler=self._redirect,
                callback_handler=self._callback,
                client_metadata_url=s.client_metadata_url,
            )
            if s.client_id is not None:
                provider.preregistered = OAuthClientInformationFull(
                    client_id=s.client_id,
                    client_secret=secret,
                    redirect_uris=[s.redirect_uri],  # type: ignore[list-item]
                    grant_types=["authorization_code", "refresh_token"],
                    token_endpoint_auth_method=s.token_endpoint_auth_method
                    or ("client_secret_basic" if secret else "none"),
                    scope=s.scope,
                )
                provider.auth_method_chosen = s.token_endpoint_auth_method is not None
        assert isinstance(provider, _Persisting)
        provider.wanted_scope = s.scope
        if isinstance(storage, _RecordStorage):
            storage.provider = provider
            provider.record_storage = storage
        return provider

    # -- the SDK's redirect and callback handlers -----------------------------------------------

    async def _redirect(self, authorization_url: str) -> None:
        # Without `wait_for`, a sign-in met while serving calls parks for the call's owner;
        # with no owner to park for, nobody can answer it now.
        self._asked_for = None
        if self.wait_for is None and not self.hold:
            self._asked_for = self.park_for()
            if self._asked_for is None:
                raise self._unanswerable()
        expires = datetime.now(UTC) + SIGN_IN_VALID_FOR
        self._asked = Request(
            id=f"auth-{secrets.token_hex(8)}",
            kind="authorization",
            prompt=self._prompt,
            url=authorization_url,
            data={**self._data, "redirectUri": self.settings.redirect_uri},
            expiresAt=expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        )

    def _unanswerable(self) -> SignInRequired:
        provider = self._provider
        more = provider.more_scope if isinstance(provider, _Persisting) else None
        if more:
            return SignInRequired(
                f"the server asks for more access (scope {more}); with no wait_for nobody "
                "can grant it during a call"
            )
        why = self.refresh_refused
        return SignInRequired(
            f"the authorization server refused the stored refresh token ({why}); sign in again"
            if why
            else "the server asks for a new sign-in"
        )

    async def _callback(self) -> AuthorizationCodeResult:
        request = self._asked
        assert request is not None, "the SDK calls the redirect handler first"
        with self.pause():
            if self.wait_for is not None:
                try:
                    reply = await call_in_thread_maybe_async(self.wait_for, request)
                except Exception as exc:
                    raise SignInFailed(f"wait_for raised: {error_message(exc)}") from None
                answer = Answer.coerce(reply)
                return _code_result(answer)
            owner = self._asked_for
            try:
                return _code_result(await self._park(request, owner))
            except SignInFailed as exc:
                exc.during_call = owner is not None
                raise

    async def _park(self, request: Request, owner: object | None) -> Answer | None:
        waiting: asyncio.Future[Answer | None] = asyncio.get_running_loop().create_future()
        self._answer = waiting
        self.pending, self.parked_for = request, owner
        self._parked.set()
        try:
            return await waiting
        finally:
            self._answer = None
            if self.pending is request:
                self.pending = None
            self.parked_for = None

    def __repr__(self) -> str:
        state = "parked" if self.pending is not None else "idle"
        return f"<Authorization {self.name!r} {self.settings.grant} {state}>"


def _nobody() -> None:
    return None


def _expanded(secret: str | None) -> str | None:
    if secret is None:
        return None
    value = expand_env(secret)
    remember(value)
    return value


def _code_result(answer: Answer | None) -> AuthorizationCodeResult:
    """The SDK's `AuthorizationCodeResult` from the host's answer: `data` with `code`, `state`
    (and `iss`), or `callbackUrl` (the URL the browser was sent back to)."""
    if answer is None or not answer.ok:
        reason = answer.reason if answer is not None and answer.reason else None
        raise SignInFailed("authorization declined" + (f" ({reason})" if reason else ""))
    data = answer.data or {}
    if isinstance(data.get("callbackUrl"), str):
        query = parse_qs(urlsplit(data["callbackUrl"]).query)
        fields = {k: v[0] for k, v in query.items() if v}
    else:
        fields = {k: v for k, v in data.items() if isinstance(v, str)}
    if "error" in fields:
        detail = fields.get("error_description")
        raise SignInFailed(
            f"authorization declined: {fields['error']}" + (f" ({detail})" if detail else "")
        )
    code = fields.get("code")
    if not code:
        raise SignInFailed(
            'the authorization answer has no "code" (give "code" and "state", or "callbackUrl")'
        )
    remember(code)
    return AuthorizationCodeResult(code=code, state=fields.get("state"), iss=fields.get("iss"))


# -- the SDK providers, with persistence and refresh ahead of expiry ----------------------------


# What `_refresh_token` hands the SDK's flow when, once it holds the store's lock, the tokens
# another holder stored meanwhile are fresh: the flow never sends it, and takes the matching
# answer as a refresh that succeeded.
_NO_REFRESH = httpx2.Request("POST", "http://127.0.0.1/no-refresh-needed")
_NO_REFRESH_ANSWER = httpx2.Response(200, request=_NO_REFRESH)


class _Persisting(OAuthClientProvider):
    """What both grants add to the SDK provider (through the hooks its flow calls)."""

    preregistered: OAuthClientInformationFull | None = None
    wanted_scope: str | None = None
    refused: str | None = None
    more_scope: str | None = None  # what a step-up asks for beyond the granted scopes
    record_storage: _RecordStorage | None = None
    storage_record: dict[str, Any] | None = None
    # The task whose refresh holds the store's lock: only its own flow may let the lock go (a
    # request of another task, cancelled while it waits for the SDK's lock, must not).
    _renewing: asyncio.Task[Any] | None = None

    @property
    def _renewal(self) -> contextlib.AsyncExitStack:
        stack: contextlib.AsyncExitStack | None = self.__dict__.get("_renewal_stack")
        if stack is None:
            stack = self.__dict__["_renewal_stack"] = contextlib.AsyncExitStack()
        return stack

    async def _end_renewal(self) -> None:
        self._renewing = None
        await self._renewal.aclose()

    async def _initialize(self) -> None:
        await super()._initialize()
        context = self.context
        fixed = self.preregistered
        if fixed is not None and (
            context.client_info is None or context.client_info.client_id != fixed.client_id
        ):
            context.client_info = fixed
        record = self.storage_record or {}
        expires_at = record.get("expiresAt")
        tokens = context.current_tokens
        if tokens is not None and isinstance(expires_at, int | float):
            context.token_expiry_time = float(expires_at) - _ahead(tokens.expires_in)
        server = record.get("authorizationServer")
        if context.oauth_metadata is None and isinstance(server, dict):
            with contextlib.suppress(ValueError):
                context.oauth_metadata = OAuthMetadata.model_validate(server.get("metadata"))
                context.auth_server_url = server.get("url") or str(context.oauth_metadata.issuer)
        resource = record.get("protectedResource")
        if context.protected_resource_metadata is None and isinstance(resource, dict):
            with contextlib.suppress(ValueError):
                context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                    resource
                )

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is _NO_REFRESH:
                    outgoing = await flow.asend(_NO_REFRESH_ANSWER)
                    continue
                response = yield outgoing
                try:
                    outgoing = await flow.asend(response)
                except SignInFailed as exc:
                    if not exc.during_call:
                        raise
                    # The caller's host declined the sign-in (or never answered): the request
                    # gets the server's refusal again, and the connection lives on.
                    yield request
                    return
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()
            if self._renewing is not None and self._renewing is asyncio.current_task():
                # its refresh failed or was never sent
                await self._end_renewal()

    def _take_up(self, stored: OAuthToken | None) -> None:
        """Use the stored tokens when they are not the ones in hand (newer: stores only ever
        receive the latest)."""
        context, current = self.context, self.context.current_tokens
        if stored is None or current is None or stored.access_token == current.access_token:
            return
        context.current_tokens = stored
        expires_at = (self.storage_record or {}).get("expiresAt")
        context.token_expiry_time = (
            float(expires_at) - _ahead(stored.expires_in)
            if isinstance(expires_at, int | float)
            else None
        )

    async def _refresh_token(self) -> httpx2.Request:
        # The SDK's flow refreshes holding its context lock; the store's lock on the record is
        # taken inside it (always in that order) and held until the answer is stored, so that
        # toolkits sharing the store (other processes included) never spend one refresh token
        # twice: whoever comes second takes up the tokens the first one stored, and refreshes
        # only if those are due too.
        storage = self.record_storage
        if storage is not None:
            await self._renewal.enter_async_context(storage.locked())
            self._renewing = asyncio.current_task()
            self._take_up(await storage.reload())
            if self.context.is_token_valid():
                await self._end_renewal()
                return _NO_REFRESH
        return await super()._refresh_token()

    async def _perform_authorization(self) -> httpx2.Request:
        # The SDK picks the scopes the server challenges; the configured ones are always added.
        context = self.context
        wanted = self.wanted_scope
        if wanted:
            have = (context.client_metadata.scope or "").split()
            merged = dict.fromkeys([*have, *wanted.split()])
            context.client_metadata.scope = " ".join(merged)
        granted = context.current_tokens.scope if context.current_tokens is not None else None
        missing = set((context.client_metadata.scope or "").split()) - set((granted or "").split())
        self.more_scope = " ".join(sorted(missing)) if granted is not None and missing else None
        return await super()._perform_authorization()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        self.refused = None
        self._refresh_early()

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        if response is _NO_REFRESH_ANSWER:  # another holder's renewed tokens were taken up
            self.refused = None
            return True
        try:
            refreshed = await super()._handle_refresh_response(response)
        finally:
            await self._end_renewal()
        if refreshed:
            self.refused = None
            self._refresh_early()
        else:
            self.refused = f"HTTP {response.status_code}"
            logger.debug(
                "[toolnexus] OAuth refresh for %s refused: %s",
                self.context.server_url,
                self.refused,
            )
        return refreshed

    def _refresh_early(self) -> None:
        context = self.context
        if context.token_expiry_time is not None and context.current_tokens is not None:
            context.token_expiry_time -= _ahead(context.current_tokens.expires_in)


class _AuthorizationCode(_Persisting, OAuthClientProvider):
    """The authorization-code grant: a person signs in."""

    auth_method_chosen = False  # the config named the pre-registered client's auth method

    async def _exchange_token_authorization_code(
        self, auth_code: str, code_verifier: str
    ) -> httpx2.Request:
        self._fit_auth_method()
        return await super()._exchange_token_authorization_code(auth_code, code_verifier)

    async def _refresh_token(self) -> httpx2.Request:
        self._fit_auth_method()
        return await super()._refresh_token()

    def _fit_auth_method(self) -> None:
        """Authenticate a pre-registered confidential client the way the authorization server's
        metadata says it accepts: HTTP Basic where listed (RFC 8414's default when nothing is),
        else the form body. A method the config names is kept as it is."""
        fixed, info = self.preregistered, self.context.client_info
        if (
            self.auth_method_chosen
            or fixed is None
            or info is None
            or info.client_id != fixed.client_id
            or not info.client_secret
        ):
            return
        metadata = self.context.oauth_metadata
        supported = (metadata and metadata.token_endpoint_auth_methods_supported) or [
            "client_secret_basic"
        ]
        basic = "client_secret_basic" in supported or "client_secret_post" not in supported
        method = "client_secret_basic" if basic else "client_secret_post"
        if info.token_endpoint_auth_method != method:
            self.context.client_info = info.model_copy(
                update={"token_endpoint_auth_method": method}
            )


@functools.cache
def _client_credentials() -> Callable[..., OAuthClientProvider]:
    """The client-credentials grant's provider class: machine to machine, no person.

    Made on first use: the SDK module it extends loads PyJWT and cryptography (for signed client
    assertions), a megabyte and more that a toolkit with no such server never needs."""
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    class _ClientCredentials(_Persisting, ClientCredentialsOAuthProvider):
        """The client-credentials grant: machine to machine, no person."""

    return _ClientCredentials


def _ahead(lifetime: int | str | None) -> float:
    """How long before expiry to refresh: a minute, or half the life of a short-lived token."""
    try:
        seconds = float(lifetime) if lifetime is not None else None
    except ValueError:
        seconds = None
    if seconds is None:
        return 0.0
    return min(_REFRESH_AHEAD, seconds / 2)


# -- storage adapters -------------------------------------------------------------------------


def _remember_token(tokens: OAuthToken | None) -> None:
    if tokens is not None:
        remember(tokens.access_token)
        remember(tokens.refresh_token)


def _remember_client(info: OAuthClientInformationFull | None) -> None:
    if info is not None:
        remember(info.client_secret)


class _RecordStorage(TokenStorage):
    """The SDK's `TokenStorage` over one record of a `TokenStore`."""

    def __init__(self, store: TokenStore, url: str) -> None:
        self._store = store
        self._url = url
        self._record: dict[str, Any] | None = None
        self.provider: _Persisting | None = None

    async def _loaded(self) -> dict[str, Any]:
        if self._record is None:
            self._record = await self._store.load(self._url) or {"url": self._url}
            if self.provider is not None:
                self.provider.storage_record = self._record
        return self._record

    def locked(self) -> AbstractAsyncContextManager[None]:
        """The store's lock on this record (a no-op for stores that have none)."""
        locked = getattr(self._store, "locked", None)
        return locked(self._url) if callable(locked) else _unlocked()

    async def reload(self) -> OAuthToken | None:
        """The tokens as the store holds them now (another process may have renewed them)."""
        self._record = None
        return await self.get_tokens()

    async def get_tokens(self) -> OAuthToken | None:
        raw = (await self._loaded()).get("tokens")
        try:
            tokens = OAuthToken.model_validate(raw) if isinstance(raw, dict) else None
        except ValueError:
            return None
        _remember_token(tokens)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        _remember_token(tokens)
        record = dict(await self._loaded())
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        if tokens.expires_in is not None:
            record["expiresAt"] = time.time() + float(tokens.expires_in)
        else:
            record.pop("expiresAt", None)
        provider = self.provider
        if provider is not None:
            context = provider.context
            if context.oauth_metadata is not None:
                record["authorizationServer"] = {
                    "url": context.auth_server_url or str(context.oauth_metadata.issuer),
                    "metadata": context.oauth_metadata.model_dump(mode="json", exclude_none=True),
                }
            if context.protected_resource_metadata is not None:
                record["protectedResource"] = context.protected_resource_metadata.model_dump(
                    mode="json", exclude_none=True
                )
        await self._save(record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = (await self._loaded()).get("clientInfo")
        try:
            info = OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None
        except ValueError:
            return None
        _remember_client(info)
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        _remember_client(client_info)
        record = dict(await self._loaded())
        record["clientInfo"] = client_info.model_dump(mode="json", exclude_none=True)
        await self._save(record)

    async def _save(self, record: dict[str, Any]) -> None:
        self._record = record
        if self.provider is not None:
            self.provider.storage_record = record
        await self._store.save(self._url, record)


@contextlib.asynccontextmanager
async def _unlocked() -> AsyncIterator[None]:
    yield


class _Remembering(TokenStorage):
    """A host's own SDK `TokenStorage`, with every secret it hands over registered for
    redaction."""

    def __init__(self, inner: TokenStorage) -> None:
        self._inner = inner

    async def get_tokens(self) -> OAuthToken | None:
        tokens = await self._inner.get_tokens()
        _remember_token(tokens)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        _remember_token(tokens)
        await self._inner.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        info = await self._inner.get_client_info()
        _remember_client(info)
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        _remember_client(client_info)
        await self._inner.set_client_info(client_info)
