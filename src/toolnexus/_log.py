"""The one `toolnexus` logger; every warning goes through `warn` with the contract's prefix."""

from __future__ import annotations

import logging

from toolnexus._otel import TraceIds

logger = logging.getLogger("toolnexus")
logger.addFilter(TraceIds())


def warn(message: str) -> None:
    """Log `[toolnexus] <message>` at WARNING. Never pass a secret value here."""
    logger.warning("[toolnexus] %s", message)
