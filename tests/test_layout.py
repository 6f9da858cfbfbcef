"""The package's layout: folders in layers, imports only downward, no import circle.

Every import in `adws/` is read from the source (module level, inside
functions and under `TYPE_CHECKING` alike), so a circle cannot hide in a
function-local import or an annotation. Run alone: `make layout`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

from tests.conftest import REPO

PACKAGE: Final = REPO / "adws"

LAYERS: Final[tuple[tuple[str, ...], ...]] = (
    ("adws._checks", "adws._frozen", "adws._lazy", "adws._optional", "adws.io_ops"),
    ("adws.engine", "adws.contract"),
    ("adws.shell", "adws.workspaces"),
    ("adws.agents",),
    ("adws.check", "adws.discovery", "adws.flows", "adws.interrupts", "adws.otel", "adws.summary"),
    ("adws.journal",),
    ("adws.render",),
    ("adws.batch",),
    ("adws.testing",),
    ("adws.cli", "adws", "adws.__main__"),
)
"""From the ground up: a module imports from its own layer or those below it.

The engine and the validator are one layer: the context reads typed keys,
and the validator answers with the engine's errors. No module of theirs
imports another that imports it back (see `circles`).
"""

MAX_TOP_LEVEL: Final = 12


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Map every module's dotted name to its file (a package is its `__init__.py`)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(known: dict[str, Path]) -> dict[str, dict[str, bool]]:
    """Map each module to the modules it imports, each with whether it is for types only."""
    graph: dict[str, dict[str, bool]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and _is_type_checking(node)
            for statement in node.body
            for inner in ast.walk(statement)
        }
        edges = graph.setdefault(name, {})
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in known
                    else node.module
                    for alias in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                if target in known and target != name:
                    types = id(node) in typing_only
                    edges[target] = edges.get(target, True) and types
    return graph


def circles(graph: dict[str, dict[str, bool]]) -> list[list[str]]:
    """Return every group of modules that import each other in a loop (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while (member := stack.pop()) != node:
                group.append(member)
            if group:
                found.append(sorted([node, *group]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer_of(module: str) -> int:
    """Return the layer a module belongs to (the longest prefix that names it)."""
    best, length = -1, -1
    for number, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > length:
                best, length = number, len(name)
    return best


def upward(graph: dict[str, dict[str, bool]]) -> list[str]:
    """List the imports that run from a lower layer to a higher one."""
    return [
        f"{source} -> {target}"
        for source, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(source)
    ]


def test_no_module_of_adws_imports_another_that_imports_it_back() -> None:
    assert circles(imports(modules())) == []


def test_imports_run_only_downward_through_the_layers() -> None:
    assert upward(imports(modules())) == []


def test_every_module_belongs_to_a_layer() -> None:
    assert [name for name in modules() if layer_of(name) < 0] == []


def test_at_most_a_dozen_modules_stay_at_the_top_of_the_package() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top


def test_every_folder_says_in_its_docstring_what_it_is_for() -> None:
    undocumented = [
        str(init.relative_to(REPO))
        for init in sorted(PACKAGE.glob("*/__init__.py"))
        if not ast.get_docstring(ast.parse(init.read_text()))
    ]
    assert undocumented == []


def test_a_circle_is_found_however_it_is_imported(tmp_path: Path) -> None:
    """The checker itself: a loop through a function-local import and a typing-only one."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text('"""A package."""\n')
    (package / "a.py").write_text("def f():\n    from pkg.b import g\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n"
    )
    (package / "c.py").write_text("import pkg.a\nimport json\n")
    graph = imports(modules(package))
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert graph["pkg.b"] == {"pkg.c": True}
    assert graph["pkg.a"] == {"pkg.b": False}


def test_an_import_from_a_lower_layer_to_a_higher_one_is_named() -> None:
    graph = {"adws.engine.executor": {"adws.journal.store": True}, "adws.cli.run": {"adws": False}}
    assert upward(graph) == ["adws.engine.executor -> adws.journal.store"]
