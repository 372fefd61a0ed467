"""Every Python snippet in docs/tools.md runs as written (in a fresh interpreter)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "tools.md"

RUNNER = textwrap.dedent(
    """
    import json, sys, traceback
    blocks = json.load(sys.stdin)
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"docs/tools.md block {i + 1}", "exec"), {"__name__": "__main__"})
        except BaseException:
            traceback.print_exc()
            sys.exit(f"block {i + 1} failed")
    """
)


def test_every_snippet_runs(tmp_path: Path) -> None:
    import json

    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 8
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(blocks),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
