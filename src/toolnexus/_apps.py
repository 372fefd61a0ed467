"""MCP Apps (`io.modelcontextprotocol/ui`): the `ui://` resource a tool's metadata names.

Plumbing, so the client loop (its `ui` stream event) and the MCP source read it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["for_the_model", "ui_resource_uri"]


def ui_resource_uri(metadata: Mapping[str, Any] | None) -> str | None:
    """The `ui://` resource a tool's metadata names (`_meta.ui.resourceUri`, or the earlier
    flat `_meta["ui/resourceUri"]`), else `None`."""
    meta = (metadata or {}).get("_meta")
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, Mapping) else meta.get("ui/resourceUri")
    return uri if isinstance(uri, str) and uri.startswith("ui://") else None


def for_the_model(metadata: Mapping[str, Any] | None) -> bool:
    """Whether a tool is offered to the model: unless its `_meta.ui.visibility` (a list of
    `"model"` and `"app"`) leaves `"model"` out, as an app-only tool does (the host hides it
    from the model; the app still calls it). No visibility, or one that is not a list of
    strings, means both audiences, the spec's default."""
    meta = (metadata or {}).get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    if not isinstance(visibility, list) or not all(isinstance(v, str) for v in visibility):
        return True
    return "model" in visibility
