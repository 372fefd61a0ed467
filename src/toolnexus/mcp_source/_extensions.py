"""The MCP extensions (SEP-2133) toolnexus speaks as a client, and what it advertises of them.

Skills (`io.modelcontextprotocol/skills`): a server's skills join the toolkit's
(`_skills.py`). Apps (`io.modelcontextprotocol/ui`): a tool's `_meta.ui.resourceUri` names a
`ui://` resource that toolnexus keeps on the tool (`_apps.py` reads it), hands its host in a
`ui` stream event, and serves on through its gateway; the host renders it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "APPS_EXTENSION",
    "APP_MIME_TYPE",
    "SKILLS_EXTENSION",
    "client_extensions",
    "declares",
]

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
APPS_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"


def client_extensions() -> dict[str, dict[str, Any]]:
    """`ClientCapabilities.extensions` of a toolnexus session (a fresh copy each time)."""
    return {SKILLS_EXTENSION: {}, APPS_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}


def declares(capabilities: Mapping[str, Any] | None, extension: str) -> bool:
    """Whether a server's capabilities (wire keys) declare `extension`."""
    extensions = (capabilities or {}).get("extensions")
    return isinstance(extensions, Mapping) and extension in extensions
