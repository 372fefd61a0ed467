"""How the command shows a run: tool calls and results as they happen, then the answer."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from toolnexus._json import to_compact_json

__all__ = ["Printer", "preview"]

_PREVIEW_WIDTH = 110


def _supports(stream: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _wants_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def preview(output: str, lines: int, width: int = _PREVIEW_WIDTH) -> list[str]:
    """The first `lines` non-blank lines of `output`, each cut to `width`, and how many are left."""
    all_lines = [ln for ln in output.splitlines() if ln.strip()] or [""]
    shown = [ln if len(ln) <= width else ln[: width - 1] + "…" for ln in all_lines[:lines]]
    rest = len(all_lines) - len(shown)
    if rest > 0:
        shown.append(f"… ({rest} more line{'s' if rest != 1 else ''})")
    return shown


class Printer:
    """Renders run events: the answer text to `out`, tool activity to `err` (so `out` pipes clean).

    `result_lines` is how many lines of each tool result are shown.
    """

    def __init__(
        self,
        out: TextIO | None = None,
        err: TextIO | None = None,
        *,
        result_lines: int = 3,
    ) -> None:
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.result_lines = result_lines
        fancy = _supports(self.err, "→←✗…")
        self.call_mark, self.ok_mark, self.error_mark = (
            ("→", "←", "✗") if fancy else ("->", "<-", "x")
        )
        self._color = _wants_color(self.err)
        self._mid_line = False  # answer text printed without its final newline yet

    # -- styling ------------------------------------------------------------------------------

    def _style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self._color else text

    def dim(self, text: str) -> str:
        return self._style(text, "2")

    def bold(self, text: str) -> str:
        return self._style(text, "1")

    def red(self, text: str) -> str:
        return self._style(text, "31")

    def cyan(self, text: str) -> str:
        return self._style(text, "36")

    # -- events ---------------------------------------------------------------------------------

    def _end_text(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False

    def note(self, text: str) -> None:
        """A line of commentary on stderr."""
        self._end_text()
        print(text, file=self.err, flush=True)

    def text(self, delta: str) -> None:
        """A piece of the answer, printed as it streams."""
        if not delta:
            return
        self.out.write(delta)
        self.out.flush()
        self._mid_line = not delta.endswith("\n")

    def end_answer(self) -> None:
        self._end_text()

    def tool_call(self, name: str, source: str | None, args: Any) -> None:
        self._end_text()
        arguments = to_compact_json(args if args is not None else {})
        if len(arguments) > _PREVIEW_WIDTH * 2:
            arguments = arguments[: _PREVIEW_WIDTH * 2 - 1] + "…"
        where = self.dim(f"[{source or 'unknown'}]")
        print(f"  {self.cyan(self.call_mark)} {self.bold(name)} {where} {arguments}", file=self.err)
        self.err.flush()

    def tool_result(self, name: str, output: str, is_error: bool) -> None:
        self._end_text()
        lines = preview(output, self.result_lines)
        if is_error:
            head = f"  {self.red(self.error_mark)} {name} failed: "
            body = [self.red(ln) for ln in lines]
        else:
            head = f"  {self.dim(self.ok_mark)} {name}: "
            body = [self.dim(ln) for ln in lines]
        pad = " " * (len(self.ok_mark) + 3)
        print(head + body[0], file=self.err)
        for line in body[1:]:
            print(pad + line, file=self.err)
        self.err.flush()
