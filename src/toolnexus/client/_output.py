"""Typed final results: the output type's schema, how each wire is asked for it, validation.

An `OutputSpec` is built once per run from `output_type` (anything pydantic's `TypeAdapter`
takes: a model, a dataclass, a TypedDict, `list[...]`, a primitive, a `Literal`, an Enum, a union).
The model is asked for the value one of three ways:

- `native`: the endpoint's own structured output (OpenAI `response_format` json_schema, strict
  when the schema can be made strict without loss); the answer's text is the JSON value.
- `tool`: a `final_result` tool whose arguments are the value; the run ends when it is called.
- `prompted`: the schema goes into the system prompt and the answer's text is parsed as JSON.

A value that fails validation is sent back with the errors; after `output_retries` re-asks the
run ends `incomplete` with `limit="output"`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toolnexus.adapters import strict_schema
from toolnexus.errors import ConfigError
from toolnexus.types import Tool, ToolResult

if TYPE_CHECKING:
    import pydantic  # loaded by the first typed run: a client without one never imports it

__all__ = ["FINAL_RESULT", "OutputMode", "OutputSpec", "resolve_output"]

OutputMode = Literal["auto", "native", "tool", "prompted"]
MODES = ("auto", "native", "tool", "prompted")

FINAL_RESULT = "final_result"  # the name of the tool that carries the value in `tool` mode
_WRAP_KEY = "response"  # a non-object value travels as `{"response": value}`
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)
# Styles whose endpoint takes a JSON schema for the answer itself.
_NATIVE_STYLES = frozenset({"openai", "openai-responses"})


@dataclass(slots=True)
class OutputSpec:
    """What one run asks the model for, and how its answer becomes the typed value."""

    adapter: pydantic.TypeAdapter[Any]
    schema: dict[str, Any]  # the JSON schema sent: always an object (wrapped when needed)
    wrapped: bool  # the value is the `response` property of `schema`
    name: str  # the schema's name, as providers want one
    mode: Literal["native", "tool", "prompted"]
    strict: bool  # native mode: OpenAI strict structured output

    def tool(self) -> Tool:
        """The `final_result` tool of `tool` mode (never executed: the loop reads its args)."""

        async def never(args: dict[str, Any], ctx: Any) -> ToolResult:  # pragma: no cover
            return ToolResult("the final result is read by the run, not executed", True)

        description = f"Give the final result ({self.name}). Call it once, when you are done."
        return Tool(FINAL_RESULT, description, self.schema, "custom", never)

    def response_format(self) -> dict[str, Any]:
        """The OpenAI `response_format` of `native` mode."""
        schema = strict_schema(self.schema)[0] if self.strict else self.schema
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": schema, "strict": self.strict},
        }

    def instructions(self) -> str:
        """The system-prompt addition of `prompted` mode."""
        return (
            "Answer with one JSON value and nothing else (no prose, no code fence) that "
            f"matches this JSON schema:\n{json.dumps(self.schema, separators=(',', ':'))}"
        )

    def validate_text(self, text: str) -> tuple[Any, list[dict[str, Any]] | None]:
        """The value in an answer's text, or the validation errors."""
        fenced = _FENCE.match(text)
        return self.validate_json(fenced.group(1) if fenced else text.strip())

    def validate_json(self, raw: str) -> tuple[Any, list[dict[str, Any]] | None]:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            return None, [{"type": "json_invalid", "loc": [], "msg": f"not JSON: {exc}"}]
        return self.validate_args(data)

    def validate_args(self, data: Any) -> tuple[Any, list[dict[str, Any]] | None]:
        """The value in decoded data (`final_result`'s arguments, a parsed answer)."""
        if self.wrapped:
            if not isinstance(data, dict) or _WRAP_KEY not in data:
                msg = f'expected an object with the value under "{_WRAP_KEY}"'
                return None, [{"type": "missing", "loc": [_WRAP_KEY], "msg": msg}]
            data = data[_WRAP_KEY]
        import pydantic

        try:
            return self.adapter.validate_python(data), None
        except pydantic.ValidationError as exc:
            return None, _errors(exc)

    def retry_prompt(self, errors: list[dict[str, Any]]) -> str:
        """What the model is told after an answer that did not validate."""
        lines = [
            f"- {'.'.join(map(str, e.get('loc', ()))) or '(root)'}: {e['msg']}" for e in errors
        ]
        how = (
            f"Call the {FINAL_RESULT} tool again with corrected arguments."
            if self.mode == "tool"
            else "Answer again with corrected JSON only."
        )
        return "Your final result did not validate:\n" + "\n".join(lines) + "\n" + how


def _errors(exc: pydantic.ValidationError) -> list[dict[str, Any]]:
    return [
        {"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]}
        for e in exc.errors(include_url=False, include_input=False)
    ]


def _all_required(node: Any) -> bool:
    """Whether every object in `node` requires each of its properties."""
    if isinstance(node, list):
        return all(_all_required(n) for n in node)
    if not isinstance(node, dict):
        return True
    properties = node.get("properties")
    if isinstance(properties, dict) and set(properties) - set(node.get("required") or ()):
        return False
    return all(_all_required(v) for v in node.values())


def _name(output_type: Any) -> str:
    name = getattr(output_type, "__name__", None) or "result"
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(name))[:64] or "result"


def resolve_output(output_type: Any, mode: OutputMode | None, style: str) -> OutputSpec:
    """The spec of one run's `output_type` on the `style` wire (`auto`/`None`: its best).

    Built once per (type, mode, wire): a schema and a validator are not rebuilt for every run.
    """
    if mode is None:
        mode = "auto"
    if mode not in MODES:
        raise ConfigError(f"output_mode must be one of {', '.join(MODES)}, not {mode!r}")
    try:
        key = (output_type, mode, style)
        cached = _specs.get(key)
    except TypeError:  # an unhashable type form: built every time
        return _build(output_type, mode, style)
    if cached is None:
        cached = _specs[key] = _build(output_type, mode, style)
        if len(_specs) > _MAX_SPECS:
            del _specs[next(iter(_specs))]
    return cached


_specs: dict[tuple[Any, str, str], OutputSpec] = {}
_MAX_SPECS = 256


def _build(output_type: Any, mode: OutputMode, style: str) -> OutputSpec:
    import pydantic

    try:
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(output_type)
        schema = adapter.json_schema()
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise ConfigError(f"output_type {output_type!r} has no JSON schema: {exc}") from None
    wrapped = schema.get("type") != "object"
    if wrapped:
        defs = schema.pop("$defs", None)
        schema = {"type": "object", "properties": {_WRAP_KEY: schema}, "required": [_WRAP_KEY]}
        if defs:
            schema["$defs"] = defs
    best: Literal["native", "tool"] = "native" if style in _NATIVE_STYLES else "tool"
    resolved: Literal["native", "tool", "prompted"] = best if mode == "auto" else mode
    if resolved == "native" and style not in _NATIVE_STYLES:
        raise ConfigError(
            f'output_mode="native" needs an endpoint with structured output (openai); the '
            f'{style} wire takes output_mode="tool" or "prompted"'
        )
    # Strict mode makes optional properties required-but-nullable: only lossless when none are.
    strict = resolved == "native" and strict_schema(schema)[1] is None and _all_required(schema)
    return OutputSpec(adapter, schema, wrapped, _name(output_type), resolved, strict)
