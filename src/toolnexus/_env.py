"""`${ENV_VAR}` expansion for header values. Expanded values are secrets: never log them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from toolnexus._secrets import remember
from toolnexus.errors import EnvVarError as EnvVarError  # re-exported: its old home
from toolnexus.errors import HeaderValueError

_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
# Header values may hold visible ASCII, spaces, tabs and non-ASCII text, nothing else.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_CREDENTIAL_NAME = re.compile(
    r"auth|token|key|secret|cookie|session|passw|credential|signature", re.IGNORECASE
)


def check_header_value(name: str, value: str) -> None:
    """Refuse a header value no HTTP library may send as is (`HeaderValueError`, naming the
    header), before any request is made; the value of a header whose name says credential
    (`Authorization`, `X-Custom-Token`, `api-key`, ...) is remembered as a secret."""
    if _CONTROL.search(value):
        raise HeaderValueError(name)
    if _CREDENTIAL_NAME.search(name):
        remember(value.partition(" ")[2] if value[:7].lower() == "bearer " else value)
        remember(value)


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace every `${NAME}` in `value`; an unset variable raises `EnvVarError`."""
    env = os.environ if environ is None else environ
    if "${" not in value:
        return value

    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise EnvVarError(name)
        value = env[name]
        remember(value)  # an expanded value is a secret from now on, wherever it shows up
        return value

    return _VAR.sub(sub, value)


def expand_env_headers(
    headers: Mapping[str, str] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """Expand `${NAME}` in every header value (`None` in, `None` out).

    A value with a control character (a newline, ...) raises `HeaderValueError` naming the
    header: no request is made with it, and the value is never shown."""
    if headers is None:
        return None
    expanded = {str(k): expand_env(str(v), environ) for k, v in headers.items()}
    for name, value in expanded.items():
        check_header_value(name, value)
    return expanded
