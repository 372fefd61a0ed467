"""HTTP endpoints as tools (`source="http"`): URL placeholders, query, body, `${ENV}` headers.

Everything that does not depend on the call's arguments (the parsed URL template, the method's
argument routing, static and templated headers) is prepared once, when the tool is defined.
Requests go through the toolkit's pooled `httpx2.AsyncClient`. `toolnexus.http` is the published
path; `toolnexus.http_tools` is an older spelling that hands out the same objects.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias
from urllib.parse import quote, urlencode

from toolnexus._aio import Signalled, until_signalled
from toolnexus._env import _VAR as _ENV_VAR
from toolnexus._env import EnvVarError, check_header_value, expand_env
from toolnexus._json import compact_json, to_compact_json
from toolnexus.content import ContentPart, describe_part, kind_for_mime, part
from toolnexus.errors import ConfigError, ConfigTypeError
from toolnexus.types import Tool, ToolContext, ToolResult, error_message

if TYPE_CHECKING:
    import httpx2

__all__ = ["DEFAULT_TIMEOUT", "HTTP_DEFAULT_TIMEOUT", "http_tool"]

BodyMode: TypeAlias = Literal["json", "form", "raw"]
ResultMode: TypeAlias = Literal["text", "json", "status+text"]

DEFAULT_TIMEOUT = 30.0  # seconds
HTTP_DEFAULT_TIMEOUT = DEFAULT_TIMEOUT
"""`http_tool`'s default timeout in seconds, by the name the package root gives it."""
_BODY_MODES = ("json", "form", "raw")
_RESULT_MODES = ("text", "json", "status+text")
_ARGS_IN_QUERY = frozenset({"GET", "HEAD", "DELETE"})  # these methods send every arg as query
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_MAX_REDIRECTS = 20
_CONTENT_TYPES = {"json": "application/json", "form": "application/x-www-form-urlencoded"}
# Control characters other than tab are never valid in a header value (RFC 9110 field-value).


def stringify(value: Any) -> str:
    """An argument as URL/query/form text: JSON spelling for booleans, numbers and structures."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)
    if isinstance(value, (dict, list, tuple)):
        return to_compact_json(value)
    return str(value)


def _pairs(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Query/form pairs; a list value repeats its key (`tag=a&tag=b`)."""
    out: list[tuple[str, str]] = []
    for key, value in args.items():
        if isinstance(value, (list, tuple)):
            out.extend((key, stringify(v)) for v in value)
        else:
            out.append((key, stringify(value)))
    return out


class UrlTemplate:
    """A URL with `{name}` placeholders, split once into literal text and argument names."""

    __slots__ = ("_parts", "names", "template")

    def __init__(self, template: str, pattern: re.Pattern[str] = _PLACEHOLDER) -> None:
        self.template = template
        self._parts: list[tuple[bool, str]] = []  # (is_placeholder, literal text or name)
        at = 0
        for match in pattern.finditer(template):
            self._parts.append((False, template[at : match.start()]))
            self._parts.append((True, match.group(1)))
            at = match.end()
        self._parts.append((False, template[at:]))
        self.names: tuple[str, ...] = tuple(
            dict.fromkeys(text for is_name, text in self._parts if is_name)
        )

    def render(self, args: dict[str, Any]) -> str:
        """Substitute percent-encoded values (every reserved character encoded), removing the
        used keys from `args`; an absent argument becomes `""`."""
        values = {name: _encode(stringify(args.pop(name, ""))) for name in self.names}
        return "".join(values[text] if is_name else text for is_name, text in self._parts)


def _encode(value: str) -> str:
    encoded = quote(value, safe="")
    if encoded and encoded.strip(".") == "":
        # `.` and `..` would be dot segments, which URL normalisation resolves away: a value
        # must never move the request to another path.
        return encoded.replace(".", "%2E")
    return encoded


class HttpEndpoint:
    """One HTTP request shape; `await endpoint(args, ctx)` performs it and maps the response."""

    def __init__(
        self,
        *,
        method: str,
        url: str | UrlTemplate,
        headers: Mapping[str, str] | None = None,
        query: Iterable[str] | None = None,
        body: str = "json",
        timeout: float | None = None,
        result_mode: str = "text",
        json_body_arg: str | None = None,
    ) -> None:
        if not isinstance(method, str) or not method.strip():
            raise ConfigError("method must be an HTTP method such as GET or POST")
        if body not in _BODY_MODES:
            raise ConfigError(f"body must be one of {', '.join(_BODY_MODES)}, got {body!r}")
        if result_mode not in _RESULT_MODES:
            raise ConfigError(
                f"result_mode must be one of {', '.join(_RESULT_MODES)}, got {result_mode!r}"
            )
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
        ):
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.method = method.strip().upper()
        self.url = url if isinstance(url, UrlTemplate) else UrlTemplate(url)
        _check_url(self.url.template)
        if isinstance(query, str):
            raise ConfigTypeError("query must be a list of argument names, not a string")
        self.query = frozenset(query or ())
        self.body = body
        self.timeout = float(timeout) if timeout is not None else DEFAULT_TIMEOUT
        self.result_mode = result_mode
        # OpenAPI bodies that are not objects travel as one argument, sent as the whole body.
        self.json_body_arg = json_body_arg
        self._static_headers: dict[str, str] = {}
        # Values holding ${VAR}, expanded per call; with the variable names, to scrub errors.
        self._env_headers: list[tuple[str, str, tuple[str, ...]]] = []
        for key, value in (headers or {}).items():
            if "${" in str(value):
                names = tuple(_ENV_VAR.findall(str(value)))
                self._env_headers.append((str(key), str(value), names))
            else:
                self._static_headers[str(key)] = str(value)
        self._secret_keys = tuple(key for key, _, _ in self._env_headers)
        self._has_content_type = any(k.lower() == "content-type" for k in headers or {})

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        remaining = dict(args)
        url = self.url.render(remaining)
        target = f"{self.method} {url}"  # for error messages: never carries header values
        if self.method in _ARGS_IN_QUERY:
            in_query, remaining = remaining, {}
        else:
            in_query = {k: remaining.pop(k) for k in list(remaining) if k in self.query}
        if in_query:
            url += ("&" if "?" in url else "?") + urlencode(_pairs(in_query), quote_via=quote)
        secrets: list[str] = []
        try:
            headers = self._headers(secrets)
        except (EnvVarError, ValueError) as exc:
            return ToolResult(str(exc), True)
        content = self._content(remaining, headers) if remaining else None
        timeout = ctx.timeout if ctx.timeout is not None else self.timeout
        try:
            response = await until_signalled(self._send(url, headers, content, timeout), ctx.signal)
        except Signalled:
            return ToolResult(f"{target} cancelled", True)
        except TimeoutError:
            return ToolResult(f"{target} timed out after {timeout:g}s", True)
        except Exception as exc:
            return ToolResult(f"{target} failed: {_scrub(_describe(exc), secrets)}", True)
        return self._result(response)

    def _headers(self, secrets: list[str]) -> dict[str, str]:
        headers = dict(self._static_headers)
        for key, template, names in self._env_headers:
            value = expand_env(template)
            check_header_value(key, value)  # names the header, never its (secret) value
            secrets.append(value)
            secrets.extend(os.environ[name] for name in names if name in os.environ)
            headers[key] = value
        return headers

    def _content(self, remaining: dict[str, Any], headers: dict[str, str]) -> bytes | None:
        if self.body == "raw":
            return stringify(remaining.get("body", "")).encode("utf-8")
        if not self._has_content_type:
            headers["Content-Type"] = _CONTENT_TYPES[self.body]
        if self.body == "form":
            return urlencode(_pairs(remaining)).encode("utf-8")
        payload = remaining
        if self.json_body_arg is not None and self.json_body_arg in remaining:
            payload = remaining[self.json_body_arg]
        return to_compact_json(payload).encode("utf-8")

    async def _send(
        self, url: str, headers: dict[str, str], content: bytes | None, timeout: float
    ) -> httpx2.Response:
        import httpx2

        from toolnexus._http import shared_client

        client = shared_client()
        try:
            async with asyncio.timeout(timeout):  # a whole-request deadline, not per phase
                request = client.build_request(
                    self.method, url, content=content, headers=headers, timeout=timeout
                )
                for _ in range(_MAX_REDIRECTS + 1):
                    response = await client.send(request, follow_redirects=False)
                    follow = response.next_request
                    if follow is None:
                        return response
                    if follow.url.origin != request.url.origin:
                        # `${ENV}` headers are secrets for the configured origin: a redirect
                        # elsewhere never carries them (httpx2 itself drops only Authorization).
                        for key in self._secret_keys:
                            follow.headers.pop(key, None)
                    await response.aclose()
                    request = follow
                raise httpx2.TooManyRedirects("more than 20 redirects", request=request)
        except Exception as exc:
            if isinstance(exc, httpx2.TimeoutException):
                raise TimeoutError from exc
            raise

    def _result(self, response: httpx2.Response) -> ToolResult:
        status = response.status_code
        metadata = {"status": status}
        if 200 <= status <= 299:
            media = _media_part(response)
            if media is not None:  # an image, audio or PDF body reaches the model as a part
                line = describe_part(media)
                output = f"{status}\n{line}" if self.result_mode == "status+text" else line
                return ToolResult(output, False, metadata, [media])
        text = response.text
        if not 200 <= status <= 299:
            return ToolResult(f"HTTP {status}: {text}", True, metadata)
        if self.result_mode == "json":
            try:
                return ToolResult(compact_json(json.loads(text)), False, metadata)
            except ValueError:
                return ToolResult(compact_json(text), False, metadata)
        if self.result_mode == "status+text":
            return ToolResult(f"{status}\n{text}", False, metadata)
        return ToolResult(text, False, metadata)


def _media_part(response: httpx2.Response) -> ContentPart | None:
    """The body as a part when its media type is `image/*`, `audio/*` or `application/pdf`."""
    media_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    major = media_type.split("/", 1)[0]
    if major not in ("image", "audio") and media_type != "application/pdf":
        return None
    data = base64.b64encode(response.content).decode("ascii")
    return part(type=kind_for_mime(media_type), mimeType=media_type, data=data)


def _check_url(template: str) -> None:
    head = template.split("{", 1)[0].lower()
    if not (head.startswith("http://") or head.startswith("https://")):
        raise ConfigError(f"url must start with http:// or https://, got {template!r}")


def _describe(exc: BaseException) -> str:
    """The cause of a failed request: the error, plus its root cause when that says more.

    e.g. `ConnectError: All connection attempts failed ([Errno 111] Connection refused)`.
    """
    text = f"{type(exc).__name__}: {error_message(exc)}"
    root = exc
    for _ in range(10):  # bounded: a chain can loop
        inner = root.__cause__ or root.__context__
        if inner is None:
            break
        root = inner
    if root is not exc:
        detail = error_message(root)
        if detail and detail not in text:
            text += f" ({detail})"
    return text


def _scrub(message: str, secrets: list[str]) -> str:
    """`message` with every secret replaced by `***`, also as a `repr` would spell it (errors
    from the HTTP stack quote header values as bytes, escapes included)."""
    spellings = {
        form
        for secret in secrets
        if secret
        for form in (secret, repr(secret)[1:-1], repr(secret.encode("utf-8"))[2:-1])
    }
    for form in sorted(spellings, key=len, reverse=True):  # whole values before their parts
        message = message.replace(form, "***")
    return message


def default_input_schema(names: Iterable[str]) -> dict[str, Any]:
    """Each URL placeholder a required string; other properties left open."""
    names = list(names)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: {"type": "string"} for name in names},
    }
    if names:
        schema["required"] = names
    return schema


def http_tool(
    *,
    name: str,
    description: str,
    method: str,
    url: str,
    headers: Mapping[str, str] | None = None,
    query: Iterable[str] | None = None,
    body: BodyMode = "json",
    input_schema: dict[str, Any] | None = None,
    timeout: float | None = None,
    result_mode: ResultMode = "text",
    defer_loading: bool = False,
) -> Tool:
    """A tool that calls an HTTP endpoint.

    `url` may hold `{arg}` placeholders; header values may hold `${ENV_VAR}` (expanded per call,
    never logged). GET/HEAD/DELETE send the other arguments as query; other methods send them
    as a `json`, `form` or `raw` body, except names listed in `query`. `timeout` is in seconds
    (default 30; `ctx.timeout` overrides). A non-2xx status is an error `HTTP <status>: <body>`.
    `defer_loading=True`: the tool is deferred, found by tool search (docs/tools-search.md).
    """
    if not isinstance(defer_loading, bool):
        raise ConfigTypeError(f"http_tool {name!r}: defer_loading must be a bool")
    if not isinstance(name, str) or not name:
        raise ConfigError("http_tool needs a non-empty name")
    if not isinstance(url, str):
        raise ConfigTypeError(f"http_tool {name!r}: url must be a string")
    try:
        endpoint = HttpEndpoint(
            method=method,
            url=url,
            headers=headers,
            query=query,
            body=body,
            timeout=timeout,
            result_mode=result_mode,
        )
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"http_tool {name!r}: {exc}") from None
    schema = input_schema if input_schema is not None else default_input_schema(endpoint.url.names)
    return Tool(name, description, schema, "http", endpoint, defer_loading=defer_loading)
