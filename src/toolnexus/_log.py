"""The one `toolnexus` logger; every warning goes through `warn` with the contract's prefix."""

from __future__ import annotations

import logging

# `_otel` adds its trace-id filter to this logger when it loads (plumbing below the logger).
logger = logging.getLogger("toolnexus")


def warn(message: str) -> None:
    """Log `[toolnexus] <message>` at WARNING. Never pass a secret value here."""
    logger.warning("[toolnexus] %s", message)
