"""Path resolution for the file tools: relative to the workspace (and confined to it) or the cwd."""

from __future__ import annotations

import os

from toolnexus.builtins._common import Settings, ToolError


def resolve(settings: Settings, raw: str) -> str:
    """The absolute path a tool argument names.

    With a workspace, relative paths start there and the fully resolved real path (`..`,
    symlinks, absolute paths) must stay inside it, else `path outside the workspace: <raw>`.
    Blocking (it may `lstat` every component): call it from a worker thread.
    """
    workspace = settings.workspace
    if workspace is None:
        return os.path.abspath(raw)
    real = os.path.realpath(os.path.join(workspace, raw))
    if real != workspace and not real.startswith(workspace.rstrip(os.sep) + os.sep):
        raise ToolError(f"path outside the workspace: {raw}")
    return real


def base_dir(settings: Settings) -> str:
    """Where relative paths start and commands run: the workspace, else the process cwd."""
    return settings.workspace if settings.workspace is not None else os.getcwd()


def start_dir(settings: Settings, raw: str | None) -> str:
    """Where a search or command starts: `raw` resolved (and confined), else `base_dir`."""
    return resolve(settings, raw) if raw else base_dir(settings)


def os_reason(exc: OSError, path: str) -> str:
    """A short, model-readable reason for a failed file operation on `path`."""
    if isinstance(exc, FileNotFoundError):
        return f"file not found: {path}"
    if isinstance(exc, IsADirectoryError):
        return f"is a directory: {path}"
    if isinstance(exc, NotADirectoryError):
        return f"not a directory: {path}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {path}"
    return f"{exc.strerror or type(exc).__name__}: {path}"
