"""HTTP tools under an older module name: `toolnexus.http` is their home.

Kept so that code importing `toolnexus.http_tools` keeps working; it hands out the same objects.
"""

from __future__ import annotations

from toolnexus.http import DEFAULT_TIMEOUT, http_tool

__all__ = ["DEFAULT_TIMEOUT", "http_tool"]
