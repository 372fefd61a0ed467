"""Glob patterns and the directory walk shared by `grep` (its `include`) and `glob`.

Glob rules: `*` any run without `/`, `**` any run including `/` (and `**/` also
matches no directory at all, so `**/*.py` finds top-level files too), `?` one non-`/` character;
a pattern without `/` is matched against the base name (a leading `./` anchors it at the
top instead). `[abc]`/`[!abc]` classes, `{a,b}`
alternatives and `\\x` escapes are supported as well; everything else is literal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator

SKIPPED_DIRS = frozenset({".git", "node_modules"})


def _translate(pattern: str, i: int, in_braces: bool) -> tuple[str, int]:
    """Regex source for `pattern[i:]` up to the end (or to a closing `}` / `,` in braces)."""
    out: list[str] = []
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                i += 2
                if pattern.startswith("/", i):
                    out.append("(?:.*/)?")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            negate = pattern.startswith(("[!", "[^"), i)
            start = i + 2 if negate else i + 1
            end = pattern.find("]", start)
            body = pattern[start:end] if end > start else ""
            if not body:  # no class after all: a literal "["
                out.append(re.escape(c))
            else:
                body = re.sub(r"([\\\[\]^])", r"\\\1", body)
                out.append(f"[^/{body}]" if negate else f"[{body}]")
                i = end
        elif c == "{":
            alternatives: list[str] = []
            j = i + 1
            while True:
                part, j = _translate(pattern, j, True)
                alternatives.append(part)
                if j >= n or pattern[j] == "}":
                    break
                j += 1  # past ","
            if j >= n:  # no closing brace: literal
                out.append(re.escape(c))
            else:
                out.append("(?:" + "|".join(alternatives) + ")")
                i = j
        elif in_braces and c in ",}":
            return "".join(out), i
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out), i


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A predicate over `/`-separated relative paths; compiled once per call of a tool."""
    anchored = "/" in pattern  # `./*.py` means the top level only, not every `*.py`
    while pattern.startswith("./"):
        pattern = pattern[2:]
    source, _ = _translate(pattern, 0, False)
    match = re.compile(source, re.DOTALL).fullmatch
    if anchored:
        return lambda rel: match(rel) is not None
    return lambda rel: match(rel.rpartition("/")[2]) is not None


def walk(root: str, stop: Callable[[], bool]) -> Iterator[tuple[os.DirEntry[str], str]]:
    """Every non-directory entry under `root` as `(entry, relative/posix/path)`, depth first in
    name order; `.git` and `node_modules` are skipped and symlinked directories not entered.
    Unreadable directories are skipped. Checks `stop()` between entries."""
    stack: list[tuple[Iterator[os.DirEntry[str]], str]] = []

    def push(path: str, prefix: str) -> None:
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        stack.append((iter(entries), prefix))

    push(root, "")
    while stack:
        if stop():
            return
        entries, prefix = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            if entry.name not in SKIPPED_DIRS:
                push(entry.path, f"{prefix}{entry.name}/")
            continue
        yield entry, prefix + entry.name
