"""`${ENV_VAR}` expansion for header values. Expanded values are secrets: never log them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from toolnexus._secrets import check_header_value, remember
from toolnexus.errors import EnvVarError as EnvVarError  # re-exported: its old home

_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


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
