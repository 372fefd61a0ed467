"""The MCP config format: locating the server map and checking one server entry."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from toolnexus._config import RESERVED_KEYS, read_config
from toolnexus._config import is_enabled as is_enabled  # the rule is shared with agents
from toolnexus._secrets import redact_url, redacted_values
from toolnexus.errors import ConfigError
from toolnexus.errors import ServerConfigError as ServerConfigError  # re-exported: its old home
from toolnexus.oauth._settings import OAuthSettings, parse_oauth_settings

DEFAULT_TIMEOUT = 30.0
"""Default per-phase and per-call timeout in seconds (the config's `timeout` is milliseconds)."""
DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""Default cap on one message (one line) from a stdio server: key `maxMessageBytes`."""

_WRAPPERS = ("mcpServers", "servers", "mcp")
# `type` values other desktop clients write; each maps onto the contract's two kinds.
_LOCAL_TYPES = frozenset({"local", "stdio"})
_REMOTE_TYPES = frozenset({"remote", "http", "streamable-http", "streamableHttp", "sse"})
PROTOCOLS = ("auto", "legacy", "2026-07-28")
MODERN = "2026-07-28"
# MCP log levels, lowest first (the order `logLevel` filters by).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_LOG_LEVEL = "warning"
DEFAULT_LISTEN_RETRY = 1.0
"""Seconds before a dropped 2026-07-28 listen stream is re-opened (key `listenRetry`, ms)."""
DEFAULT_LISTEN_RETRY_MAX = 30.0
"""Cap of that delay, which doubles while re-opening fails (key `listenRetryMax`, ms)."""


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One checked server entry."""

    name: str
    remote: bool
    enabled: bool
    timeout: float  # seconds
    tools_filter: dict[str, bool] | None
    reconnect: bool
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES  # a stdio line, an HTTP reply or event
    # local
    command: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    # remote
    url: str = ""
    headers: dict[str, str] | None = None
    auth: OAuthSettings | None = None
    # both eras
    protocol: str = "auto"
    max_timeout: float = DEFAULT_TIMEOUT * 10  # seconds
    log_level: str | None = DEFAULT_LOG_LEVEL
    log_level_explicit: bool = False
    instructions: bool = False
    roots: tuple[str | dict[str, str], ...] | bool | None = None  # None: not configured
    resources: bool = True
    listen_retry: float = DEFAULT_LISTEN_RETRY  # seconds
    listen_retry_max: float = DEFAULT_LISTEN_RETRY_MAX  # seconds
    defer_loading: bool = False  # its tools are found by tool search, not declared up front
    prefix: str | None = None  # before its tools' and prompts' names; None: "<server>_"
    tasks: str = "prefer"  # "avoid": never declare the Tasks extension (see `_tasks`)

    def __repr__(self) -> str:
        # Headers and the environment can hold credentials: those of credential-like names
        # never show, nor a URL's userinfo.
        shown = []
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.name in ("headers", "env"):
                value = redacted_values(value)
            elif spec.name == "url":
                value = redact_url(value)
            shown.append(f"{spec.name}={value!r}")
        return f"ServerSpec({', '.join(shown)})"


def parse_mcp_config(
    path_or_dict: str | os.PathLike[str] | Mapping[str, Any],
) -> dict[str, dict[str, Any]]:
    """The server map of a config: under `mcpServers`, `servers` or `mcp`, else the object
    itself minus the reserved sibling keys (`builtins`, `agents`, `a2a`, `mcpServer`).

    A file that cannot be read, is not JSON or not an object, or a wrapper that is not an
    object, raises `ValueError`. Entries are returned as given; they are checked at load time so
    a bad entry fails only its own server.
    """
    top = read_config(path_or_dict)
    for key in _WRAPPERS:
        if key in top:
            servers = top[key]
            if not isinstance(servers, Mapping):
                raise ConfigError(
                    f'MCP config key "{key}" must be an object mapping server names to server '
                    f"entries, not {_type_name(servers)}"
                )
            return dict(servers)
    return {k: v for k, v in top.items() if k not in RESERVED_KEYS}


def is_remote(cfg: Mapping[str, Any]) -> bool:
    """`type` decides; without one, a string `url` means remote, anything else local."""
    kind = cfg.get("type")
    if kind in _REMOTE_TYPES:
        return True
    if kind in _LOCAL_TYPES:
        return False
    return isinstance(cfg.get("url"), str)


def check_server(name: str, cfg: Any) -> ServerSpec:
    """Check one server entry; raise `ServerConfigError` naming the offending key."""
    if not isinstance(cfg, Mapping):
        raise ServerConfigError(f"server entry must be an object, not {_type_name(cfg)}")
    kind = cfg.get("type")
    if kind is not None and kind not in _LOCAL_TYPES and kind not in _REMOTE_TYPES:
        raise ServerConfigError(f'"type" must be "local" or "remote", not {_show(kind)}')
    for key in ("enabled", "disabled", "reconnect", "instructions", "resources", "deferLoading"):
        if key in cfg and not isinstance(cfg[key], bool):
            raise ServerConfigError(f'"{key}" must be true or false, not {_show(cfg[key])}')
    # One message (a stdio line; an HTTP reply or one event of a stream) at most this long.
    max_message = cfg.get("maxMessageBytes", DEFAULT_MAX_MESSAGE_BYTES)
    if isinstance(max_message, bool) or not isinstance(max_message, int) or max_message < 1024:
        raise ServerConfigError(
            f'"maxMessageBytes" must be a whole number of bytes, at least 1024, '
            f"not {_show(max_message)}"
        )
    timeout = _milliseconds(cfg, "timeout", DEFAULT_TIMEOUT)
    tools_filter = _tools_filter(cfg)
    protocol = cfg.get("protocol", "auto")
    if protocol not in PROTOCOLS:
        raise ServerConfigError('protocol must be "auto", "legacy" or "2026-07-28"')
    tasks = cfg.get("tasks", "prefer")
    if tasks not in ("prefer", "avoid"):
        raise ServerConfigError(f'"tasks" must be "prefer" or "avoid", not {_show(tasks)}')
    common: dict[str, Any] = {
        "name": name,
        "tasks": tasks,
        "enabled": is_enabled(cfg),
        "timeout": timeout,
        "tools_filter": tools_filter,
        "reconnect": cfg.get("reconnect", True),
        "protocol": protocol,
        "max_timeout": _milliseconds(cfg, "maxTimeout", timeout * 10),
        "log_level": _log_level(cfg),
        "log_level_explicit": "logLevel" in cfg,
        "instructions": cfg.get("instructions", False),
        "roots": _roots(cfg),
        "resources": cfg.get("resources", True),
        "defer_loading": cfg.get("deferLoading", False),
        "max_message_bytes": max_message,
        "prefix": _prefix(cfg),
        **_listen_retry(cfg),
    }
    if is_remote(cfg):
        url = cfg.get("url")
        if url is None:
            raise ServerConfigError('"url" is required for a remote server')
        if not isinstance(url, str) or not url.strip():
            raise ServerConfigError(f'"url" must be a non-empty string, not {_show(url)}')
        headers = _string_map(cfg, "headers")
        return ServerSpec(
            remote=True, url=url.strip(), headers=headers, auth=_auth(cfg, headers), **common
        )
    if cfg.get("auth") is not None:
        raise ServerConfigError('"auth" is for remote servers (give "url"), not a local command')
    env = _string_map(cfg, "env")
    environment = _string_map(cfg, "environment")
    if env is not None and environment is not None:
        env = {**env, **environment}  # `environment` wins key by key
    elif environment is not None:
        env = environment
    cwd = cfg.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise ServerConfigError(f'"cwd" must be a non-empty string, not {_show(cwd)}')
    return ServerSpec(
        remote=False,
        command=_command(cfg),
        env=env,
        cwd=cwd,
        **common,
    )


def _prefix(cfg: Mapping[str, Any]) -> str | None:
    """`"prefix"`: a string, `false` (or `""`) for none, `true` (or absent) for `<server>_`."""
    value = cfg.get("prefix", True)
    if value is True:
        return None
    if value is False:
        return ""
    if not isinstance(value, str):
        raise ServerConfigError(f'"prefix" must be a string or true/false, not {_show(value)}')
    return value


def _auth(cfg: Mapping[str, Any], headers: Mapping[str, str] | None) -> OAuthSettings | None:
    if cfg.get("auth") is None:
        return None
    if any(name.lower() == "authorization" for name in headers or ()):
        raise ServerConfigError('"auth" and an "Authorization" header cannot both be given')
    try:
        return parse_oauth_settings(cfg["auth"])
    except ConfigError as exc:
        raise ServerConfigError(str(exc)) from None


def _command(cfg: Mapping[str, Any]) -> tuple[str, ...]:
    command = cfg.get("command")
    args = cfg.get("args")
    if args is not None and (
        not isinstance(args, list) or not all(isinstance(a, str) for a in args)
    ):
        raise ServerConfigError(f'"args" must be a list of strings, not {_show(args)}')
    if command is None:
        raise ServerConfigError('"command" is required for a local server (or give "url")')
    if isinstance(command, str):
        if args is not None:
            # Desktop-client style: `command` is the program itself, `args` its arguments.
            parts = [command]
        else:
            try:
                parts = shlex.split(command)
            except ValueError as exc:
                raise ServerConfigError(f'"command" cannot be split like a shell: {exc}') from None
    elif isinstance(command, list) and all(isinstance(p, str) for p in command):
        parts = list(command)
    else:
        raise ServerConfigError(
            f'"command" must be a list of strings or a string, not {_show(command)}'
        )
    parts.extend(args or ())
    if not parts or not parts[0].strip():
        raise ServerConfigError('"command" is empty')
    return tuple(parts)


def _milliseconds(cfg: Mapping[str, Any], key: str, default: float) -> float:
    """The positive number of milliseconds under `key`, in seconds (`default` when absent)."""
    value = cfg.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ServerConfigError(
            f'"{key}" must be a positive number of milliseconds, not {_show(value)}'
        )
    return float(value) / 1000.0


def _listen_retry(cfg: Mapping[str, Any]) -> dict[str, float]:
    first = _milliseconds(cfg, "listenRetry", DEFAULT_LISTEN_RETRY)
    most = _milliseconds(cfg, "listenRetryMax", max(first, DEFAULT_LISTEN_RETRY_MAX))
    if most < first:
        raise ServerConfigError('"listenRetryMax" must not be less than "listenRetry"')
    return {"listen_retry": first, "listen_retry_max": most}


def _log_level(cfg: Mapping[str, Any]) -> str | None:
    if "logLevel" not in cfg:
        return DEFAULT_LOG_LEVEL
    value = cfg["logLevel"]
    if value is None:
        return None
    if value not in LOG_LEVELS:
        raise ServerConfigError(
            f'"logLevel" must be an MCP log level ({", ".join(LOG_LEVELS)}) or null, not '
            f"{_show(value)}"
        )
    return str(value)


def _roots(cfg: Mapping[str, Any]) -> tuple[str | dict[str, str], ...] | bool | None:
    value = cfg.get("roots")
    if value is None:
        return None
    if value is False:
        return False
    if isinstance(value, list) and all(_is_root(r) for r in value):
        return tuple(dict(r) if isinstance(r, Mapping) else r for r in value)
    raise ServerConfigError(
        '"roots" must be false or a list of paths, file:// URIs or {"uri", "name"} objects, not '
        f"{_show(value)}"
    )


def _is_root(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value)
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("uri"), str)
        and all(isinstance(v, str) for v in value.values())
    )


def _tools_filter(cfg: Mapping[str, Any]) -> dict[str, bool] | None:
    value = cfg.get("tools")
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, bool) for k, v in value.items()
    ):
        raise ServerConfigError(
            f'"tools" must be an object mapping tool names to true/false, not {_show(value)}'
        )
    return dict(value)


def _string_map(cfg: Mapping[str, Any], key: str) -> dict[str, str] | None:
    value = cfg.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ServerConfigError(f'"{key}" must be an object of strings, not {_type_name(value)}')
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, str):
            out[str(k)] = v
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out[str(k)] = str(v)
        else:
            # Never echo the value: headers and env entries may hold secrets.
            raise ServerConfigError(f'"{key}"."{k}" must be a string, not {_type_name(v)}')
    return out


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """A short description of a (non-secret) config value for an error message."""
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 40 else "a string"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        odd = next((v for v in value if not isinstance(v, str)), None)
        return "an empty list" if not value else f"a list holding {_type_name(odd)}"
    return _type_name(value)
