"""A small docstring reader: the description section and per-parameter text.

Understands the three common styles — Google (`Args:`), NumPy (`Parameters` over a dash rule)
and reST (`:param name: text`). Text is whitespace-normalised (runs of whitespace become one
space) and trimmed, so the model sees it on one line whatever the source indentation.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["Docstring", "parse_docstring"]

# Google / NumPy section titles that end the description.
_PARAM_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "kwargs",
        "other parameters",
    }
)
_OTHER_SECTIONS = frozenset(
    {
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "exceptions",
        "examples",
        "example",
    }
)
_SECTIONS = _PARAM_SECTIONS | _OTHER_SECTIONS

_GOOGLE_HEADER = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_REST_FIELD = re.compile(
    r"^\s*:(param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?|except|"
    r"exception|yields?|ytype|var|ivar|cvar)\b"
)
_REST_PARAM = re.compile(
    r"^\s*:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*?\s+)?(\*{0,2}\w+)\s*:(.*)$"
)
_GOOGLE_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:(.*)$")
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$")


@dataclass(frozen=True, slots=True)
class Docstring:
    """A parsed docstring: the description section and parameter name → description."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _section_at(lines: list[str], i: int) -> tuple[str, str] | None:
    """`(style, title)` when a section starts at line `i` (title lower-cased), else `None`."""
    line = lines[i]
    if _REST_FIELD.match(line):
        return "rest", ""
    title = line.strip().lower()
    if title in _SECTIONS and i + 1 < len(lines) and _NUMPY_RULE.match(lines[i + 1]):
        return "numpy", title
    m = _GOOGLE_HEADER.match(line)
    if m and m.group(1).strip().lower() in _SECTIONS:
        return "google", m.group(1).strip().lower()
    return None


def _block(lines: list[str], start: int, deeper_than: int) -> tuple[list[str], int]:
    """Lines from `start` while they are blank or indented more than `deeper_than`."""
    out: list[str] = []
    i = start
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > deeper_than):
        out.append(lines[i])
        i += 1
    return out, i


def _entries(block: list[str], entry: re.Pattern[str]) -> dict[str, str]:
    """Entries at the block's base indent; deeper lines continue the previous entry."""
    body = [line for line in block if line.strip()]
    if not body:
        return {}
    base = min(_indent(line) for line in body)
    out: dict[str, str] = {}
    names: list[str] = []
    for line in block:
        if not line.strip():
            continue
        if _indent(line) == base:
            m = entry.match(line.strip())
            if m is None:
                names = []
                continue
            names = [n.strip().lstrip("*") for n in m.group(1).split(",")]
            first = m.group(2) if m.lastindex and m.lastindex >= 2 else None
            for name in names:
                out[name] = first or ""
        else:
            for name in names:
                out[name] = f"{out[name]} {line.strip()}"
    return {name: _normalise(text) for name, text in out.items()}


def parse_docstring(doc: str | None) -> Docstring:
    """Split a docstring into its description and parameter descriptions."""
    if not doc or not doc.strip():
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    description_end = len(lines)
    params: dict[str, str] = {}
    i = 0
    while i < len(lines):
        found = _section_at(lines, i)
        if found is None:
            i += 1
            continue
        description_end = min(description_end, i)
        style, title = found
        if style == "rest":
            m = _REST_PARAM.match(lines[i])
            block, _ = _block(lines, i + 1, _indent(lines[i]))
            # a continuation line never starts a new field
            cont: list[str] = []
            for line in block:
                if _REST_FIELD.match(line):
                    break
                cont.append(line)
            if m is not None:
                text = " ".join([m.group(2), *cont])
                params.setdefault(m.group(1).lstrip("*"), _normalise(text))
            i += 1 + len(cont)
            continue
        if style == "numpy":
            start = i + 2
            end = start
            while end < len(lines) and _section_at(lines, end) is None:
                end += 1
            if title in _PARAM_SECTIONS:
                for name, text in _entries(lines[start:end], _NUMPY_ENTRY).items():
                    params.setdefault(name, text)
            i = end
            continue
        block, nxt = _block(lines, i + 1, _indent(lines[i]))
        if title in _PARAM_SECTIONS:
            for name, text in _entries(block, _GOOGLE_ENTRY).items():
                params.setdefault(name, text)
        i = nxt
    description = _normalise("\n".join(lines[:description_end]))
    return Docstring(description=description, params=params)
