"""The ten built-in tools (`source="builtin"`) and their on/off and workspace configuration.

`bash, read, write, edit, grep, glob, webfetch, question, apply_patch, todowrite`, in that
order. Configuration (the `builtins` option or config key): `None`/`True`/`{}` all on; `False`,
`{"disabled": True}` or `{"enabled": False}` all off; `{"tools": {"bash": False}}` drops single
tools; `{"max_output_bytes": n}` sets the output cap (default 51200, 0 = none).

The host boundary: `{"base_dir": dir}` (the published name) is where relative paths, paths in
`apply_patch` text and `bash` start; `"confine_to_base_dir": True` refuses every path whose real
path leaves it (`<path> resolves outside baseDir <dir>`). `{"workspace": dir}` is the same base,
confined unless `confine_to_base_dir` is `False`. `{"shell": [argv...]}` is the prefix `bash`
runs a command with, used verbatim (default `["/bin/bash", "-c"]`, `/bin/sh` without bash).
Any other key is refused: a misspelt safety option must not pass silently.

Importing this package is cheap: HTTP, HTML conversion and the like load on first use.
`toolnexus.builtins` is an older spelling of this path and hands out the same objects.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

from toolnexus._config import BuiltinsConfig
from toolnexus.builtin._common import DEFAULT_MAX_OUTPUT_BYTES, Settings
from toolnexus.builtin._files import edit_tool, read_tool, write_tool
from toolnexus.builtin._glob import SKIPPED_DIRS as IGNORE_DIRS
from toolnexus.builtin._patch import apply_patch_tool
from toolnexus.builtin._question import question_tool, render_questions
from toolnexus.builtin._search import glob_tool, grep_tool
from toolnexus.builtin._shell import bash_tool, shell_argv
from toolnexus.builtin._todo import todowrite_tool
from toolnexus.builtin._web import webfetch_tool
from toolnexus.errors import ConfigError
from toolnexus.types import Tool

__all__ = [
    "BUILTIN_NAMES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "IGNORE_DIRS",
    "BuiltinsConfig",
    "builtin_shell",
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


_KEYS = frozenset(
    {
        "enabled",
        "disabled",
        "tools",
        "max_output_bytes",
        "workspace",
        "base_dir",
        "confine_to_base_dir",
        "shell",
    }
)


def _check(cfg: Any) -> None:
    if cfg is not None and not isinstance(cfg, (bool, Mapping)):
        raise ConfigError(f"builtins must be true, false or an object, not {type(cfg).__name__}")
    if isinstance(cfg, Mapping):
        unknown = sorted(str(key) for key in cfg if key not in _KEYS)
        if unknown:
            raise ConfigError(
                f"builtins.{unknown[0]} is not an option (known: {', '.join(sorted(_KEYS))})"
            )


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


def _directory(cfg: Mapping[str, Any], key: str) -> str | None:
    value = cfg.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ConfigError(f"builtins.{key} must be a directory path, not {value!r}")
    if not os.path.isdir(value):
        raise ConfigError(f"builtins.{key} is not a directory: {os.fspath(value)}")
    return os.path.abspath(value)


def _shell(cfg: Mapping[str, Any]) -> tuple[str, ...]:
    value = cfg.get("shell")
    if value is None:
        return ()
    if (
        isinstance(value, (str, bytes))
        or not isinstance(value, (list, tuple))
        or not all(isinstance(part, str) and part for part in value)
    ):
        raise ConfigError(
            'builtins.shell must be a list of strings (an argv prefix such as ["/bin/bash", '
            f'"-c"]), not {value!r}'
        )
    return tuple(value)


def _settings(cfg: Any) -> Settings:
    """The built-ins' settings from a `builtins` value (`ConfigError` on a bad one)."""
    if not isinstance(cfg, Mapping):
        return _build(None, None, None, (), DEFAULT_MAX_OUTPUT_BYTES)
    cap = cfg.get("max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES)
    if cap is None:
        cap = DEFAULT_MAX_OUTPUT_BYTES
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise ConfigError(
            f"builtins.max_output_bytes must be a whole number of bytes >= 0, not {cap!r}"
        )
    workspace = _directory(cfg, "workspace")
    base_dir = _directory(cfg, "base_dir")
    if workspace is not None and base_dir is not None:
        raise ConfigError("builtins.workspace and builtins.base_dir name the same thing: give one")
    confine = _flag(cfg, "confine_to_base_dir")
    if confine and workspace is None and base_dir is None:
        raise ConfigError("builtins.confine_to_base_dir is set but builtins.base_dir is empty")
    if workspace is not None:
        return _build(os.path.realpath(workspace), None, confine, _shell(cfg), cap)
    real = None if base_dir is None else os.path.realpath(base_dir)
    return _build(real, base_dir, bool(confine), _shell(cfg), cap)


@functools.lru_cache(maxsize=32)
def _build(
    base: str | None,
    label: str | None,
    confined: bool | None,
    shell: tuple[str, ...],
    max_output_bytes: int,
) -> Settings:
    # One `Settings` per distinct options, so `_tools` can cache on it.
    return Settings(base, max_output_bytes, confined=confined, shell=shell, base_label=label)


@functools.lru_cache(maxsize=32)
def _tools(settings: Settings) -> tuple[Tool, ...]:
    # Tools are stateless, so one set per distinct settings serves every toolkit (and keeps the
    # toolkit's compiled argument validators across builds); `_build` hands out one `Settings`
    # per distinct options.
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
    """All ten built-ins in their fixed order, honouring the options (see the module doc)."""
    _check(cfg)
    return list(_tools(_settings(cfg)))


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


def builtin_shell(cfg: BuiltinsConfig | None = None) -> list[str]:
    """The command prefix `bash` runs a command with: `cfg`'s `shell` option, else
    `[bash or sh, "-c"]` — what `metadata["shell"]` of a bash result shows, space-joined.

    `cfg` is checked like `select_builtins` checks it.
    """
    select_builtins(cfg)  # the same error for a bad config
    return shell_argv(_settings(cfg))
