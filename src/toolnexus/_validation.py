"""Argument checks against a tool's `input_schema` (jsonschema), compiled once per tool.

A valid call of a flat object schema (typed properties, `required`) is recognised without
jsonschema, in about a tenth of the time; anything else, and every rejection with its
messages, is jsonschema's. A native tool's arguments are checked by pydantic instead:
`format_errors` words its rejections the same way, one line per field.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolnexus._json import to_compact_json
from toolnexus._log import warn
from toolnexus.types import Tool, error_message

if TYPE_CHECKING:
    from pydantic import ValidationError

# Keywords that only annotate: they never make a value invalid.
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_OBJECT_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
_PROPERTY_KEYWORDS = _ANNOTATIONS | {"type"}


# The Python types whose values certainly have each JSON type (exact types: a subclass, or a
# float such as 1.0 for "integer", where drafts differ, is left to jsonschema).
_CERTAIN: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "null": frozenset({type(None)}),
}
_NO_TYPE: frozenset[type] = frozenset()


def _plain_object_check(schema: Any) -> Callable[[dict[str, Any]], bool] | None:
    """For the flat object schemas most tools declare (typed properties, `required`), a
    predicate that is True only for arguments jsonschema would accept; `None` for any other
    schema. A False answer proves nothing: the caller then asks jsonschema.
    """
    if (
        not isinstance(schema, dict)
        or schema.get("type") != "object"
        or not _OBJECT_KEYWORDS.issuperset(schema)
    ):
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if (
        not isinstance(properties, dict)
        or not isinstance(required, list)
        or not all(isinstance(name, str) for name in required)
        or not isinstance(extra, bool)
    ):
        return None
    # property → the Python types certainly accepted (`None`: any value)
    kinds: dict[str, frozenset[type] | None] = {}
    for name, sub in properties.items():
        if not isinstance(sub, dict) or not _PROPERTY_KEYWORDS.issuperset(sub):
            return None
        kind = sub.get("type")
        if kind is None:
            kinds[name] = None
        elif isinstance(kind, str):
            kinds[name] = _CERTAIN.get(kind, _NO_TYPE)
        elif isinstance(kind, list) and all(isinstance(k, str) for k in kind):
            kinds[name] = frozenset().union(*(_CERTAIN.get(k, _NO_TYPE) for k in kind))
        else:
            return None
    needed = tuple(required)

    def surely_valid(args: dict[str, Any]) -> bool:
        for name in needed:
            if name not in args:
                return False
        for name, value in args.items():
            accepted = kinds.get(name, _NO_TYPE)
            if accepted is None:
                continue
            if accepted is _NO_TYPE and name not in kinds:
                if not extra:
                    return False
                continue
            if type(value) not in accepted:
                return False
        return True

    return surely_valid


class _ArgumentCheck:
    """A tool's compiled checks: strict-mode null stripping, then schema validation.

    A schema the validator cannot use (not valid JSON Schema, a `$ref` that resolves nowhere)
    turns checking off for that tool with one warning: a server's broken schema must not make
    its tool uncallable, and the tool still sees every argument.
    """

    __slots__ = ("compiled", "schema", "strip", "surely_valid", "tool_name", "validator")

    def __init__(self, tool: Tool) -> None:
        from toolnexus._schema import null_stripper

        schema = tool.input_schema
        self.tool_name = tool.name
        self.schema = schema
        self.strip: Callable[[Any], Any] | None = null_stripper(schema)
        self.validator: Any = None
        self.compiled = False
        # Most calls are valid: this settles them in microseconds, and jsonschema (several MB
        # of modules) loads only for a call it cannot settle. It accepts only well-formed
        # plain object schemas, so a broken schema still meets jsonschema's check.
        self.surely_valid: Callable[[dict[str, Any]], bool] | None = _plain_object_check(schema)

    def _compile(self) -> None:
        from jsonschema import validators  # type: ignore[import-untyped]

        self.compiled = True
        schema = self.schema
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except Exception as exc:
            self.give_up(f"is not valid JSON Schema ({_first_line(exc)})")
            return
        self.validator = cls(schema)

    def give_up(self, problem: str) -> None:
        self.validator = None
        self.surely_valid = None
        warn(f'tool "{self.tool_name}": its input_schema {problem} — arguments are not checked')

    def problems(self, args: dict[str, Any]) -> list[Any]:
        """Every validation error, in argument order (none once checking is off)."""
        if not self.compiled:
            self._compile()
        if self.validator is None:
            return []
        try:
            return sorted(self.validator.iter_errors(args), key=lambda e: list(e.absolute_path))
        except Exception as exc:  # e.g. referencing.Unresolvable: the schema, not the call
            self.give_up(f"cannot be applied ({_first_line(exc)})")
            return []


_REASON_LIMIT = 160  # characters: jsonschema quotes whole schemas in some messages


def _first_line(exc: BaseException) -> str:
    line = error_message(exc).splitlines()[0]
    return line if len(line) <= _REASON_LIMIT else line[: _REASON_LIMIT - 1] + "…"


def _path(error: Any) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(arguments)"


def check_arguments(tool: Tool, args: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """`(args, None)` when `args` satisfy the tool's schema, else `(args, <one line per problem>)`.

    Nulls that mean "not given" (OpenAI strict mode sends them for omitted optional arguments)
    are dropped first. Tools that validate their own arguments pass through untouched.
    """
    if tool.self_validating:
        return args, None
    check = tool._validator
    if check is None:
        check = tool._validator = _ArgumentCheck(tool)
    if check.strip is not None:
        args = check.strip(args)
    if check.surely_valid is not None and check.surely_valid(args):
        return args, None
    errors = check.problems(args)
    if not errors:
        return args, None
    lines = [f"- {_path(e)}: {e.message}" for e in errors]
    return args, f"Invalid arguments for tool {tool.name}:\n" + "\n".join(lines)


# -- pydantic's errors as the model reads them (native tools) --------------------------------

_GOT_LIMIT = 80  # characters of an offending value quoted back to the model


def _got(value: Any) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        text = to_compact_json(value)
    except Exception:
        text = repr(value)
    return text if len(text) <= _GOT_LIMIT else text[: _GOT_LIMIT - 1] + "…"


def _split_loc(loc: tuple[Any, ...], args: Any, error_type: str) -> tuple[str, list[str]]:
    """A location's field path (dotted) and the union-variant tags pydantic inserted into it."""
    path: list[str] = []
    tags: list[str] = []
    node = args
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if (isinstance(node, dict) and part in node) or (
            isinstance(node, (list, tuple)) and isinstance(part, int) and part < len(node)
        ):
            node = node[part]
            path.append(str(part))
        elif last and error_type in ("missing", "extra_forbidden"):
            path.append(str(part))
        elif isinstance(part, int):
            path.append(str(part))
            node = None
        else:
            tags.append(str(part))
    return ".".join(path), tags


def format_errors(tool_name: str, exc: ValidationError, args: Any, known: str) -> str:
    """One line per offending field: where, what is wrong, and what was given."""
    grouped: dict[str, list[tuple[dict[str, Any], list[str]]]] = {}
    for details in exc.errors(include_url=False, include_context=False):
        path, tags = _split_loc(tuple(details["loc"]), args, details["type"])
        grouped.setdefault(path, []).append((dict(details), tags))
    lines = []
    for path, errors in grouped.items():
        where = path or "(arguments)"
        first = errors[0][0]
        if len(errors) == 1 and first["type"] == "missing":
            lines.append(f"- {where}: required, but missing")
            continue
        if len(errors) == 1 and first["type"] == "extra_forbidden":
            accepted = f"; accepted: {known}" if "." not in path else ""
            lines.append(f"- {where}: unexpected argument{accepted} (got {_got(first['input'])})")
            continue
        problems = []
        for error, tags in errors:
            suffix = f" [as {'/'.join(tags)}]" if tags and len(errors) > 1 else ""
            problems.append(f"{error['msg']}{suffix}")
        lines.append(f"- {where}: {'; '.join(problems)} (got {_got(first['input'])})")
    return f"Invalid arguments for tool {tool_name}:\n" + "\n".join(lines)
