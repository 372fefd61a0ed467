"""The API reference (docs/reference/, rendered by `make docs`) covers every public name.

A public module is `toolnexus` or any module below it with no `_`-prefixed part; its public
names are its `__all__`. Each name has an entry on its module's page: a `::: module.name`
directive (documented there in full) or a row linking to where the same object is documented.
A new public name or module without one fails here; `python tools/docs_reference.py` writes it.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import toolnexus

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"
HINT = "run `.venv/bin/python tools/docs_reference.py` to write the reference pages"

_DIRECTIVE = re.compile(r"^::: (toolnexus[\w.]*)$", re.MULTILINE)
# | [`name`][toolnexus.module.name] | ... |   or, for another package's object,   | `name` | ... |
_ROW = re.compile(r"^\| (?:\[`(\w+)`\]\[([\w.]+)\]|`(\w+)`) \|", re.MULTILINE)


def _public_modules() -> list[str]:
    names = ["toolnexus"]
    for info in pkgutil.walk_packages(toolnexus.__path__, "toolnexus."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return sorted(names)


MODULES = _public_modules()


def _entries(module: str) -> tuple[set[str], dict[str, str | None]]:
    """The names `module`'s page documents in full, and those it links elsewhere (to None
    when the object belongs to another package)."""
    page = REFERENCE / f"{module}.md"
    assert page.is_file(), f"no reference page for {module}: {HINT}"
    text = page.read_text()
    documented = set()
    for path in _DIRECTIVE.findall(text):
        if path != module:
            owner, _, name = path.rpartition(".")
            assert owner == module, f"{page.name} documents {path}, not a name of {module}"
            documented.add(name)
    linked = {}
    for name, target, foreign in _ROW.findall(text):
        linked[name or foreign] = target or None
    return documented, linked


def _resolve(path: str) -> object:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_public_module_is_found() -> None:
    """The walk sees the published modules (a broken walk would make the next test vacuous)."""
    for module in (
        "toolnexus",
        "toolnexus.agents",
        "toolnexus.client",
        "toolnexus.testing",
        "toolnexus.durable",
        "toolnexus.errors",
        "toolnexus.types",
    ):
        assert module in MODULES


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_has_an_entry_on_its_module_page(module: str) -> None:
    public = set(importlib.import_module(module).__all__)
    documented, linked = _entries(module)
    entries = documented | set(linked)
    assert not documented & set(linked), f"{module}: both documented and linked"
    assert public - entries == set(), f"{module}: public names missing from its page; {HINT}"
    assert entries - public == set(), f"{module}: its page lists names it does not export; {HINT}"


@pytest.mark.parametrize("module", MODULES)
def test_each_link_points_at_the_same_object_documented_in_full(module: str) -> None:
    _, linked = _entries(module)
    for name, target in linked.items():
        if target is None:  # another package's object, e.g. a constant of the MCP SDK
            assert not type(getattr(importlib.import_module(module), name)).__module__.startswith(
                "toolnexus"
            )
            continue
        home, _, home_name = target.rpartition(".")
        assert home_name in _entries(home)[0], f"{module}.{name} links to {target}: not documented"
        assert getattr(importlib.import_module(module), name) is _resolve(target), (
            f"{module}.{name} links to {target}, a different object"
        )
