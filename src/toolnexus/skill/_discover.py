"""File-system work of the skill source: find `SKILL.md` files, parse them, sample siblings.

Everything here blocks on the disk; async callers run it in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from toolnexus._log import warn
from toolnexus.skill._frontmatter import MalformedFrontmatter, parse_fields, split_frontmatter
from toolnexus.skill._types import SkillInfo, SkillSkip

SKILL_FILE = "SKILL.md"
SKIPPED_DIRS = frozenset({"node_modules", ".git"})


def _by_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _sorted_entries(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=_by_name)
    except OSError:
        return []  # an unlistable directory contributes nothing


def _child_dir_real(entry: os.DirEntry[str], parent_real: str) -> str | None:
    """The real path of `entry` when it is (or links to) a directory to walk, else `None`."""
    if entry.name in SKIPPED_DIRS:
        return None
    try:
        if not entry.is_dir():  # follows links; free via d_type for plain entries
            return None
        if entry.is_symlink():
            return os.path.realpath(entry.path)
    except OSError:
        return None
    # A plain directory's real path is its parent's real path plus its name: no syscall.
    return os.path.join(parent_real, entry.name)


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def find_skill_files(root: str) -> Iterator[str]:
    """Every `SKILL.md` under `root`, depth first, entries sorted by name, links followed.

    Each directory is entered at most once (by real path), which breaks symlink cycles.
    """
    entered: set[str] = set()
    # Stack items: (path, real path) for a directory, (path, None) for a SKILL.md file.
    stack: list[tuple[str, str | None]] = [(root, os.path.realpath(root))]
    while stack:
        path, real = stack.pop()
        if real is None:
            yield path
            continue
        if real in entered:
            continue
        entered.add(real)
        children: list[tuple[str, str | None]] = []
        for entry in _sorted_entries(path):
            if entry.name == SKILL_FILE and _is_file(entry):
                children.append((entry.path, None))
                continue
            child_real = _child_dir_real(entry, real)
            if child_real is not None and child_real not in entered:
                children.append((entry.path, child_real))
        stack.extend(reversed(children))


_CHUNK = 1 << 16


def _read_bytes(path: str) -> bytes:
    """The file's bytes via bare `os.read`: a third cheaper than `open()` for small files."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunk = os.read(fd, _CHUNK)
        if len(chunk) < _CHUNK:  # a short read of a regular file is its end
            return chunk
        chunks = [chunk]
        while chunk:
            chunk = os.read(fd, _CHUNK)
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_skill(location: str) -> SkillInfo | SkillSkip:
    """Parse one `SKILL.md` into a `SkillInfo`, or say why it is skipped."""
    try:
        text = _read_bytes(location).decode("utf-8-sig")  # a BOM would hide the opening fence
    except (OSError, UnicodeDecodeError) as exc:
        return SkillSkip(location, "unreadable", _reason(exc))
    try:
        block, body = split_frontmatter(text)
        fields = parse_fields(block) if block is not None else {}
    except MalformedFrontmatter as exc:
        return SkillSkip(location, "malformed-frontmatter", str(exc))
    name = fields.get("name", "")
    if not name:
        return SkillSkip(location, "missing-name", "the frontmatter has no name")
    return SkillInfo(
        name=name,
        description=fields.get("description"),
        location=location,
        content=body,
        directory=os.path.dirname(location),
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not valid UTF-8 (byte {exc.start})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _shallow_first(root: str) -> Callable[[str], tuple[int, str]]:
    def key(location: str) -> tuple[int, str]:
        relative = os.path.relpath(location, root)
        return relative.count(os.sep), relative

    return key


def discover(roots: list[str]) -> list[SkillInfo | SkillSkip]:
    """Parse every `SKILL.md` under each root: in root order, then shallower paths first, in
    code point order within a depth (so of two skills with one name the shallower wins, as
    the published package and Claude Code have it)."""
    found: list[SkillInfo | SkillSkip] = []
    for given in roots:
        root = os.path.abspath(given)
        if not os.path.isdir(root):
            warn(f"skills dir not found: {root}")
            continue
        locations = sorted(find_skill_files(root), key=_shallow_first(root))
        found.extend(read_skill(location) for location in locations)
    return found


def _as_path_key(entry: os.DirEntry[str], is_dir: bool) -> str:
    # A directory sorts as `name/`, so a depth-first walk meets the relative paths in code
    # point order (`a-b.txt` before `a/x.txt`, as `-` < `/`).
    return entry.name + "/" if is_dir else entry.name


def sample_files(directory: str, cap: int) -> list[str]:
    """Up to `cap` regular files under `directory` (not `SKILL.md`), as absolute paths: the
    first `cap` by relative path in code point order (as published).

    Links followed, each real directory entered once, `node_modules`/`.git` skipped. The walk
    meets the paths in that order, so it stops at the cap instead of listing everything.
    """
    files: list[str] = []
    entered: set[str] = {os.path.realpath(directory)}
    # Stack items: (path, real path) for a directory to open, (path, None) for a file.
    stack: list[tuple[str, str | None]] = [(directory, os.path.realpath(directory))]
    while stack and len(files) < cap:
        path, real = stack.pop()
        if real is None:
            files.append(path)
            continue
        children: list[tuple[str, str, str | None]] = []
        for entry in _sorted_entries(path):
            child_real = _child_dir_real(entry, real)
            if child_real is not None:
                if child_real not in entered:
                    entered.add(child_real)
                    children.append((_as_path_key(entry, True), entry.path, child_real))
            elif entry.name != SKILL_FILE and _is_file(entry):
                children.append((_as_path_key(entry, False), entry.path, None))
        children.sort(key=lambda child: child[0])
        stack.extend((child_path, child_real) for _, child_path, child_real in reversed(children))
    return files
