"""The `grep` search itself, run in a child process the tool kills on a time limit or cancel.

Python's `re` backtracks and holds the interpreter lock while it matches: a catastrophic
pattern would freeze the host's event loop and outlive any timeout. Run as a script
(`python -E -s -S _grep_scan.py`, stdlib only, so it starts in milliseconds), it reads one job
as JSON on stdin and writes each matching `file:line:text` as a JSON string line on stdout.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Iterator

try:
    from toolnexus.builtin._glob import compile_glob, walk
except ImportError:  # run as a script: the package is not importable, its directory is on the path
    from _glob import compile_glob, walk  # type: ignore[import-not-found,no-redef]

# Files whose first bytes hold a NUL are binary: grep skips them.
_SNIFF = 8192
# Files up to this size are decoded at once; bigger ones are streamed line by line.
_WHOLE_FILE = 16 * 1024 * 1024


# Constructs whose meaning changes when a line is searched inside the whole text.
_LINE_SENSITIVE = ("\\A", "\\Z", "\\z", "(?<", "(?=", "(?!")


def whole_text_filter(pattern: str) -> re.Pattern[str] | None:
    """A regex that matches a file's whole text whenever `pattern` matches one of its lines
    (so files without a match are skipped in one search), or `None` when none can be built."""
    if any(token in pattern for token in _LINE_SENSITIVE):
        return None
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error:
        return None


def _lines(pieces: Iterable[str]) -> Iterator[str]:
    """Lines from the pieces of a `\n` split: a final `\r` dropped, no line after a final `\n`."""
    previous: str | None = None
    for piece in pieces:
        if previous is not None:
            yield previous.removesuffix("\r")
        previous = piece
    if previous:
        yield previous.removesuffix("\r")


def _grep_file(
    path: str,
    regex: re.Pattern[str],
    prefilter: re.Pattern[str] | None,
    display: str,
    out: list[str],
    limit: int,
) -> None:
    try:
        with open(path, "rb") as fh:
            if b"\0" in fh.read(_SNIFF):
                return  # binary
            fh.seek(0)
            pieces: Iterable[str]
            if os.fstat(fh.fileno()).st_size <= _WHOLE_FILE:
                text = fh.read().decode("utf-8", "replace")
                if "\r" in text:  # lines lose a final "\r": so must the text the filter sees
                    text = text.replace("\r\n", "\n")
                if prefilter is not None and prefilter.search(text) is None:
                    return
                pieces = text.split("\n")
            else:  # stream big files
                pieces = (raw.decode("utf-8", "replace").removesuffix("\n") for raw in fh)
            for number, line in enumerate(_lines(pieces), start=1):
                if regex.search(line):
                    out.append(f"{display}:{number}:{line}")
                    if len(out) >= limit:
                        return
    except (OSError, ValueError):
        return  # unreadable files are skipped


def search(root: str, pattern: str, include: str | None, limit: int) -> list[str]:
    """Matching lines under `root` (a directory or one file), at most `limit`, each naming its
    file relative to `root`, `/`-separated (as `glob` does); a single file by its name."""
    regex = re.compile(pattern)
    prefilter = whole_text_filter(pattern)
    matches_include = compile_glob(include) if include else None
    out: list[str] = []
    if not os.path.isdir(root):  # a single file
        name = os.path.basename(root)
        if matches_include is None or matches_include(name):
            _grep_file(root, regex, prefilter, name, out, limit)
        return out
    for entry, rel in walk(root, lambda: False):
        if matches_include is not None and not matches_include(rel):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue  # symlinks, sockets, fifos...
        except OSError:
            continue
        _grep_file(entry.path, regex, prefilter, rel, out, limit)
        if len(out) >= limit:
            break
    return out


def main() -> None:
    job = json.loads(sys.stdin.buffer.read())
    lines = search(job["root"], job["pattern"], job["include"], job["limit"])
    out = sys.stdout
    for line in lines:
        out.write(json.dumps(line, ensure_ascii=True))
        out.write("\n")
    out.flush()


if __name__ == "__main__":
    main()
