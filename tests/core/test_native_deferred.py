"""Native tools build their argument model on first use, with the same schema and behaviour."""

from __future__ import annotations

import subprocess
import sys
import typing
from typing import Any, Literal

import pytest

from toolnexus import ToolContext, define_tool
from toolnexus._function_schema import _argument_model, _Param


def _plain(a: int, b: float = 2.5, c: str = "x", d: bool = False, e=None, f: Any = 3) -> str:
    """Plain parameters.

    Args:
        a: The a.
        c: The c.
        f: Anything.
    """
    return f"{a} {b} {c} {d} {e} {f}"


def _pydantic_schema(fn: Any) -> dict[str, Any]:
    """The schema pydantic builds for `fn`'s parameters (what the deferred tools must match)."""
    import inspect

    from toolnexus._docstrings import parse_docstring

    hints = typing.get_type_hints(fn)
    params = [
        _Param(p.name, hints.get(p.name, Any), p.default, p.kind)
        for p in inspect.signature(fn).parameters.values()
    ]
    return _argument_model(params, parse_docstring(inspect.getdoc(fn)).params, False, "t")[0]


def _only_a(a: int) -> int:
    return a


def _only_defaults(x: str = "", y: int = -1, z: float = 0.0, w: bool = True) -> None:
    pass


def _literal(mode: Literal["a", "b"], n: int = 2) -> str:
    return mode * n


def _lists(xs: list[int], m: dict[str, float] | None = None) -> int:
    return len(xs)


@pytest.mark.parametrize("fn", [_plain, _only_a, _only_defaults, _literal, _lists])
def test_the_schema_is_the_one_pydantic_gives(fn: Any) -> None:
    assert define_tool(fn).input_schema == _pydantic_schema(fn)


@pytest.mark.parametrize("fn", [_plain, _literal, _lists])
async def test_calls_validate_on_first_use(fn: Any) -> None:
    tool = define_tool(fn)
    args = {"a": 1} if fn is _plain else {"mode": "a"} if fn is _literal else {"xs": [1, 2]}
    ok = await tool.execute(args, ToolContext())
    assert not ok.is_error
    bad = await tool.execute({"nope": 1}, ToolContext())
    assert bad.is_error and "nope" in bad.output


async def test_a_renamed_copy_works_before_and_after_the_first_call() -> None:
    tool = define_tool(_only_a)
    early = tool.renamed("early")
    assert (await early.execute({"a": 4})).output == "4"
    assert (await tool.execute({"a": 5})).output == "5"
    late = tool.renamed("late")
    assert (await late.execute({"a": "x"})).is_error
    assert late.input_schema == tool.input_schema == early.input_schema


def test_defining_plain_tools_loads_no_pydantic() -> None:
    code = (
        "import sys\n"
        "from toolnexus import define_tool\n"
        "def f(a: int, b: str = 'x') -> str:\n    return b * a\n"
        "tools = [define_tool(f, name=f't{i}') for i in range(50)]\n"
        "schemas = [t.input_schema for t in tools]\n"
        "print('pydantic' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
