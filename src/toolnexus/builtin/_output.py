"""Output caps: cut at a byte budget on a UTF-8 boundary and say what was cut and how to get it."""

from __future__ import annotations

HINT_READ = "use offset/limit to read more"
HINT_BASH = "redirect the output to a file and read it with offset/limit"
HINT_SEARCH = "narrow the pattern or path, or lower limit"
HINT_WEB = "save the page to a file (bash: curl -o) and read it with offset/limit"

# A UTF-8 character is at most 4 bytes: keeping `cap + 3` bytes is enough to find a boundary.
_SLACK = 3


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def _boundary(data: bytes, cap: int) -> int:
    """The largest cut `<= cap` that does not split a UTF-8 character."""
    cut = min(cap, len(data))
    while cut > 0 and cut < len(data) and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut


def _truncated(head: bytes, total: int, cap: int, hint: str) -> str:
    cut = _boundary(head, cap)
    shown = head[:cut].decode("utf-8", "replace")
    sep = "" if not shown or shown.endswith("\n") else "\n"
    return f"{shown}{sep}[truncated: {human_size(cut)} of {human_size(total)} shown; {hint}]"


def cap_text(text: str, cap: int, hint: str) -> str:
    """`text` unchanged when it fits in `cap` bytes (or `cap` is 0), else its head plus a marker."""
    if cap <= 0 or len(text) * 4 <= cap:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= cap:
        return text
    return _truncated(data[: cap + _SLACK], len(data), cap, hint)


class CappedBuffer:
    """Collects streamed bytes, keeping only what a cap can show while counting the total."""

    __slots__ = ("_cap", "_keep", "_kept", "_parts", "total")

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._keep = cap + _SLACK if cap > 0 else -1
        self._parts: list[bytes] = []
        self._kept = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self._keep < 0:
            self._parts.append(chunk)
        elif self._kept < self._keep:
            part = chunk[: self._keep - self._kept]
            self._parts.append(part)
            self._kept += len(part)

    @property
    def full(self) -> bool:
        """True once nothing more will be kept (only counted)."""
        return 0 <= self._keep <= self._kept

    def text(self, hint: str) -> str:
        data = b"".join(self._parts)
        if self._cap <= 0 or self.total <= self._cap:
            return data.decode("utf-8", "replace")
        return _truncated(data, self.total, self._cap, hint)
