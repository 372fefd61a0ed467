"""HTTP tools under the module name the published package uses (`toolnexus.http`).

The code lives in `toolnexus.http_tools`; this module hands out the same objects.
"""

from __future__ import annotations

from toolnexus.http_tools import DEFAULT_TIMEOUT, http_tool

__all__ = ["DEFAULT_TIMEOUT", "HTTP_DEFAULT_TIMEOUT", "http_tool"]

HTTP_DEFAULT_TIMEOUT = DEFAULT_TIMEOUT
"""`http_tool`'s default timeout in seconds, by the name the package root gives it."""
