"""Schema inference for native tools: one test per kind of type hint a user writes."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict, Union

import pytest
from pydantic import BaseModel, Field

from toolnexus import Context, Tool, ToolContext, define_tool, tool


def props(t: Tool) -> dict[str, Any]:
    return t.input_schema["properties"]  # type: ignore[no-any-return]


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Size(enum.IntEnum):
    S = 1
    M = 2


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = "Chennai"


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Movie(TypedDict):
    title: str
    year: NotRequired[int]


def test_scalars_and_required() -> None:
    @tool
    def f(s: str, i: int, x: float, b: bool, opt: int = 3) -> str:
        return ""

    assert f.input_schema == {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "x": {"type": "number"},
            "b": {"type": "boolean"},
            "opt": {"type": "integer", "default": 3},
        },
        "required": ["s", "i", "x", "b"],
        "additionalProperties": False,
    }


def test_no_parameters_and_all_optional_omit_required() -> None:
    @tool
    def nothing() -> str:
        return "ok"

    @tool
    def optional(limit: int = 10, query: str | None = None) -> str:
        return ""

    assert nothing.input_schema == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert "required" not in optional.input_schema


def test_collections() -> None:
    @tool
    def f(
        tags: list[str],
        pair: tuple[int, str],
        many: tuple[int, ...],
        unique: set[int],
        scores: dict[str, float],
        frozen: frozenset[str],
    ) -> None:
        pass

    p = props(f)
    assert p["tags"] == {"type": "array", "items": {"type": "string"}}
    assert p["pair"]["type"] == "array"
    assert p["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert p["many"] == {"type": "array", "items": {"type": "integer"}}
    assert p["unique"] == {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    assert p["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["frozen"]["items"] == {"type": "string"}


def test_optional_and_unions() -> None:
    @tool
    def f(a: Optional[str], b: int | str, c: Union[int, None] = None) -> None:  # noqa: UP007, UP045
        pass

    p = props(f)
    assert p["a"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert p["b"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert p["c"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert f.input_schema["required"] == ["a", "b"]


def test_literal_and_enums_become_enum_with_type() -> None:
    @tool
    def f(unit: Literal["km", "mi"], color: Color, size: Size, only: Literal["x"]) -> None:
        pass

    p = props(f)
    assert p["unit"] == {"enum": ["km", "mi"], "type": "string"}
    assert p["color"] == {"enum": ["red", "green"], "type": "string"}
    assert p["size"] == {"enum": [1, 2], "type": "integer"}
    assert p["only"] == {"enum": ["x"], "type": "string"}


def test_nested_models_dataclasses_and_typed_dicts() -> None:
    @tool
    def f(address: Address, point: Point, movie: Movie) -> None:
        pass

    p = props(f)
    assert p["address"] == {
        "description": "A postal address.",
        "type": "object",
        "properties": {
            "street": {"type": "string"},
            "city": {"type": "string", "default": "Chennai"},
        },
        "required": ["street"],
    }
    assert p["point"]["properties"] == {
        "x": {"type": "number"},
        "y": {"type": "number", "default": 0.0},
    }
    assert p["point"]["required"] == ["x"]
    assert p["movie"]["properties"] == {"title": {"type": "string"}, "year": {"type": "integer"}}
    assert p["movie"]["required"] == ["title"]
    assert "$defs" not in f.input_schema  # nothing recursive: everything inline


def test_recursive_models_keep_defs() -> None:
    @tool
    def f(tree: Tree) -> int:
        return tree.value

    schema = f.input_schema
    assert schema["properties"]["tree"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/Tree"
    }
    assert schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}


def test_no_pydantic_titles_even_for_a_parameter_named_title() -> None:
    @tool
    def f(title: str, address: Address) -> None:
        pass

    def has_title_keyword(node: Any, in_properties: bool = False) -> bool:
        if isinstance(node, dict):
            if "title" in node and not in_properties:
                return True
            return any(has_title_keyword(v, k == "properties") for k, v in node.items())
        if isinstance(node, list):
            return any(has_title_keyword(v) for v in node)
        return False

    assert props(f)["title"] == {"type": "string"}
    assert not has_title_keyword(f.input_schema)


def test_annotated_field_descriptions_and_constraints() -> None:
    @tool
    def f(
        city: Annotated[str, Field(description="City name")],
        days: Annotated[int, Field(ge=1, le=7, description="How many days")] = 1,
    ) -> None:
        """Forecast.

        Args:
            city: docstring text loses to Field(description=...).
            days: also loses.
        """

    assert props(f)["city"] == {"type": "string", "description": "City name"}
    assert props(f)["days"] == {
        "type": "integer",
        "description": "How many days",
        "minimum": 1,
        "maximum": 7,
        "default": 1,
    }


def test_kwargs_open_the_object_and_args_are_ignored() -> None:
    @tool
    def f(a: int, *rest: int, **extra: Any) -> None:
        pass

    assert f.input_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }


@pytest.mark.parametrize("annotation", [Context, ToolContext, Optional[Context]])  # noqa: UP045
def test_context_parameter_is_not_in_the_schema(annotation: Any) -> None:
    def f(query: str, run_ctx: Any = None) -> str:
        return query

    f.__annotations__["run_ctx"] = annotation
    assert list(props(define_tool(f))) == ["query"]


def test_parameters_named_ctx_or_context_are_the_context() -> None:
    @tool
    def a(query: str, ctx) -> str:  # type: ignore[no-untyped-def]
        return query

    @tool
    def b(context, query: str) -> str:  # type: ignore[no-untyped-def]
        return query

    @tool
    def c(context: str) -> str:  # typed as a plain value: an ordinary argument
        return context

    assert list(props(a)) == ["query"]
    assert list(props(b)) == ["query"]
    assert list(props(c)) == ["context"]


def test_unannotated_parameter_accepts_anything() -> None:
    @tool
    def f(value, flag: bool = False):  # type: ignore[no-untyped-def]
        return value

    assert props(f)["value"] == {}


def test_methods_skip_self_and_cls() -> None:
    class Shop:
        def __init__(self) -> None:
            self.stock = {"apple": 3}

        def count(self, item: str) -> int:
            """Count an item."""
            return self.stock.get(item, 0)

    bound = define_tool(Shop().count)
    assert bound.name == "count"
    assert bound.description == "Count an item."
    assert list(props(bound)) == ["item"]


def test_name_description_and_schema_overrides_win() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

    @tool(name="find", description="Find things.", input_schema=schema)
    def search(q: str) -> str:
        """Docstring loses."""
        return q

    assert (search.name, search.description) == ("find", "Find things.")
    assert search.input_schema is schema
