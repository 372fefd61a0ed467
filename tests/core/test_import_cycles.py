"""No module of the library imports, directly or through others, a module that imports it back.

Every import counts: top-level, inside functions and under `if TYPE_CHECKING:`. A package's
`__init__` that only re-exports its own submodules is the package's face, so an import of a
package means its `__init__` module.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in (SRC / "toolnexus").rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from pkg import submodule` imports the submodule (its package's `__init__`
                # runs too, but that is the package's face); `from pkg import name`, the
                # package's `__init__` itself.
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base
                    for alias in node.names
                ]
            for target in targets:
                if target in files and target != name:
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _is_parent(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def test_no_import_cycles() -> None:
    graph = _graph()
    # A module importing a name from its own subpackage's `__init__` (a sibling through the
    # subpackage's re-exports) is that package's face, not a cycle of modules. The root is no
    # such face: nothing below it may import `toolnexus` itself, even inside a function.
    for name, targets in graph.items():
        graph[name] = {t for t in targets if t == "toolnexus" or not _is_parent(t, name)}
    assert _cycles(graph) == []


def test_nothing_below_the_root_imports_it() -> None:
    graph = _graph()
    assert sorted(n for n, targets in graph.items() if "toolnexus" in targets) == []


def test_nothing_below_the_client_imports_it() -> None:
    graph = _graph()
    below = [
        n for n in graph if n.startswith("toolnexus.client._") and n != "toolnexus.client._client"
    ]
    assert [n for n in below if "toolnexus.client._client" in graph[n]] == []
    assert [n for n in below if "toolnexus.client" in graph[n]] == []
