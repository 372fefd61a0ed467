"""The repository tests itself: no test, script or build file reaches for data outside it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECKED = ("tests", "src", "bench", "tools", "examples", ".ci", "Makefile", "pyproject.toml")
SKIPPED_DIRS = {"__pycache__", "node_modules", "results"}
# The sibling data folder by relative path, its fixtures subfolder, or a search for it among the
# ancestors. Spelled from parts so that this guard does not match itself in other scanners.
_DATA = "sha" + "red"
OUTSIDE = re.compile(rf"\.\./{_DATA}|{_DATA}/fixtures|_find_{_DATA}|\"{_DATA}\"\s*/\s*\"fixtures\"")


def _files() -> list[Path]:
    found: list[Path] = []
    for name in CHECKED:
        top = REPO / name
        if top.is_file():
            found.append(top)
            continue
        for path in top.rglob("*"):
            if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(REPO).parts):
                found.append(path)
    return found


def test_no_file_reads_data_from_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in _files()
        if path != this and path.suffix not in {".png", ".pyc"}
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert offenders == []


def test_test_media_lives_in_the_repository() -> None:
    from support.media import FIXTURE_PNG, MEDIA_DIR

    assert MEDIA_DIR.is_relative_to(REPO / "tests" / "fixtures")
    assert FIXTURE_PNG.read_bytes().startswith(b"\x89PNG")
