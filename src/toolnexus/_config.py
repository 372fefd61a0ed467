"""Reading a toolnexus config (an `mcp.json`-style file or dict) and its sibling blocks."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, TypeAlias

from toolnexus.errors import ConfigError

RESERVED_KEYS = ("builtins", "agents", "a2a", "mcpServer")

# The shapes of a config's blocks, as type names for code that builds them in Python.
ServerConfig: TypeAlias = dict[str, Any]
"""One entry of `mcpServers`: `command`/`args`/`env`… (local) or `url`/`headers`… (remote)."""
McpConfig: TypeAlias = dict[str, dict[str, Any]]
"""Server name → `ServerConfig` (the `mcpServers` block)."""
AgentConfig: TypeAlias = dict[str, Any]
"""One entry of the `agents` block: `card`, `headers`, `timeout`, `pollEvery`, `streaming`,
`auth`, `enabled`."""
AgentsConfig: TypeAlias = dict[str, dict[str, Any]]
"""Agent name → `AgentConfig` (the `agents` block)."""
BuiltinsConfig: TypeAlias = bool | dict[str, Any]
"""The `builtins` option: `True`/`False`, or an object (`tools`, `base_dir`, `shell`, …)."""


def is_enabled(cfg: Mapping[str, Any]) -> bool:
    """Whether a server or agent entry is on: `disabled: true` ⇒ off (wins); else
    `enabled: false` ⇒ off; otherwise on."""
    if cfg.get("disabled") is True:
        return False
    return cfg.get("enabled") is not False


def read_config(path_or_dict: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """The top-level config object. A file that cannot be read, is not JSON or is not an object
    raises `ValueError` naming the file and the problem."""
    if isinstance(path_or_dict, Mapping):
        return dict(path_or_dict)
    path = os.fspath(path_or_dict)
    try:
        with open(path, encoding="utf-8-sig") as fh:  # a leading BOM is not an error
            text = fh.read()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not valid JSON: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a JSON object, not {type(data).__name__}")
    return data
