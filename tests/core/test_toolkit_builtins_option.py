"""`Toolkit(builtins=...)` takes what `create_toolkit(builtins=...)` takes, same default."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import ConfigError, Toolkit, create_toolkit, define_tool
from toolnexus.builtin import BUILTIN_NAMES, create_builtin_tools

DROP_BASH = {"tools": {"bash": False}}


def names(toolkit: Toolkit) -> list[str]:
    return [t.name for t in toolkit.tools()]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, list(BUILTIN_NAMES)),
        (True, list(BUILTIN_NAMES)),
        ({}, list(BUILTIN_NAMES)),
        (False, []),
        ({"disabled": True}, []),
        ({"enabled": False}, []),
        (DROP_BASH, [n for n in BUILTIN_NAMES if n != "bash"]),
    ],
)
async def test_both_take_the_same_values_to_the_same_tools(value: Any, expected: list[str]) -> None:
    async with await create_toolkit(builtins=value) as built:
        assert names(built) == expected
    async with Toolkit(builtins=value) as constructed:
        assert names(constructed) == expected


async def test_both_default_to_all_ten() -> None:
    async with await create_toolkit() as built, Toolkit() as constructed:
        assert names(built) == names(constructed) == list(BUILTIN_NAMES)


async def test_both_follow_the_config_builtins_block_when_the_option_is_not_given() -> None:
    config = {"builtins": DROP_BASH}
    async with await create_toolkit(config) as built, Toolkit(config=config) as constructed:
        assert "bash" not in names(built)
        assert names(built) == names(constructed)


async def test_both_refuse_the_same_bad_values() -> None:
    for bad in ("yes", ["bash"], {"tools": {"bash": "no"}}):
        with pytest.raises(ConfigError) as from_factory:
            await create_toolkit(builtins=bad)
        with pytest.raises(ConfigError) as from_constructor:
            Toolkit(builtins=bad)
        assert type(from_constructor.value) is type(from_factory.value)
        assert str(from_constructor.value) == str(from_factory.value)


async def test_loaded_builtin_tools_are_still_taken_as_they_are() -> None:
    todo = [t for t in create_builtin_tools() if t.name == "todowrite"]
    extra = define_tool(lambda: "hi", name="hi")
    async with Toolkit(builtins=todo, extra_tools=[extra]) as toolkit:
        assert names(toolkit) == ["todowrite", "hi"]
