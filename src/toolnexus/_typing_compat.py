"""Type-hint resolution for function tools: annotations evaluated where the function was
defined, and adjusted for pydantic (floats keep ints; `typing.TypedDict` before Python 3.12)."""

from __future__ import annotations

import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, NotRequired, Required, cast

from typing_extensions import TypedDict

from toolnexus.errors import ConfigTypeError


def caller_locals() -> dict[str, Any] | None:
    """The namespace where the decorated function was defined (two frames up).

    With `from __future__ import annotations`, a hint may name a class local to the enclosing
    function; the defining frame's locals resolve it, as pydantic itself does for models.
    """
    try:
        frame = sys._getframe(2)
    except ValueError:  # pragma: no cover - no such frame
        return None
    return dict(frame.f_locals) if frame.f_code.co_name != "<module>" else None


def globals_of(fn: Any) -> dict[str, Any]:
    """The module globals `fn`'s annotations are evaluated in (through wrappers, partials,
    bound methods and callable objects)."""
    target = inspect.unwrap(fn)
    while isinstance(target, functools.partial):
        target = inspect.unwrap(target.func)
    target = getattr(target, "__func__", target)
    if not inspect.isfunction(target) and not inspect.isclass(target):
        target = getattr(type(target), "__call__", target)  # noqa: B004
    if inspect.isclass(target):
        return vars(sys.modules.get(target.__module__, types.ModuleType("_")))
    found: dict[str, Any] = getattr(target, "__globals__", {})
    return found


def resolve_annotation(
    annotation: Any, where: str, globalns: dict[str, Any], localns: dict[str, Any] | None
) -> Any:
    """Evaluate a (possibly string / forward-ref) annotation, or raise a precise TypeError.

    The function's module globals come first; the defining frame's locals only fill in names
    the globals lack (e.g. a class defined inside the enclosing function).
    """
    holder = types.SimpleNamespace(__annotations__={"x": annotation})
    attempts = [None, localns] if localns else [None]
    error: Exception | None = None
    for scope in attempts:
        try:
            return typing.get_type_hints(holder, globalns, scope, include_extras=True)["x"]
        except Exception as exc:
            error = exc
    shown = annotation if isinstance(annotation, str) else repr(annotation)
    raise ConfigTypeError(
        f"{where}: cannot resolve the annotation {shown!r} ({error}); pass input_schema= explicitly"
    )


@functools.cache
def _float_keeping_ints() -> Any:
    """`float` for pydantic, but a JSON integer stays an `int`: it already is a valid `float`
    argument (`2 + 3` is `5`, not `5.0`). The schema is still `{"type": "number"}`."""
    from pydantic import WrapValidator

    def keep_int(value: Any, handler: Callable[[Any], Any]) -> Any:
        if type(value) is int:
            return value
        return handler(value)

    return typing.Annotated[float, WrapValidator(keep_int)]


def for_pydantic(annotation: Any) -> Any:
    """Adjust an annotation (inside any generic) for pydantic, converting only what must be:

    - `float` keeps JSON integers as `int` (see `_float_keeping_ints`);
    - before Python 3.12 pydantic only understands `typing_extensions.TypedDict`; users
      reasonably write `typing.TypedDict`, so it is converted instead of being refused.
    """
    if annotation is float:
        return _float_keeping_ints()
    if (
        sys.version_info < (3, 12)
        and isinstance(annotation, type)
        and typing.is_typeddict(annotation)
    ):
        if type(annotation).__module__ != "typing":
            return annotation
        hints = typing.get_type_hints(annotation, include_extras=True)
        fields = {}
        required_keys: frozenset[str] = getattr(annotation, "__required_keys__", frozenset())
        for key, hint in hints.items():
            # An explicit (Not)Required in the hint wins: with postponed annotations the
            # class could not see it and filed every key under its `total` default.
            marker = typing.get_origin(hint)
            if marker in (Required, NotRequired):
                hint = typing.get_args(hint)[0]
            else:
                marker = Required if key in required_keys else NotRequired
            fields[key] = marker[for_pydantic(hint)]
        converted = typed_dict(annotation.__name__, fields)
        converted.__doc__ = annotation.__doc__
        converted.__module__ = annotation.__module__
        return converted
    args = typing.get_args(annotation)
    if not args:
        return annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return annotation
    if origin is typing.Annotated:
        return typing.Annotated[(for_pydantic(args[0]), *annotation.__metadata__)]
    new_args = tuple(for_pydantic(a) for a in args)
    if all(n is o for n, o in zip(new_args, args, strict=True)):
        return annotation
    if origin in (typing.Union, types.UnionType):
        return typing.Union[new_args]  # noqa: UP007 - members may not support `|`
    if isinstance(annotation, types.GenericAlias):
        return types.GenericAlias(origin, new_args)
    copy_with = getattr(annotation, "copy_with", None)
    return copy_with(new_args) if copy_with is not None else annotation


def typed_dict(name: str, fields: dict[str, Any]) -> Any:
    """A `typing_extensions.TypedDict` class built at run time (pydantic's argument model)."""
    return cast(Any, TypedDict)(name, fields)
