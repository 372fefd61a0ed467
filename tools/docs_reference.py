"""Write the API reference pages, docs/reference/*.md, one per public module.

Dev-only: run it from the repository root after adding or removing a public name or module,

    .venv/bin/python tools/docs_reference.py

and `make docs` renders the pages. A public module is `toolnexus` or any module or package
under it with no underscore in its path; its public names are its `__all__`. Each object is
documented in full once, on the page of the public module nearest to where it is defined (the
longest one whose path begins its definition's path); every other module that exports it lists
it in an "Also exported here" table linking there. griffe (the reader mkdocstrings uses) finds
where each name is defined, statically, as the build will. A name re-exported from another
package gets a table row naming that package.

tests/core/test_docs_reference.py fails when a public name has no entry on its module's page.
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
from dataclasses import dataclass
from pathlib import Path

import griffe

import toolnexus

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "docs" / "reference"


def public_modules() -> list[str]:
    """`toolnexus` and every module or package below it with no `_`-prefixed part."""
    names = ["toolnexus"]
    for info in pkgutil.walk_packages(toolnexus.__path__, "toolnexus."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return sorted(names)


@dataclass(frozen=True)
class Export:
    module: str  # the public module whose `__all__` has the name
    name: str
    target: str  # where griffe finds it defined, e.g. toolnexus.client._client.Client


def exports(modules: list[str]) -> list[Export]:
    package = griffe.load("toolnexus", search_paths=[str(ROOT / "src")], resolve_aliases=True)
    found = []
    for module in modules:
        static = package if module == "toolnexus" else package[module.removeprefix("toolnexus.")]
        for name in importlib.import_module(module).__all__:
            member = static[name]
            try:
                target = member.final_target.path if member.is_alias else member.path
            except griffe.AliasResolutionError:
                target = member.target_path  # defined in another package
            found.append(Export(module, name, target))
    return found


def home(export: Export, exporters: list[Export]) -> Export | None:
    """The export documented in full: the one of the public module nearest the definition
    (sharing the most leading parts of its path; the first in module order on a tie)."""
    if not export.target.startswith("toolnexus."):
        return None
    parts = export.target.split(".")

    def shared(e: Export) -> int:
        pairs = zip(e.module.split("."), parts, strict=False)
        return sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], pairs))

    return max(exporters, key=shared)


def page(module: str, own: list[Export], elsewhere: list[tuple[Export, Export | None]]) -> str:
    lines = [
        f"# `{module}`",
        "",
        "<!-- Written by tools/docs_reference.py: run it again rather than editing by hand. -->",
        "",
        f"::: {module}",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
        "",
    ]
    for export in own:
        lines += [f"::: {module}.{export.name}", ""]
    if elsewhere:
        lines += ["## Also exported here", "", "| Name | Documented in |", "| --- | --- |"]
        for export, doc in elsewhere:
            if doc is None:
                package = export.target.split(".")[0]
                lines.append(f"| `{export.name}` | `{export.target}` (package `{package}`) |")
            else:
                link = f"{doc.module}.{doc.name}"
                lines.append(f"| [`{export.name}`][{link}] | [`{doc.module}`]({doc.module}.md) |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    modules = public_modules()
    found = exports(modules)
    by_target: dict[str, list[Export]] = {}
    for export in found:
        by_target.setdefault(export.target, []).append(export)
    PAGES.mkdir(parents=True, exist_ok=True)
    for old in PAGES.glob("toolnexus*.md"):
        old.unlink()
    documented = 0
    for module in modules:
        own, elsewhere = [], []
        for export in (e for e in found if e.module == module):
            doc = home(export, by_target[export.target])
            if doc == export:
                own.append(export)
            else:
                elsewhere.append((export, doc))
        documented += len(own)
        (PAGES / f"{module}.md").write_text(page(module, own, elsewhere))
    index = [
        "# API reference",
        "",
        "<!-- Written by tools/docs_reference.py: run it again rather than editing by hand. -->",
        "",
        "Every public module and the names in its `__all__`. Each object is documented once, in",
        "the public module nearest to where it is defined; the other modules that export it link",
        "there.",
        "",
        "| Module | Names | Documented here |",
        "| --- | --- | --- |",
    ]
    for module in modules:
        names = [e for e in found if e.module == module]
        in_full = sum(1 for e in names if home(e, by_target[e.target]) == e)
        index.append(f"| [`{module}`]({module}.md) | {len(names)} | {in_full} |")
    (PAGES / "index.md").write_text("\n".join(index) + "\n")
    print(f"{len(modules)} modules, {len(found)} exports, {documented} documented in full")


if __name__ == "__main__":
    main()
