"""Every exception toolnexus raises to its host, under one root: `ToolnexusError`.

```python
try:
    result = await client.run("hello", toolkit)
except toolnexus.ProviderConnectionError as exc:  # the endpoint could not be reached
    ...
except toolnexus.ToolnexusError:  # anything else the library reports
    ...
```

Each class also keeps the built-in base it always had (`ValueError` for bad configuration,
`TimeoutError` for a run's deadline, `OSError` for a program that cannot start), so existing
`except` clauses go on working. Failures of a single tool call are not raised: they reach the
model as an `is_error` result.
"""

from __future__ import annotations

from toolnexus._numbers import format_number

TYPE_CHECKING = False  # as in `toolnexus/__init__.py`: no `typing` import on the way in
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "A2AError",
    "AgentError",
    "CallerUnavailable",
    "ConfigError",
    "ConfigFileNotFound",
    "ConfigTypeError",
    "EnvVarError",
    "EventLoopError",
    "HeaderValueError",
    "MalformedFrontmatter",
    "McpInputError",
    "MissingApiKey",
    "NoSuchRequest",
    "NotConnected",
    "OutputError",
    "ProviderConnectionError",
    "ProviderError",
    "RunCancelled",
    "RunTimeout",
    "ServeError",
    "ServeTimeout",
    "ServerConfigError",
    "SourceConnectionError",
    "SpawnError",
    "StoreConfigError",
    "StoreError",
    "StreamingUnsupported",
    "ToolnexusError",
    "UnsupportedOperation",
    "UsageLimitExceeded",
    "WireFormatError",
]

NO_API_KEY_MESSAGE = (
    "No API key: set api_key or OPENROUTER_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY"
)

_BODY_CUT = 500


class ToolnexusError(Exception):
    """The root of every exception toolnexus raises to its host.

    Its message never shows a secret the process knows (an API key, a `${VAR}` value, a
    credential header, URL userinfo): they read `[redacted]`, in `str`, `repr` and `args`."""

    def __init__(self, *args: object) -> None:
        from toolnexus._secrets import redact  # light; imported here to keep this module bare

        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled as its class, args and attributes, never re-run through an `__init__` whose
        # signature differs per class: an error a durable engine recorded, or one sent to
        # another process, reads back as the same error.
        return (_rebuild_error, (type(self), self.args, self.__dict__))


def _rebuild_error(
    cls: type[ToolnexusError], args: tuple[object, ...], state: dict[str, object]
) -> ToolnexusError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


# --- configuration ---------------------------------------------------------------------------


class ConfigError(ToolnexusError, ValueError):
    """A configuration value is wrong: a bad option, file, server entry or environment variable.

    The message names what is wrong, never a secret value.
    """


class ConfigTypeError(ConfigError, TypeError):
    """A configuration value or argument has the wrong type (a number where a list of names
    belongs, a string where a callable does). Also a `TypeError`, as Python's own checks are."""


class EnvVarError(ConfigError):
    """A `${NAME}` names an unset environment variable (the message names it, never a value)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"environment variable {name} is not set")
        self.variable = name


class HeaderValueError(ConfigError):
    """A header value (or API key) holds a control character, e.g. the trailing newline of an
    env file. Raised before any request; the message names the header, never its value."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"header {name} has a control character in its value (a trailing newline from "
            "an env file?)"
        )
        self.header = name


class ServerConfigError(ConfigError):
    """An MCP server entry has a wrong-typed or missing key; the message names the key."""


class ConfigFileNotFound(ConfigError, FileNotFoundError):
    """A file or folder the configuration names does not exist (a persona folder, a soul file).
    Also a `FileNotFoundError`, as opening it would have raised."""


class MalformedFrontmatter(ConfigError):
    """A `SKILL.md` frontmatter is not valid YAML (or its closing fence is missing)."""


class MissingApiKey(ConfigError):
    """No API key was given and none of the environment variables is set."""

    def __init__(self) -> None:
        super().__init__(NO_API_KEY_MESSAGE)


# --- the LLM provider ------------------------------------------------------------------------


class ProviderError(ToolnexusError):
    """The LLM provider answered with an error (non-2xx, or an error-shaped 2xx body).

    `status` is the HTTP status and `body` the response text as it may be read (see
    `toolnexus.client.safe_error_body`: account identifiers redacted, a 401/403 body dropped).
    `message` reads `LLM <status>: <provider message>`, that message capped at
    `MAX_ERROR_BODY` characters; `provider_message` is the provider's own words (or ours about
    a body we could not use). `retry_after` is the `Retry-After` header as sent (the third
    positional argument, as published, else taken from `headers`), `None` without one.
    `headers` are the response headers, `None` for an error event inside a stream.
    """

    def __init__(
        self,
        status: int,
        body: str,
        retry_after: str | None = None,
        *,
        provider_message: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        from toolnexus._error_body import MAX_ERROR_BODY, redact_identifiers, safe_error_body
        from toolnexus._secrets import redact

        if provider_message is None:
            provider_message = provider_message_of(safe_error_body(status, body))
        # A provider that echoes a credential or an account id back never shows it.
        body = redact(safe_error_body(status, body))
        if provider_message:
            provider_message = redact(redact_identifiers(provider_message))
        self.status = status
        self.body = body
        self.provider_message = provider_message
        self.headers = headers
        if retry_after is None:
            retry_after = next(
                (v for k, v in (headers or {}).items() if k.lower() == "retry-after"), None
            )
        self.retry_after = retry_after
        shown = provider_message
        if shown and len(shown) > MAX_ERROR_BODY:
            shown = shown[:MAX_ERROR_BODY] + "…"
        self.message = f"LLM {status}: {shown}" if shown else f"LLM {status}"
        super().__init__(self.message)

    @property
    def text(self) -> str:
        """The response text: `body` under the name the published package also gives it."""
        return self.body


class ProviderConnectionError(ToolnexusError, ConnectionError):
    """The LLM endpoint could not be reached or the connection failed mid-answer.

    Covers refused connections, unknown hosts, TLS failures and broken or silent connections.
    `url` is the endpoint without credentials (no user info, no query string); the message reads
    `cannot reach <url>: <reason>` and the transport's own exception is the `__cause__`.
    """

    def __init__(self, url: str, reason: str) -> None:
        self.url = public_url(url)
        self.reason = reason
        super().__init__(f"cannot reach {self.url}: {reason}")


def public_url(url: str) -> str:
    """`https://user:secret@host/v1?key=x` → `https://host/v1`: safe to print or log."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def provider_message_of(body: str) -> str:
    """`error.message` of a JSON error body when present, else the body text cut to 500 chars.

    `""` for an empty body (the error then reads just `LLM <status>`).
    """
    import json

    if not body.strip():
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:_BODY_CUT]
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else body[:_BODY_CUT]


# --- runs ------------------------------------------------------------------------------------


class RunTimeout(ToolnexusError, TimeoutError):
    """The run's `timeout_ms` deadline passed (message
    `run timeout after <ms>ms (client timeout_ms budget)`, as published: it names the option)."""

    def __init__(self, timeout_ms: float) -> None:
        self.timeout_ms = timeout_ms
        super().__init__(
            f"run timeout after {format_number(timeout_ms)}ms (client timeout_ms budget)"
        )


class RunCancelled(ToolnexusError):
    """The run's `cancel` event was set."""

    def __init__(self, message: str = "run cancelled") -> None:
        super().__init__(message)


class EventLoopError(ToolnexusError, RuntimeError):
    """A blocking call was made on the event loop it would block: a `*_sync` method, or a
    blocking `close()`, inside a running loop. Await the async method there instead."""


class WireFormatError(ToolnexusError, ValueError):
    """Data in a wire format has the wrong shape: a field is missing or of the wrong type in a
    provider's tool calls or a wire dict read back into a typed value. The message names it."""


# --- stores ----------------------------------------------------------------------------------


class OutputError(ToolnexusError):
    """A run has no typed output to give: it ended without a valid final result.

    `status` is the run's status and `errors` the validation errors of the last answer (or
    `None` when the run ended for another reason, such as a refusal or a pending request).
    """

    def __init__(self, message: str, status: str, errors: list[dict[str, object]] | None) -> None:
        super().__init__(message)
        self.status = status
        self.errors = errors


class UnsupportedOperation(ToolnexusError, NotImplementedError):
    """What was asked is not offered by the code behind it, e.g. an `http_transport` whose
    `post` raises `NotImplementedError`. Also a `NotImplementedError`."""


class CallerUnavailable(UnsupportedOperation):
    """A tool asked its caller for something the caller cannot give: `ToolContext.sample`
    when the call was not served over MCP, or the MCP client did not declare sampling, or its
    connection has no way back to it."""


class StreamingUnsupported(UnsupportedOperation):
    """The model behind this client answers in whole replies only (an in-process `generate`, a
    synchronous transport without `open()`), so `stream` and `on_text` are refused."""


class UsageLimitExceeded(ToolnexusError):
    """A run hit one of its limits (`raise_on_limit=True`); `result` is the run so far.

    `limit` names it: `"maxTurns"`, `"total_tokens"`, `"request_tokens"`, `"tool_calls"` or
    `"output"`.
    """

    def __init__(self, limit: str, result: object) -> None:
        super().__init__(f"usage limit {limit} reached")
        self.limit = limit
        self.result = result


class StoreError(ToolnexusError):
    """A conversation or task store failed: unreachable, a corrupt row, or a lost claim on an id.

    The message names the store (its URL without the password) and the id concerned.
    """


class StoreConfigError(StoreError, ConfigError):
    """A store cannot be opened: unknown URL, missing driver, server unreachable at start."""


# --- tool sources ----------------------------------------------------------------------------


class A2AError(ToolnexusError):
    """A failed exchange with an A2A agent (HTTP status, JSON-RPC error, malformed reply)."""


class SourceConnectionError(ToolnexusError, ConnectionError):
    """A tool source fetched while it is added (an A2A Agent Card, an OpenAPI document) could
    not be reached: refused connection, unknown host, TLS failure, timeout.

    `url` is the address without credentials (no user info, no query string), `what` names the
    document; the message reads `cannot reach <what> at <url>: <reason>` and the transport's own
    exception is the `__cause__`.
    """

    def __init__(self, what: str, url: str, reason: str) -> None:
        self.what = what
        self.url = public_url(url)
        self.reason = reason
        super().__init__(f"cannot reach {what} at {self.url}: {reason}")


class SpawnError(ToolnexusError, OSError):
    """A server's program could not be started; not `toolnexus.agents.SpawnError`: a value.

    The message says why. The sub-agents' `SpawnError` is what a refused spawn returns."""


class McpInputError(ToolnexusError):
    """An MCP server asked for input it could not be given while reading a resource or
    getting a prompt: no `wait_for` to ask the host, an answer refused or not fitting the
    form, sampling (never provided), or too many rounds. The message names what was asked."""


class NotConnected(ToolnexusError, ValueError):
    """An MCP server has no live session (it is still connecting, failed or was closed).

    `server` is its name."""

    def __init__(self, server: str) -> None:
        super().__init__(f'MCP server "{server}" is not connected')
        self.server = server


# --- serving and agents ----------------------------------------------------------------------


class ServeError(ToolnexusError, OSError, RuntimeError):
    """A server could not start: its host does not resolve, its port cannot be bound (`errno`
    says why, e.g. `EADDRINUSE`), or it stopped while starting. Also a `RuntimeError`, which a
    failed start used to raise."""


class ServeTimeout(ServeError, TimeoutError):
    """A server did not finish starting in time."""


class AgentError(ToolnexusError, RuntimeError):
    """An agent runtime cannot do what was asked: an agent cannot be spawned (unknown name, a
    depth, children or budget limit), or there is nothing suspended to resume."""


class NoSuchRequest(AgentError, ValueError):
    """`resume` got an answer whose id matches no suspended request."""
