"""MCP Apps (`io.modelcontextprotocol/ui`): the `ui://` resource a tool's metadata names.

Plumbing, so the client loop (its `ui` stream event) and the MCP source read it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ui_resource_uri"]


def ui_resource_uri(metadata: Mapping[str, Any] | None) -> str | None:
    """The `ui://` resource a tool's metadata names (`_meta.ui.resourceUri`, or the earlier
    flat `_meta["ui/resourceUri"]`), else `None`."""
    meta = (metadata or {}).get("_meta")
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, Mapping) else meta.get("ui/resourceUri")
    return uri if isinstance(uri, str) and uri.startswith("ui://") else None
