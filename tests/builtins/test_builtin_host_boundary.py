"""The built-ins' host boundary under the published option names: `base_dir`,
`confine_to_base_dir`, `shell`; unknown option keys refused; `grep` paths; binary `read`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.builtin_tools import tools_for
from toolnexus.builtin import builtin_shell
from toolnexus.errors import ConfigError
from toolnexus.types import ToolContext

PATCH = "*** Begin Patch\n*** Add File: {path}\n+hi\n*** End Patch"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "base"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("hello world\n")
    return root


async def test_confined_base_dir_refuses_paths_outside_it(base: Path) -> None:
    tools = tools_for({"base_dir": str(base), "confine_to_base_dir": True})
    ctx = ToolContext()
    hostname = await tools["read"].execute({"path": "/etc/hostname"}, ctx)
    assert hostname.is_error
    assert hostname.output == f"read: /etc/hostname resolves outside baseDir {base}"
    written = await tools["write"].execute({"path": "../escape.txt", "content": "x"}, ctx)
    assert written.output == f"write: ../escape.txt resolves outside baseDir {base}"
    patched = await tools["apply_patch"].execute({"patchText": PATCH.format(path="../p.txt")}, ctx)
    assert patched.output == f"apply_patch: ../p.txt resolves outside baseDir {base}"
    globbed = await tools["glob"].execute({"pattern": "*", "path": "/etc"}, ctx)
    assert globbed.output == f"glob: /etc resolves outside baseDir {base}"
    assert not (base.parent / "escape.txt").exists()
    assert not (base.parent / "p.txt").exists()
    inside = await tools["write"].execute({"path": "in.txt", "content": "x"}, ctx)
    assert not inside.is_error
    assert (base / "in.txt").read_text() == "x"


async def test_base_dir_alone_is_where_paths_start_but_confines_nothing(base: Path) -> None:
    tools = tools_for({"base_dir": str(base)})
    ctx = ToolContext()
    read = await tools["read"].execute({"path": "sub/a.txt"}, ctx)
    assert read.output.startswith("hello world")
    patched = await tools["apply_patch"].execute({"patchText": PATCH.format(path="new.txt")}, ctx)
    assert not patched.is_error
    assert (base / "new.txt").read_text() == "hi"
    written = await tools["write"].execute({"path": "../escape.txt", "content": "x"}, ctx)
    assert not written.is_error  # opt-in, as published
    assert (base.parent / "escape.txt").read_text() == "x"
    ran = await tools["bash"].execute({"command": "pwd"}, ctx)
    assert ran.output == f"{os.path.realpath(base)}\n"


async def test_workspace_stays_confined_unless_turned_off(base: Path) -> None:
    confined = tools_for({"workspace": str(base)})
    refused = await confined["write"].execute({"path": "../w.txt", "content": "x"}, ToolContext())
    assert refused.output == "write: path outside the workspace: ../w.txt"
    free = tools_for({"workspace": str(base), "confine_to_base_dir": False})
    written = await free["write"].execute({"path": "../w.txt", "content": "x"}, ToolContext())
    assert not written.is_error
    assert (base.parent / "w.txt").exists()


@pytest.mark.parametrize(
    ("cfg", "words"),
    [
        ({"base_dirr": "/tmp"}, "builtins.base_dirr is not an option"),
        ({"confine_to_basedir": True}, "builtins.confine_to_basedir is not an option"),
        ({"disabled": True, "shel": ["sh"]}, "builtins.shel is not an option"),
        (
            {"confine_to_base_dir": True},
            "confine_to_base_dir is set but builtins.base_dir is empty",
        ),
        ({"shell": "/bin/sh"}, "builtins.shell must be a list of strings"),
        ({"base_dir": "/no/such/dir"}, "builtins.base_dir is not a directory"),
    ],
)
def test_bad_options_are_refused_by_name(cfg: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        tools_for(cfg)


async def test_shell_is_an_argv_prefix_used_verbatim(base: Path) -> None:
    sh = shutil.which("sh")
    assert sh is not None
    shell = ["env", "PROBE=1", sh, "-c"]
    tools = tools_for({"base_dir": str(base), "shell": shell})
    ran = await tools["bash"].execute({"command": 'echo "$PROBE"'}, ToolContext())
    assert ran.output == "1\n"
    assert ran.metadata == {"shell": f"env PROBE=1 {sh} -c", "exitCode": 0}
    assert builtin_shell({"shell": shell}) == shell


async def test_bash_results_name_the_shell_and_a_timeout_the_killed_tree() -> None:
    bash = tools_for(None)["bash"]
    shown = " ".join(builtin_shell())
    done = await bash.execute({"command": "exit 3"}, ToolContext())
    assert done.metadata == {"shell": shown, "exitCode": 3}
    slow = await bash.execute({"command": "sleep 30", "timeout": 100}, ToolContext())
    assert slow.is_error
    assert slow.metadata == {"shell": shown, "timedOut": True, "killedTree": True}


async def test_grep_prints_paths_relative_to_the_searched_path(base: Path) -> None:
    grep = tools_for(None)["grep"]
    for path in (str(base), str(base) + "/"):
        found = await grep.execute({"pattern": "hello", "path": path}, ToolContext())
        assert found.output == "sub/a.txt:1:hello world"
    inner = await grep.execute({"pattern": "hello", "path": str(base / "sub")}, ToolContext())
    assert inner.output == "a.txt:1:hello world"
    relative = tools_for({"base_dir": str(base)})["grep"]
    found = await relative.execute({"pattern": "hello", "path": "sub"}, ToolContext())
    assert found.output == "a.txt:1:hello world"


async def test_read_of_a_binary_file_is_an_error_naming_it(base: Path) -> None:
    (base / "blob.dat").write_bytes(b"ab\0cd")
    read = tools_for({"base_dir": str(base)})["read"]
    result = await read.execute({"path": "blob.dat"}, ToolContext())
    assert result.is_error
    assert result.output == "read: blob.dat is a binary file (it holds NUL bytes), not text"
