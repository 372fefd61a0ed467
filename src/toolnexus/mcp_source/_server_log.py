"""A server's `notifications/message` as records on the `toolnexus` logger, rate-limited."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from toolnexus._json import to_compact_json
from toolnexus._log import logger, warn

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
_MAX_TEXT = 2000
_PER_SECOND = 100


class ServerLog:
    """Turns one server's log notifications into log records (at most 100 per second)."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._window = 0.0
        self._count = 0
        self._dropped = 0

    def emit(self, level: str, data: Any, logger_name: str | None) -> None:
        now = time.monotonic()
        if now - self._window >= 1.0:
            self._tell_dropped()
            self._window, self._count = now, 0
        if self._count >= _PER_SECOND:
            if not self._dropped:  # the first one dropped: tell how many when the second ends
                asyncio.get_running_loop().call_later(self._window + 1.0 - now, self._tell_dropped)
            self._dropped += 1
            return
        self._count += 1
        text = data if isinstance(data, str) else to_compact_json(data)
        if len(text) > _MAX_TEXT:
            text = text[:_MAX_TEXT] + "…"
        where = f" ({logger_name})" if logger_name else ""
        logger.log(
            _LEVELS.get(level, logging.INFO),
            '[toolnexus] MCP server "%s"%s: %s',
            self._server,
            where,
            text,
            extra={"mcp_server": self._server, "mcp_logger": logger_name, "mcp_level": level},
        )

    def _tell_dropped(self) -> None:
        if self._dropped:
            warn(f'MCP server "{self._server}" logs too fast; dropped {self._dropped} messages')
            self._dropped = 0
