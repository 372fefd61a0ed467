"""Native tools at call time: forms, context, validation messages, results, definition errors."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from toolnexus import (
    Answer,
    Context,
    Tool,
    ToolResult,
    create_toolkit,
    define_tool,
    pending,
    pending_of,
    tool,
)


class Unit(enum.Enum):
    KM = "km"
    MI = "mi"


class Address(BaseModel):
    street: str
    city: str = "Chennai"


@dataclasses.dataclass
class Point:
    x: float
    y: float


# -- the three forms ------------------------------------------------------------------------------


async def test_explicit_form_sync_and_async() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    async def double(args: dict[str, Any], ctx: Context) -> int:
        return int(args["n"]) * 2

    sync_tool = define_tool(
        name="echo", description="Echo n", input_schema=schema, execute=lambda a, c: str(a["n"])
    )
    async_tool = define_tool(name="double", input_schema=schema, execute=double)

    assert (sync_tool.name, sync_tool.description, sync_tool.source) == ("echo", "Echo n", "native")
    assert (await sync_tool.execute({"n": 4})).output == "4"
    assert (await async_tool.execute({"n": 4})).output == "8"
    assert async_tool.description == ""


async def test_explicit_form_defaults_and_one_argument_execute() -> None:
    t = define_tool(name="ping", execute=lambda args: "pong")
    assert t.input_schema == {"type": "object", "properties": {}}
    assert (await t.execute()).output == "pong"
    assert define_tool(name="x", execute=lambda a, c: "").input_schema is not t.input_schema


async def test_explicit_form_maps_every_kind_of_return() -> None:
    values: list[Any] = ["text", {"a": [1, "é"]}, ToolResult("custom", True, {"k": 1}), None, 3.5]
    results = []
    for value in values:
        t = define_tool(name="r", execute=lambda a, c, v=value: v)
        results.append(await t.execute({}))
    assert results == [
        ToolResult("text"),
        ToolResult('{"a":[1,"é"]}'),
        ToolResult("custom", True, {"k": 1}),
        ToolResult("null"),
        ToolResult("3.5"),
    ]


async def test_every_function_form_makes_the_same_tool() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    forms = [
        define_tool(add),
        tool(add),
        define_tool()(add),
        tool()(add),
        define_tool(name="add")(add),
        tool(name="add")(add),
        define_tool(add, name="add"),
    ]
    for t in forms:
        assert isinstance(t, Tool)
        assert (t.name, t.description, t.source) == ("add", "Add two numbers.", "native")
        assert t.input_schema == forms[0].input_schema
        assert (await t.execute({"a": 2, "b": 3})).output == "5"


async def test_decorated_async_function() -> None:
    @tool
    async def fetch(url: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"url": url, "status": 200}

    assert (await fetch.execute({"url": "http://x"})).output == '{"url":"http://x","status":200}'


async def test_sync_functions_run_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()

    @tool
    def where() -> str:
        return "loop" if threading.get_ident() == loop_thread else "worker"

    assert (await where.execute()).output == "worker"


async def test_return_values_are_mapped() -> None:
    @tool
    def model_out() -> Address:
        return Address(street="1 Main St")

    @tool
    def dataclass_out() -> Point:
        return Point(1.0, 2.5)

    @tool
    def suspends() -> ToolResult:
        return pending(kind="approval", prompt="Proceed?")

    @tool
    def fails(reason: str) -> str:
        raise PermissionError(reason)

    assert (await model_out.execute()).output == '{"street":"1 Main St","city":"Chennai"}'
    assert (await dataclass_out.execute()).output == '{"x":1.0,"y":2.5}'
    assert pending_of(await suspends.execute()) is not None
    assert await fails.execute({"reason": "read-only disk"}) == ToolResult("read-only disk", True)


async def test_callable_objects_partials_and_positional_only() -> None:
    class Multiplier:
        """Multiply by a fixed factor."""

        def __init__(self, factor: int) -> None:
            self.factor = factor

        def __call__(self, n: int) -> int:
            return n * self.factor

    def scale(n: int, /, factor: int = 2, *, offset: int = 0) -> int:
        return n * factor + offset

    triple = define_tool(Multiplier(3), name="triple")
    assert (await triple.execute({"n": "4"})).output == "12"
    assert triple.description == "Multiply by a fixed factor."
    scaled = define_tool(scale)
    assert (await scaled.execute({"n": 5, "offset": 1})).output == "11"
    half = define_tool(functools.partial(scale, factor=10), name="tenfold")
    assert (await half.execute({"n": 5})).output == "50"


# -- context --------------------------------------------------------------------------------------


async def test_context_parameter_receives_the_calls_context() -> None:
    seen: list[Any] = []

    @tool
    def by_type(q: str, run: Context) -> str:
        seen.append(run)
        return q

    @tool
    async def by_name(q: str, ctx) -> str:  # type: ignore[no-untyped-def]
        seen.append(ctx)
        return q

    given = Context(timeout=5)
    await by_type.execute({"q": "a"}, given)
    await by_name.execute({"q": "b"}, given)
    await by_name.execute({"q": "c"})
    assert seen[0] is given and seen[1] is given
    assert isinstance(seen[2], Context) and seen[2] is not given


async def test_a_native_tool_suspends_and_resumes_with_the_answer() -> None:
    @tool
    def approve(action: str, ctx: Context) -> str | ToolResult:
        if ctx.answer is None:
            return pending(kind="approval", prompt=f"Allow {action}?", id="p1")
        return "done" if ctx.answer.ok else "refused"

    first = await approve.execute({"action": "deploy"})
    request = pending_of(first)
    assert request is not None and request.prompt == "Allow deploy?"
    again = await approve.execute({"action": "deploy"}, Context(answer=Answer(id="p1", ok=True)))
    assert again.output == "done"


# -- validation -----------------------------------------------------------------------------------


async def test_lax_coercion_and_conversion_to_declared_types() -> None:
    got: list[Any] = []

    @tool
    def book(guests: int, price: float, when: str, unit: Unit, address: Address, at: Point) -> str:
        got.extend([guests, price, when, unit, address, at])
        return "ok"

    args = {
        "guests": "2",
        "price": 3,
        "when": "8pm",
        "unit": "mi",
        "address": {"street": "1 Main St"},
        "at": {"x": 1, "y": "2.5"},
    }
    assert (await book.execute(args)).output == "ok"
    assert got == [2, 3.0, "8pm", Unit.MI, Address(street="1 Main St"), Point(1.0, 2.5)]


async def test_invalid_arguments_list_every_bad_field_and_skip_the_call() -> None:
    calls: list[Any] = []

    @tool
    def book(guests: int, when: str, address: Address, note: str = "") -> str:
        calls.append(1)
        return "ok"

    result = await book.execute(
        {"guests": 1.5, "address": {"city": "Pune"}, "extra": True, "note": ["x"]}
    )
    assert result.is_error is True
    assert calls == []
    lines = result.output.splitlines()
    assert lines[0] == "Invalid arguments for tool book:"
    assert lines[1:] == [
        "- guests: Input should be a valid integer, got a number with a fractional part (got 1.5)",
        "- when: required, but missing",
        "- address.street: required, but missing",
        '- note: Input should be a valid string (got ["x"])',
        "- extra: unexpected argument; accepted: guests, when, address, note (got true)",
    ]


async def test_union_problems_are_one_line_per_field() -> None:
    @tool
    def pick(key: int | bool) -> str:
        return str(key)

    result = await pick.execute({"key": "abc"})
    [line] = result.output.splitlines()[1:]
    assert line.startswith("- key: ") and line.endswith('(got "abc")')
    assert "[as int]" in line and "[as bool]" in line


async def test_long_offending_values_are_shortened() -> None:
    @tool
    def f(n: int) -> int:
        return n

    result = await f.execute({"n": "x" * 500})
    assert result.is_error and len(result.output.splitlines()[1]) < 200
    assert result.output.endswith("…)")


async def test_kwargs_accept_and_receive_extra_arguments() -> None:
    @tool
    def configure(name: str, **options: Any) -> dict[str, Any]:
        return {"name": name, **options}

    result = await configure.execute({"name": "svc", "replicas": 3, "debug": True})
    assert result.output == '{"name":"svc","replicas":3,"debug":true}'


async def test_null_for_an_optional_argument_means_its_default() -> None:
    @tool
    def search(query: str, limit: int = 5, address: Address | None = None) -> str:
        return f"{query}:{limit}:{address.city if address else '-'}"

    # OpenAI strict mode sends every property, null for those not given, at any depth
    out = await search.execute(
        {"query": "tea", "limit": None, "address": {"street": "s", "city": None}}
    )
    assert out.output == "tea:5:Chennai"
    assert (await search.execute({"query": "tea", "address": None})).output == "tea:5:-"
    missing = await search.execute({"query": None})
    assert (
        missing.is_error and "- query: Input should be a valid string (got null)" in missing.output
    )


async def test_arguments_that_are_not_an_object() -> None:
    @tool
    def f(n: int) -> int:
        return n

    result = await f.execute([1, 2])  # type: ignore[arg-type]
    assert result.is_error and "- (arguments): Input should be a valid dictionary" in result.output


async def test_explicit_schema_is_validated_by_the_toolkit() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    @tool(input_schema=schema)
    def show(n, ctx):  # type: ignore[no-untyped-def]
        return f"{n} {type(ctx).__name__}"

    async with await create_toolkit(extra_tools=[show], builtins=False) as tk:
        assert (await tk.execute("show", {"n": 3})).output == "3 ToolContext"
        bad = await tk.execute("show", {"n": "3"})
        assert bad.is_error and "'3' is not of type 'integer'" in bad.output


# -- definition-time errors ----------------------------------------------------------------------


def test_unresolvable_annotation_names_the_parameter() -> None:
    def lookup(city: str, when: NoSuchType) -> str:  # type: ignore[name-defined]  # noqa: F821
        return city

    with pytest.raises(TypeError) as info:
        define_tool(lookup)
    message = str(info.value)
    assert 'parameter "when"' in message and "NoSuchType" in message
    assert "input_schema=" in message
    # an explicit schema is the way out
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    assert define_tool(lookup, input_schema=schema).input_schema is schema


def test_annotation_pydantic_cannot_describe_names_the_parameter() -> None:
    class Opaque:
        pass

    def use(handle: Opaque, n: int = 1) -> None:
        pass

    with pytest.raises(TypeError, match=r'parameter "handle".*input_schema='):
        define_tool(use)


def test_uninspectable_callable_asks_for_a_schema() -> None:
    with pytest.raises(TypeError, match=r"cannot inspect the signature.*input_schema="):
        define_tool(max)


def test_other_definition_mistakes() -> None:
    with pytest.raises(TypeError, match="name="):
        define_tool(lambda x: x)
    with pytest.raises(TypeError, match="either a function or execute="):
        define_tool(print, execute=print)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="at most one context"):

        @tool
        def two(a: Context, b: Context) -> None:
            pass

    t = define_tool(name="t", execute=lambda a, c: "")
    with pytest.raises(TypeError, match="tool already"):
        define_tool(t)


def test_classes_local_to_a_function_resolve_under_postponed_annotations() -> None:
    class Order(BaseModel):
        item: str
        qty: int = 1

    @tool
    def place(order: Order) -> str:
        return order.item

    assert place.input_schema["properties"]["order"]["required"] == ["item"]
