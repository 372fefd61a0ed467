"""`grep` and `glob` over real directory trees: walk rules, glob semantics, limits, caps."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.builtin_tools import tools_for
from toolnexus.builtin._glob import compile_glob
from toolnexus.builtin._grep_scan import whole_text_filter
from toolnexus.types import Tool, ToolContext


def build_tree(root: Path) -> None:
    files = {
        "a.py": "import os\nprint('hello')\n",
        "b.txt": "hello world\nbye\n",
        "src/main.py": "def main():\n    return 'hello'\n",
        "src/util/helpers.py": "HELLO = 1\nhello = 2\n",
        "src/util/data.json": '{"hello": true}\n',
        "docs/guide.md": "# Hello\nsay hello\n",
        ".git/config": "hello from git\n",
        "node_modules/pkg/index.js": "hello from npm\n",
        "src/node_modules/x.py": "hello nested npm\n",
        ".hidden.py": "hello hidden\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "bin.dat").write_bytes(b"hello\0binary\n")


@pytest.fixture
def tree(ws: Path) -> Path:
    build_tree(ws)
    return ws


# -- grep ----------------------------------------------------------------------------------------


async def test_grep_walks_in_name_order_skipping_git_and_node_modules(
    tree: Path, tools: dict[str, Tool]
) -> None:
    result = await tools["grep"].execute({"pattern": "hello"})
    assert result.output.split("\n") == [
        ".hidden.py:1:hello hidden",
        "a.py:2:print('hello')",
        "b.txt:1:hello world",
        "docs/guide.md:2:say hello",
        "src/main.py:2:    return 'hello'",
        'src/util/data.json:1:{"hello": true}',
        "src/util/helpers.py:2:hello = 2",
    ]
    assert result.metadata == {"count": 7}


async def test_grep_paths_are_relative_to_the_searched_path(
    tree: Path, tools: dict[str, Tool]
) -> None:
    result = await tools["grep"].execute({"pattern": "(?i)hello", "path": "src/util"})
    assert result.output == (
        'data.json:1:{"hello": true}\nhelpers.py:1:HELLO = 1\nhelpers.py:2:hello = 2'
    )
    absolute = await tools["grep"].execute({"pattern": "^def", "path": str(tree)})
    assert absolute.output == "src/main.py:1:def main():"


@pytest.mark.parametrize(
    ("include", "files"),
    [
        ("*.py", {".hidden.py", "a.py", "src/main.py", "src/util/helpers.py"}),
        ("src/*.py", {"src/main.py"}),
        ("src/**.py", {"src/main.py", "src/util/helpers.py"}),
        ("src/**/*.py", {"src/main.py", "src/util/helpers.py"}),
        ("**/*.json", {"src/util/data.json"}),
        ("?.py", {"a.py"}),
        ("*.{md,json}", {"docs/guide.md", "src/util/data.json"}),
        ("*.rs", set()),
    ],
)
async def test_grep_include(tree: Path, tools: dict[str, Tool], include: str, files: set) -> None:
    result = await tools["grep"].execute({"pattern": "hello", "include": include})
    found = {line.split(":", 1)[0] for line in result.output.split("\n") if line}
    assert found == files


async def test_grep_limit(tree: Path, tools: dict[str, Tool]) -> None:
    result = await tools["grep"].execute({"pattern": "hello", "limit": 2})
    assert result.output == ".hidden.py:1:hello hidden\na.py:2:print('hello')"
    assert result.metadata == {"count": 2}


async def test_grep_default_limit_is_100(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "many.txt").write_text("x\n" * 250)
    result = await tools["grep"].execute({"pattern": "x"})
    assert result.metadata == {"count": 100}
    assert result.output.split("\n")[-1] == "many.txt:100:x"


async def test_grep_no_match_and_errors(tree: Path, tools: dict[str, Tool]) -> None:
    none = await tools["grep"].execute({"pattern": "zzz-not-there"})
    assert (none.output, none.is_error, none.metadata) == ("", False, {"count": 0})
    bad = await tools["grep"].execute({"pattern": "("})
    assert bad.is_error
    assert bad.output.startswith("grep: invalid regex: missing ), unterminated subpattern")
    missing = await tools["grep"].execute({"pattern": "x", "path": "nope"})
    assert missing.output == "grep: path not found: nope"
    assert (await tools["grep"].execute({"pattern": ""})).output == "grep: pattern is required"


async def test_grep_a_single_file(tree: Path, tools: dict[str, Tool]) -> None:
    result = await tools["grep"].execute({"pattern": "bye", "path": "b.txt"})
    assert result.output == "b.txt:2:bye"


async def test_grep_does_not_follow_symlinks(ws: Path, tools: dict[str, Tool]) -> None:
    outside = ws.parent / "outside"
    (ws / "dirlink").symlink_to(outside)
    (ws / "filelink.txt").symlink_to(outside / "secret.txt")
    (ws / "own.txt").write_text("secret of my own\n")
    result = await tools["grep"].execute({"pattern": "secret"})
    assert result.output == "own.txt:1:secret of my own"


async def test_grep_crlf_lines(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    result = await tools["grep"].execute({"pattern": "two$"})
    assert result.output == "crlf.txt:2:two"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
async def test_grep_skips_unreadable_files(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "ok.txt").write_text("two\n")
    locked = ws / "locked.txt"
    locked.write_text("two\n")
    locked.chmod(0)
    try:
        result = await tools["grep"].execute({"pattern": "two"})
    finally:
        locked.chmod(0o644)
    assert result.output == "ok.txt:1:two"


async def test_grep_cap_marker(ws: Path) -> None:
    grep = tools_for({"workspace": str(ws), "max_output_bytes": 100})["grep"]
    (ws / "f.txt").write_text("match\n" * 50)
    result = await grep.execute({"pattern": "match"})
    assert result.output.endswith(
        "\n[truncated: 100 bytes of 740 bytes shown; narrow the pattern or path, or lower limit]"
    )
    assert result.metadata == {"count": 50}


# -- glob ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.py", [".hidden.py", "a.py", "src/main.py", "src/util/helpers.py"]),
        ("**/*.py", [".hidden.py", "a.py", "src/main.py", "src/util/helpers.py"]),
        ("src/**", ["src/main.py", "src/util/data.json", "src/util/helpers.py"]),
        ("src/*", ["src/main.py"]),
        ("src/*/*", ["src/util/data.json", "src/util/helpers.py"]),
        ("?.*", ["a.py", "b.txt"]),
        ("docs/guide.md", ["docs/guide.md"]),
        ("./docs/*.md", ["docs/guide.md"]),
        ("./*.py", [".hidden.py", "a.py"]),
        ("*.{txt,md}", ["b.txt", "docs/guide.md"]),
        ("[ab].*", ["a.py", "b.txt"]),
        ("[!ab]*.dat", []),
        ("*.dat", ["bin.dat"]),
        ("nothing*", []),
    ],
)
async def test_glob_patterns(
    tree: Path, tools: dict[str, Tool], pattern: str, expected: list
) -> None:
    result = await tools["glob"].execute({"pattern": pattern})
    assert result.output == "\n".join(expected)
    assert result.metadata == {"count": len(expected)}


async def test_glob_relative_to_path_sorted_and_limited(ws: Path, tools: dict[str, Tool]) -> None:
    for name in ("b/z.txt", "b/a.txt", "b/m/q.txt", "b/B.txt", "c.txt"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("")
    result = await tools["glob"].execute({"pattern": "**/*.txt", "path": "b"})
    assert result.output == "B.txt\na.txt\nm/q.txt\nz.txt"
    limited = await tools["glob"].execute({"pattern": "*.txt", "limit": 2})
    assert limited.output == "b/B.txt\nb/a.txt"
    assert limited.metadata == {"count": 2}


async def test_glob_default_limit_and_cap(ws: Path) -> None:
    for i in range(150):
        (ws / f"f{i:03}.txt").write_text("")
    glob = tools_for({"workspace": str(ws)})["glob"]
    result = await glob.execute({"pattern": "*.txt"})
    assert result.metadata == {"count": 100}
    assert result.output.split("\n")[-1] == "f099.txt"
    capped = tools_for({"workspace": str(ws), "max_output_bytes": 50})["glob"]
    out = (await capped.execute({"pattern": "*.txt"})).output
    assert out.startswith("f000.txt\nf001.txt\n")
    assert out.endswith(
        "[truncated: 50 bytes of 899 bytes shown; narrow the pattern or path, or lower limit]"
    )


async def test_glob_lists_symlinks_without_entering_them(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "dirlink").symlink_to(ws.parent / "outside")
    (ws / "real.txt").write_text("")
    result = await tools["glob"].execute({"pattern": "**"})
    assert result.output == "dirlink\nreal.txt"


async def test_glob_errors(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "f.txt").write_text("")
    assert (await tools["glob"].execute({"pattern": "*", "path": "f.txt"})).output == (
        "glob: not a directory: f.txt"
    )
    assert (await tools["glob"].execute({"pattern": "*", "path": "no"})).output == (
        "glob: path not found: no"
    )


async def test_search_stops_when_signalled(ws: Path, tools: dict[str, Tool]) -> None:
    for i in range(30):
        (ws / f"d{i}").mkdir()
        (ws / f"d{i}" / "f.txt").write_text("x\n")
    signal = asyncio.Event()
    signal.set()
    result = await tools["glob"].execute({"pattern": "**"}, ToolContext(signal=signal))
    assert result.metadata == {"count": 0}


async def test_search_runs_off_the_event_loop(ws: Path, tools: dict[str, Tool]) -> None:
    for i in range(200):
        (ws / f"f{i}.txt").write_text("needle\n" * 50)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.create_task(ticker())
    try:
        await asyncio.gather(
            tools["grep"].execute({"pattern": "needle", "limit": 100000}),
            tools["glob"].execute({"pattern": "**"}),
        )
    finally:
        ticking.cancel()
    assert ticks > 1


# -- the glob translator, checked against a direct definition ------------------------------------


def reference_match(pattern: str, path: str) -> bool:
    """builtins.md's glob rules, by backtracking ( `**/` may also match no directory)."""
    if not pattern:
        return not path
    if pattern.startswith("**/"):
        return reference_match(pattern[3:], path) or any(
            reference_match(pattern[3:], path[i + 1 :]) for i, c in enumerate(path) if c == "/"
        )
    if pattern.startswith("**"):
        return any(reference_match(pattern[2:], path[i:]) for i in range(len(path) + 1))
    if pattern[0] == "*":
        return any(
            reference_match(pattern[1:], path[i:])
            for i in range(len(path) + 1)
            if "/" not in path[:i]
        )
    if not path:
        return False
    if pattern[0] == "?":
        return path[0] != "/" and reference_match(pattern[1:], path[1:])
    return pattern[0] == path[0] and reference_match(pattern[1:], path[1:])


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    pattern=st.text(alphabet="ab*?/.", min_size=1, max_size=8),
    path=st.text(alphabet="ab/.", min_size=1, max_size=8),
)
def test_glob_translation_matches_the_definition(pattern: str, path: str) -> None:
    path = re.sub("/+", "/", path).strip("/") or "a"
    path_to_match = path if "/" in pattern else path.rpartition("/")[2]
    assert compile_glob(pattern)(path) == reference_match(pattern.removeprefix("./"), path_to_match)


def test_glob_literal_specials() -> None:
    assert compile_glob("a+b(1).txt")("a+b(1).txt")
    assert compile_glob(r"\*.txt")("*.txt")
    assert not compile_glob(r"\*.txt")("x.txt")
    assert compile_glob("{a")("{a")
    assert compile_glob("[")("[")


# -- grep's whole-file pre-filter never hides a matching line ------------------------------------


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    pattern=st.lists(
        st.sampled_from(["a", "b", ".", "^", "$", "[^a]", "\\s", "\\b", "*", "+", "?", "(?s)"]),
        min_size=1,
        max_size=6,
    ).map("".join),
    text=st.text(alphabet="ab \n", max_size=12),
)
def test_whole_text_filter_is_a_superset_of_line_matches(pattern: str, text: str) -> None:
    # (grep hands the filter text with "\r\n" already turned into "\n")
    try:
        line_regex = re.compile(pattern)
    except re.error:
        return
    prefilter = whole_text_filter(pattern)
    assert prefilter is not None
    if any(line_regex.search(line) for line in text.split("\n")):
        assert prefilter.search(text) is not None


def test_whole_text_filter_refuses_line_sensitive_patterns() -> None:
    for pattern in (r"\Afoo", r"foo\Z", "(?<!x)y", "(?=a)", "(?!a)b"):
        assert whole_text_filter(pattern) is None


async def test_grep_anchors_are_per_line(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "f.txt").write_text("alpha\nbeta\n  gamma\n")
    result = await tools["grep"].execute({"pattern": "^beta$"})
    assert result.output == "f.txt:2:beta"
    result = await tools["grep"].execute({"pattern": r"\Agamma|^ +g"})
    assert result.output == "f.txt:3:  gamma"
