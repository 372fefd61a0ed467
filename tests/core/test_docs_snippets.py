"""The Python snippets of the README's quick start and of docs/tools.md run as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Runs the blocks in order in one namespace: a quick start builds on its earlier blocks.
RUNNER = textwrap.dedent(
    """
    import json, sys, traceback
    name, blocks = json.load(sys.stdin)
    namespace = {"__name__": "__main__"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{name} block {i + 1}", "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            sys.exit(f"{name} block {i + 1} failed")
    """
)


def python_blocks(doc: str) -> list[str]:
    text = (REPO / doc).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.parametrize(
    ("doc", "minimum"),
    [
        # The README's last example talks to a real provider with real files: not offline.
        ("README.md", 4),
        ("docs/tools.md", 8),
        ("docs/content.md", 2),
    ],
)
def test_every_offline_snippet_runs(doc: str, minimum: int, tmp_path: Path) -> None:
    blocks = [b for b in python_blocks(doc) if "create_client(" not in b]
    assert len(blocks) >= minimum
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps([doc, blocks]),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
