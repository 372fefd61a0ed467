"""Incremental server-sent-events decoding: bytes in, `(event, data)` pairs out."""

from __future__ import annotations

import codecs

__all__ = ["MAX_EVENT_CHARS", "SSEDecoder"]

# One event (its lines together) may hold this many characters; a stream that sends more
# without an event end is refused instead of held.
MAX_EVENT_CHARS = 16 * 1024 * 1024


class _EventTooLarge(ValueError):
    """A stream event (or one line of it) is over the decoder's limit (the client reports it as
    a `ProviderError`)."""


class SSEDecoder:
    """Feed raw body chunks; get every complete event as `(event name, data)`.

    Handles `\\n`, `\\r\\n` and `\\r` line ends, multi-line `data:`, comments and UTF-8 split
    across chunks. `event` is `""` when the event has no `event:` field. An event over
    `max_event` characters raises a `ValueError`; a long line costs linear time.
    """

    __slots__ = (
        "_data",
        "_data_size",
        "_decoder",
        "_event",
        "_max",
        "_pending_cr",
        "_tail",
        "_tail_size",
    )

    def __init__(self, max_event: int = MAX_EVENT_CHARS) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail: list[str] = []
        self._tail_size = 0
        self._pending_cr = False
        self._event = ""
        self._data: list[str] = []
        self._data_size = 0
        self._max = max_event

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]  # the "\n" of a "\r\n" split across chunks
        self._pending_cr = text.endswith("\r")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:  # the middle of a long line: keep the piece, join once
            self._tail.append(text)
            self._tail_size += len(text)
            self._check(self._tail_size + self._data_size)
            return []
        lines = text.split("\n")
        if self._tail:
            lines[0] = "".join(self._tail) + lines[0]
        last = lines.pop()
        self._tail, self._tail_size = ([last], len(last)) if last else ([], 0)
        out: list[tuple[str, str]] = []
        for line in lines:
            self._line(line, out)
        self._check(self._tail_size + self._data_size)
        return out

    def flush(self) -> list[tuple[str, str]]:
        """Events still buffered when the body ended without a final blank line."""
        out: list[tuple[str, str]] = []
        tail = "".join(self._tail) + self._decoder.decode(b"", final=True)
        self._tail, self._tail_size = [], 0
        if tail:
            self._line(tail, out)
        self._line("", out)
        return out

    def _check(self, size: int) -> None:
        if size > self._max:
            raise _EventTooLarge(f"a stream event is over {self._max} characters")

    def _line(self, line: str, out: list[tuple[str, str]]) -> None:
        if not line:
            if self._data:
                out.append((self._event, "\n".join(self._data)))
            self._event = ""
            self._data = []
            self._data_size = 0
            return
        if line[0] == ":":
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._data_size += len(value)
            self._check(self._data_size)
        elif name == "event":
            self._event = value
