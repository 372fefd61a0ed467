"""The process's verified TLS context, shared by every HTTP client the library makes."""

from __future__ import annotations

import functools
import ssl


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One verified TLS context per process: building one costs tens of milliseconds."""
    import httpx2

    return httpx2.create_ssl_context()
