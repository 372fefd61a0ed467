"""The built wheel carries the demo's package data: `toolnexus demo` runs from a fresh install."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

import mcp
from support.cli_runner import HANG_GUARD, REPO, clean_env

DATA_FILES = (
    "toolnexus/py.typed",
    "toolnexus/_demo/server.py",
    "toolnexus/_demo/model.py",
    "toolnexus/_demo/skills/hello-world/SKILL.md",
    "toolnexus/_demo/skills/hello-world/scripts/greet.sh",
)


def _run(*cmd: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(c) for c in cmd],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=clean_env(),
        timeout=HANG_GUARD * 3,
    )
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.slow
def test_wheel_installs_and_runs_the_demo(tmp_path: Path) -> None:
    """Build the wheel, install it into a fresh virtualenv, run `toolnexus demo` from there.

    Installing the wheel's dependencies from the index into the fresh environment takes 70 s or
    more on this machine (and needs the network), so the wheel goes in with `--no-deps` and one
    `.pth` line makes the dependencies already installed for the tests importable. A `.pth` line
    only appends that folder to `sys.path` (the folder's own `.pth` files, such as the project's
    editable install, are not processed), so `toolnexus` itself can only come from the wheel —
    asserted below — and every data file the demo reads must be inside it.
    """
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", REPO, "-w", dist)
    (wheel,) = dist.glob("toolnexus-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(DATA_FILES) <= names

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel)
    purelib_of = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = Path(_run(python, "-c", purelib_of).stdout.strip())
    dependency_dirs = {Path(mcp.__file__).parent.parent, Path(yaml.__file__).parent.parent}
    (purelib / "zz_test_dependencies.pth").write_text(
        "".join(f"{d}\n" for d in sorted(dependency_dirs)), encoding="utf-8"
    )
    where = _run(python, "-c", "import toolnexus; print(toolnexus.__file__)", cwd=tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(purelib)

    demo = _run(venv / "bin" / "toolnexus", "demo", cwd=tmp_path)
    installed_skill = purelib / "toolnexus" / "_demo" / "skills" / "hello-world"
    assert f'→ read [builtin] {{"path":"{installed_skill}/scripts/greet.sh"}}' in demo.stdout
    assert "← bash: Hello, Ada! (from the hello-world skill)" in demo.stdout
    assert '← demo_add: {\n      "sum": 42' in demo.stdout
    assert "5 tool calls from 4 sources (builtin, mcp, native, skill)" in demo.stdout
