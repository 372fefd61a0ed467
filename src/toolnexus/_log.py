"""The one `toolnexus` logger; every warning goes through `warn` with the contract's prefix."""

from __future__ import annotations

import logging

# `_otel` adds its trace-id filter to this logger when it loads (plumbing below the logger).
logger = logging.getLogger("toolnexus")

# Set (via `extra=`) on INFO records that report progress a waiting user wants to see, such as
# an MCP server still starting: the CLI shows them without `-v`.
PROGRESS = "toolnexus_progress"


def warn(message: str) -> None:
    """Log `[toolnexus] <message>` at WARNING. Never pass a secret value here."""
    logger.warning("[toolnexus] %s", message)


def tool_raised(name: str, exc: BaseException) -> None:
    """Report a tool whose code raised: one WARNING naming the tool and the exception (type and
    message), its traceback at DEBUG. Known secrets in either read `[redacted]` (the record
    factory of `_secrets` rewrites every record)."""
    text = str(exc)
    shown = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    warn(f'tool "{name}" raised {shown}')
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("[toolnexus] traceback of tool %r", name, exc_info=exc)
