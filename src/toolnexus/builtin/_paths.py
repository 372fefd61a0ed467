"""Path resolution for the file tools: relative to the base directory (confined to it when asked)
or the cwd."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from toolnexus.builtin._common import Settings, ToolError


def resolve(settings: Settings, raw: str) -> str:
    """The absolute path a tool argument names.

    Relative paths start at the base directory (else the cwd). When confined, the fully
    resolved real path (`..`, symlinks, absolute paths) must stay inside the base, else the
    call is refused with `Settings.outside`.
    Blocking (it may `lstat` every component): call it from a worker thread.
    """
    base = settings.base
    if base is None:
        return os.path.abspath(raw)
    if not settings.confined:
        return os.path.abspath(os.path.join(base, raw))
    real = os.path.realpath(os.path.join(base, raw))
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        raise ToolError(settings.outside(raw))
    return real


def open_file(settings: Settings, path: str, raw: str, *, write: bool = False) -> BinaryIO:
    """Open `path` (from `resolve`) for reading, or for writing (created, then truncated).

    Only regular files: a FIFO, a device or a socket is refused before anything waits on it.
    When confined, a file with more than one hard link is refused too: another of its names
    may lie outside the base directory, which the path check cannot see.
    Raises `OSError` (for `os_reason`) or `ToolError`.
    """
    flags = (os.O_WRONLY | os.O_CREAT) if write else os.O_RDONLY
    # Non-blocking, so opening a FIFO never waits for a writer; cleared once it is known regular.
    fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"not a regular file: {raw}")
        if settings.confined and info.st_nlink > 1:
            raise ToolError(
                f"refused: {raw} has {info.st_nlink} hard links (another may lie outside the "
                "base directory)"
            )
        os.set_blocking(fd, True)
        if write:
            os.ftruncate(fd, 0)
        return os.fdopen(fd, "wb" if write else "rb")
    except BaseException:
        os.close(fd)
        raise


def base_dir(settings: Settings) -> str:
    """Where relative paths start and commands run: the base directory, else the process cwd."""
    return settings.base if settings.base is not None else os.getcwd()


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
