"""Write down the public surface of the published `toolnexus` package as data.

Dev-only: run it with the interpreter of a virtualenv where the published package is installed
(never this repo's), e.g.

    /path/to/venv/bin/python tools/probe_published.py > tests/compat/published_surface.json

It only looks at what the package exposes at run time (names, signatures, dataclass fields,
methods); nothing of its source text is copied. tests/compat/test_published_surface.py compares
our package with the file it writes.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil
import sys
import typing
from typing import Any

PACKAGE = "toolnexus"

# Names whose home is one of these published modules belong to another issue than the core one.
OWNER_OF_MODULE = {
    "toolnexus.content": "content",
    "toolnexus.agents": "agents",
    "toolnexus.classifier": "classifier",
    "toolnexus.judge": "classifier",
    "toolnexus.judge_batteries": "classifier",
    "toolnexus.acp": "acp",
}
OTHER_OWNER_MODULES = tuple(OWNER_OF_MODULE)

SIMPLE = (type(None), bool, int, float, str)

# modules in the order their names are defined: an alias or constant found in several of them
# lives in the first
HOME_ORDER = (
    "toolnexus.types",
    "toolnexus.content",
    "toolnexus.mcp_source",
    "toolnexus.skill",
    "toolnexus.builtin",
    "toolnexus.a2a",
    "toolnexus.http",
    "toolnexus.native",
    "toolnexus.adapters",
    "toolnexus.translate",
    "toolnexus.client",
    "toolnexus.mcp_serve",
    "toolnexus.serve",
    "toolnexus.toolkit",
)


class _Opaque:
    """Stands for a default that is not a plain value (a factory, a sentinel)."""

    def __repr__(self) -> str:
        return "..."


_OPAQUE = _Opaque()


def owner_of_module(module: str) -> str:
    for prefix, owner in OWNER_OF_MODULE.items():
        if module == prefix or module.startswith(prefix + "."):
            return owner
    return "core"


def is_alias(value: Any) -> bool:
    """A subscripted typing construct (`dict[str, Any]`, `Literal[...]`, `Callable[...]`)."""
    if isinstance(value, type(dict[str, int])):
        return True
    origin = typing.get_origin(value)
    return origin is not None and bool(typing.get_args(value))


def signature_data(fn: Any, drop_first: bool = False) -> str | None:
    """The signature without annotations; a default that is not a plain value shows as `...`."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())[1 if drop_first else 0 :]
    plain = [
        p.replace(
            annotation=inspect.Parameter.empty,
            default=p.default
            if p.default is inspect.Parameter.empty or isinstance(p.default, SIMPLE)
            else _OPAQUE,
        )
        for p in params
    ]
    return str(sig.replace(parameters=plain, return_annotation=inspect.Signature.empty))


def call_kind(fn: Any) -> str:
    if inspect.iscoroutinefunction(fn):
        return "coroutine"
    if inspect.isasyncgenfunction(fn):
        return "async generator"
    return "plain"


def class_data(cls: type) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "class"}
    if dataclasses.is_dataclass(cls):
        out["dataclass_fields"] = [
            f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")
        ]
    if issubclass(cls, BaseException):
        out["bases"] = [b.__name__ for b in cls.__mro__[1:] if b.__module__.startswith(PACKAGE)]
        out["exception"] = True
    if typing.is_typeddict(cls):
        out["typeddict_keys"] = sorted(cls.__annotations__)
    elif cls.__init__ is not object.__init__ or dataclasses.is_dataclass(cls):
        out["init"] = signature_data(cls)
    if getattr(cls, "_is_protocol", False):
        out["protocol"] = True
    methods: dict[str, Any] = {}
    attributes: list[str] = []
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith(PACKAGE):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_") and name not in (
                "__aenter__",
                "__aexit__",
                "__aiter__",
                "__call__",
            ):
                continue
            if isinstance(member, property):
                attributes.append(name)
            elif isinstance(member, (staticmethod, classmethod)):
                fn = member.__func__
                methods[name] = {
                    "call": call_kind(fn),
                    "params": signature_data(fn, drop_first=isinstance(member, classmethod)),
                }
            elif inspect.isfunction(member):
                methods[name] = {
                    "call": call_kind(member),
                    "params": signature_data(member, drop_first=True),
                }
    if methods:
        out["methods"] = dict(sorted(methods.items()))
    if attributes:
        out["properties"] = sorted(set(attributes))
    return out


def value_data(value: Any) -> dict[str, Any] | None:
    if value is typing.Any:
        return {"kind": "alias", "repr": "Any"}
    if inspect.isclass(value):
        if not value.__module__.startswith(PACKAGE):
            return None
        return {**class_data(value), "home": value.__module__}
    if inspect.isfunction(value):
        if not value.__module__.startswith(PACKAGE):
            return None
        return {
            "kind": "function",
            "call": call_kind(value),
            "home": value.__module__,
            "params": signature_data(value),
        }
    if is_alias(value):
        return {"kind": "alias", "repr": repr(value).replace("typing.", "")}
    if isinstance(value, (bool, int, float, str, tuple, frozenset, set, dict, list)):
        out: dict[str, Any] = {"kind": "constant", "type": type(value).__name__}
        if isinstance(value, (int, float)) or (isinstance(value, str) and len(value) < 80):
            out["value"] = value
        return out
    return None


def alias_owner(module_name: str, name: str, value: Any) -> str:
    """Which issue a constant or alias belongs to. Mutable containers are told apart by
    identity (the module that made the object); strings, numbers and aliases are core when a
    core module has them (equal small values are often the same object)."""
    if owner_of_module(module_name) != "core":
        return owner_of_module(module_name)
    others = [
        OWNER_OF_MODULE[m]
        for m in OTHER_OWNER_MODULES
        if m in sys.modules and getattr(sys.modules[m], name, None) is value
    ]
    in_core = any(
        getattr(sys.modules[m], name, None) is value for m in core_modules if m != PACKAGE
    )
    if others and isinstance(value, (dict, list, set)):
        return others[0]
    if in_core or not others:
        return "core"
    return others[0]


def main() -> None:
    pkg = importlib.import_module(PACKAGE)
    module_names = [PACKAGE] + [
        m.name
        for m in pkgutil.walk_packages(pkg.__path__, PACKAGE + ".")
        if not any(part.startswith("_") for part in m.name.split("."))
    ]
    for m in module_names:
        importlib.import_module(m)
    global core_modules
    core_modules = [m for m in module_names if owner_of_module(m) == "core"]
    modules: dict[str, Any] = {}
    for m in module_names:
        mod = sys.modules[m]
        names: dict[str, Any] = {}
        for name in sorted(dir(mod)):
            if name.startswith("_") or name in ("annotations", "TYPE_CHECKING", "Any"):
                continue
            value = getattr(mod, name)
            if inspect.ismodule(value):
                continue
            data = value_data(value)
            if data is None:
                continue
            home = data.get("home")
            data["owner"] = owner_of_module(home) if home else alias_owner(m, name, value)
            if home is None:
                home = next(
                    (
                        h
                        for h in HOME_ORDER
                        if h in sys.modules and getattr(sys.modules[h], name, None) is value
                    ),
                    m,
                )
            # a name the module merely imports from another published module
            data["imported"] = home != m and m != PACKAGE
            names[name] = data
        modules[m] = {"owner": owner_of_module(m), "names": names}
    json.dump(
        {
            "package": PACKAGE,
            "version": importlib.metadata.version(PACKAGE),
            "python": "{}.{}".format(*sys.version_info[:2]),
            "modules": modules,
        },
        sys.stdout,
        indent=1,
        sort_keys=False,
    )
    sys.stdout.write("\n")


core_modules: list[str] = []

if __name__ == "__main__":
    import importlib.metadata

    main()
