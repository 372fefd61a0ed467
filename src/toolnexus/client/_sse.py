"""Incremental server-sent-events decoding: bytes in, `(event, data)` pairs out."""

from __future__ import annotations

import codecs

__all__ = ["SSEDecoder"]


class SSEDecoder:
    """Feed raw body chunks; get every complete event as `(event name, data)`.

    Handles `\\n`, `\\r\\n` and `\\r` line ends, multi-line `data:`, comments and UTF-8 split
    across chunks. `event` is `""` when the event has no `event:` field.
    """

    __slots__ = ("_data", "_decoder", "_event", "_pending_cr", "_tail")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail = ""
        self._pending_cr = False
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]  # the "\n" of a "\r\n" split across chunks
        self._pending_cr = text.endswith("\r")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = (self._tail + text).split("\n")
        self._tail = lines.pop()
        out: list[tuple[str, str]] = []
        for line in lines:
            self._line(line, out)
        return out

    def flush(self) -> list[tuple[str, str]]:
        """Events still buffered when the body ended without a final blank line."""
        out: list[tuple[str, str]] = []
        tail = self._tail + self._decoder.decode(b"", final=True)
        self._tail = ""
        if tail:
            self._line(tail, out)
        self._line("", out)
        return out

    def _line(self, line: str, out: list[tuple[str, str]]) -> None:
        if not line:
            if self._data:
                out.append((self._event, "\n".join(self._data)))
            self._event = ""
            self._data = []
            return
        if line[0] == ":":
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
