"""The ten built-in tools (`source="builtin"`) and their on/off and workspace configuration.

`bash, read, write, edit, grep, glob, webfetch, question, apply_patch, todowrite`, in that
order. Configuration (the `builtins` option or config key): `None`/`True`/`{}` all on; `False`,
`{"disabled": True}` or `{"enabled": False}` all off; `{"tools": {"bash": False}}` drops single
tools; `{"workspace": dir}` confines the file tools to `dir` and runs `bash` there;
`{"max_output_bytes": n}` sets the output cap (default 51200, 0 = none).

Importing this package is cheap: HTTP, HTML conversion and the like load on first use.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

from toolnexus.builtins._common import DEFAULT_MAX_OUTPUT_BYTES, Settings
from toolnexus.builtins._files import edit_tool, read_tool, write_tool
from toolnexus.builtins._patch import apply_patch_tool
from toolnexus.builtins._question import question_tool, render_questions
from toolnexus.builtins._search import glob_tool, grep_tool
from toolnexus.builtins._shell import bash_tool
from toolnexus.builtins._todo import todowrite_tool
from toolnexus.builtins._web import webfetch_tool
from toolnexus.errors import ConfigError
from toolnexus.types import Tool

__all__ = [
    "BUILTIN_NAMES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "builtins_enabled",
    "create_builtin_tools",
    "render_questions",
    "select_builtins",
]

BUILTIN_NAMES: tuple[str, ...] = (
    "bash",
    "read",
    "write",
    "edit",
    "grep",
    "glob",
    "webfetch",
    "question",
    "apply_patch",
    "todowrite",
)


def _check(cfg: Any) -> None:
    if cfg is not None and not isinstance(cfg, (bool, Mapping)):
        raise ConfigError(f"builtins must be true, false or an object, not {type(cfg).__name__}")


def _flag(cfg: Mapping[str, Any], key: str) -> bool | None:
    value = cfg.get(key)
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"builtins.{key} must be true or false, not {value!r}")
    return value


def builtins_enabled(cfg: Any) -> bool:
    """Whether the built-in source is on at all (`disabled: true` wins over `enabled`)."""
    _check(cfg)
    if cfg is None or cfg is True:
        return True
    if cfg is False:
        return False
    assert isinstance(cfg, Mapping)
    if _flag(cfg, "disabled") is True:
        return False
    return _flag(cfg, "enabled") is not False


def _settings(cfg: Any) -> tuple[str | None, int]:
    """(real workspace path or None, output cap) from a `builtins` value."""
    if not isinstance(cfg, Mapping):
        return None, DEFAULT_MAX_OUTPUT_BYTES
    cap = cfg.get("max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES)
    if cap is None:
        cap = DEFAULT_MAX_OUTPUT_BYTES
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise ConfigError(
            f"builtins.max_output_bytes must be a whole number of bytes >= 0, not {cap!r}"
        )
    workspace = cfg.get("workspace")
    if workspace is None or workspace == "":
        return None, cap
    if not isinstance(workspace, (str, os.PathLike)):
        raise ConfigError(f"builtins.workspace must be a directory path, not {workspace!r}")
    real = os.path.realpath(os.fspath(workspace))
    if not os.path.isdir(real):
        raise ConfigError(f"builtins.workspace is not a directory: {os.fspath(workspace)}")
    return real, cap


@functools.lru_cache(maxsize=32)
def _tools(workspace: str | None, max_output_bytes: int) -> tuple[Tool, ...]:
    # Tools are stateless, so one set per distinct settings serves every toolkit (and keeps the
    # toolkit's compiled argument validators across builds).
    settings = Settings(workspace, max_output_bytes)
    return (
        bash_tool(settings),
        read_tool(settings),
        write_tool(settings),
        edit_tool(settings),
        grep_tool(settings),
        glob_tool(settings),
        webfetch_tool(settings),
        question_tool(),
        apply_patch_tool(settings),
        todowrite_tool(),
    )


def create_builtin_tools(cfg: Any = None) -> list[Tool]:
    """All ten built-ins in their fixed order, honouring `workspace` and `max_output_bytes`."""
    _check(cfg)
    return list(_tools(*_settings(cfg)))


def select_builtins(cfg: Any) -> list[Tool]:
    """The built-ins a `builtins` value keeps; raises `ValueError` on bad config."""
    if not builtins_enabled(cfg):
        return []
    tools = create_builtin_tools(cfg)
    drop = cfg.get("tools") if isinstance(cfg, Mapping) else None
    if drop is None:
        return tools
    if not isinstance(drop, Mapping):
        raise ConfigError(f"builtins.tools must be an object of name: bool, not {drop!r}")
    for name, value in drop.items():
        if not isinstance(value, bool):
            raise ConfigError(f"builtins.tools.{name} must be true or false, not {value!r}")
    return [t for t in tools if drop.get(t.name) is not False]
