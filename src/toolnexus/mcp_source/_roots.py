"""The roots a server is told about: from its config, the toolkit, or the built-in workspace."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RootInput = str | os.PathLike[str] | Mapping[str, str]


def as_root(value: RootInput) -> dict[str, str]:
    """A path, a `file://` URI or `{"uri", "name"}` as a wire root `{"uri", "name"}`."""
    if isinstance(value, Mapping):
        root = {"uri": str(value["uri"])}
        if value.get("name"):
            root["name"] = str(value["name"])
        return root
    text = os.fspath(value)
    if "://" in text:
        name = text.rstrip("/").rsplit("/", 1)[-1]
        return {"uri": text, "name": name} if name else {"uri": text}
    path = Path(text).expanduser().resolve()
    return {"uri": path.as_uri(), "name": path.name or str(path)}


def server_roots(
    configured: Sequence[Any] | bool | None,
    toolkit_roots: Sequence[RootInput] | None,
    workspace: str | os.PathLike[str] | None,
) -> list[dict[str, str]]:
    """The first that applies: the server's `roots` key (`false` = none), the toolkit's
    `roots=`, the built-in workspace, else none."""
    if configured is False:
        return []
    if configured is not None and configured is not True:
        return [as_root(r) for r in configured]
    if toolkit_roots is not None:
        return [as_root(r) for r in toolkit_roots]
    if workspace is not None:
        return [as_root(workspace)]
    return []
