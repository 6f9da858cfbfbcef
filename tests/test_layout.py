"""The package's layout: folders in layers, imports only downward, no import circle.

Every import in `adws/` is read from the source (module level, inside
functions and under `TYPE_CHECKING` alike), so a circle cannot hide in a
function-local import or an annotation. Run alone: `make layout`.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path
from typing import Final

from tests.conftest import REPO

PACKAGE: Final = REPO / "adws"

LAYERS: Final[tuple[tuple[str, ...], ...]] = (
    (
        "adws._checks",
        "adws._durations",
        "adws._exceptions",
        "adws._frozen",
        "adws._lazy",
        "adws._optional",
        "adws.io_ops",
    ),
    ("adws.engine", "adws.contract"),
    ("adws.shell", "adws.workspaces"),
    ("adws.agents",),
    ("adws.check", "adws.discovery", "adws.flows", "adws.otel"),
    ("adws.journal",),
    ("adws.render",),
    ("adws.runs",),
    ("adws.batch",),
    ("adws.tickets",),
    ("adws.mcp_server",),
    ("adws.testing",),
    ("adws.serve",),
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


def _parents(module: str) -> list[str]:
    """Name the packages whose `__init__.py` importing `module` runs (the root `adws` aside)."""
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(2, len(parts))]


def imports(known: dict[str, Path], *, lazy: bool = False) -> dict[str, dict[str, bool]]:
    """Map each module to the modules it imports, each with whether it is for types only.

    Importing `adws.contract.keys` runs `adws/contract/__init__.py` first, so
    it counts as an import of that package too (unless the importer lives in
    it). A module that hands names on through `lazy_names` (a lazy face)
    imports the modules its strings name on first use, never while it loads:
    with `lazy` they count (for the layers), without it neither they nor the
    face's typing imports of the same names do (they cannot close a circle).
    """
    return {name: _imports_of(name, path, known, lazy=lazy) for name, path in known.items()}


def _imports_of(name: str, path: Path, known: dict[str, Path], *, lazy: bool) -> dict[str, bool]:
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    face = any(
        isinstance(node, ast.Call) and getattr(node.func, "id", "") == "lazy_names"
        for node in ast.walk(tree)
    )
    edges: dict[str, bool] = {}
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            whole = [f"{node.module}.{alias.name}" for alias in node.names]
            targets = [each if each in known else node.module for each in whole]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif face and lazy and isinstance(node, ast.Constant) and node.value in known:
            targets = [str(node.value)]
        if face and not lazy and id(node) in typing_only:
            continue  # a lazy face's typing imports only show mypy the names it hands on
        for target in targets:
            for each in (*_parents(target), target):
                if each in known and each != name and not name.startswith(each + "."):
                    edges[each] = edges.get(each, True) and id(node) in typing_only
    return edges


def relative_imports(known: dict[str, Path]) -> list[str]:
    """List the relative imports (`from . import x`): every import names its module whole."""
    return [
        f"{name}:{node.lineno}"
        for name, path in known.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level
    ]


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
    """Return the layer a module belongs to (the longest name that holds it), or -1.

    `adws` itself is its `__init__.py` alone, not every module under it.
    """
    best, length = -1, -1
    for number, names in enumerate(LAYERS):
        for name in names:
            holds = module == name or (name != "adws" and module.startswith(name + "."))
            if holds and len(name) > length:
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
    assert upward(imports(modules(), lazy=True)) == []


def test_every_module_belongs_to_a_layer() -> None:
    assert [name for name in modules() if layer_of(name) < 0] == []


def test_every_import_names_its_module_whole() -> None:
    assert relative_imports(modules()) == []


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


def test_importing_a_module_of_a_folder_runs_the_folders_init_and_lazy_names_may_count(
    tmp_path: Path,
) -> None:
    """A circle through an `__init__.py` that imports back, or names a module for later."""
    package = tmp_path / "pkg"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nfrom pkg._lazy import lazy_names\n"
        "if TYPE_CHECKING:\n    from pkg.high import X\n"
        "__getattr__, __dir__ = lazy_names(__name__, {'X': 'pkg.high'})\n"
    )
    (package / "low" / "base.py").write_text("from pkg.low import other\n")
    (package / "low" / "other.py").write_text("")
    (package / "_lazy.py").write_text("")
    (package / "high.py").write_text("from pkg.low.base import thing\n")
    (package / "rel.py").write_text("from . import high\n")
    known = modules(package)
    graph = imports(known, lazy=True)
    assert graph["pkg.high"] == {"pkg.low": False, "pkg.low.base": False}
    assert graph["pkg.low.base"] == {"pkg.low.other": False}
    assert graph["pkg.low"] == {"pkg._lazy": False, "pkg.high": False}  # the string is run-time
    assert circles(graph) == [["pkg.high", "pkg.low"]]
    assert imports(known)["pkg.low"] == {"pkg._lazy": False}
    assert relative_imports(known) == ["pkg.rel:1"]


def test_an_import_from_a_lower_layer_to_a_higher_one_is_named() -> None:
    graph = {
        "adws.engine.executor": {"adws.journal.store.journal": True},
        "adws.cli.run": {"adws": False},
    }
    assert upward(graph) == ["adws.engine.executor -> adws.journal.store.journal"]
    assert (layer_of("adws"), layer_of("adws.newfolder.thing"), layer_of("adws.cli.run")) == (
        len(LAYERS) - 1,
        -1,
        len(LAYERS) - 1,
    )


SIGNALS: Final = frozenset({"KeyboardInterrupt", "SystemExit"})
"""What adws may raise outside `AdwsError`: a stopped step and a program's end (not errors)."""
_BUILTIN_EXCEPTIONS: Final = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)


def builtin_raises(known: dict[str, Path]) -> list[str]:
    """List each `raise` of a builtin exception (a signal aside): adws raises its own classes."""
    found = []
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name) and raised.id in _BUILTIN_EXCEPTIONS - SIGNALS:
                found.append(f"{name}:{node.lineno} raises {raised.id}")
    return found


def rootless_exceptions(known: dict[str, Path]) -> list[str]:
    """List the exception classes adws defines outside `AdwsError` (signals aside)."""
    from adws._exceptions import AdwsError  # noqa: PLC0415 - the root, imported as the test runs

    found: list[str] = []
    for name in known:
        if name.endswith("__main__"):
            continue
        found.extend(
            f"{name}.{value.__qualname__}"
            for value in vars(importlib.import_module(name)).values()
            if isinstance(value, type)
            and value.__module__ == name
            and issubclass(value, BaseException)
            and not issubclass(value, (AdwsError, KeyboardInterrupt))
        )
    return found


def test_adws_raises_no_builtin_exception_but_a_signal() -> None:
    assert builtin_raises(modules()) == []


def test_every_exception_adws_defines_derives_from_adws_error_or_is_a_signal() -> None:
    assert rootless_exceptions(modules()) == []


def test_a_raise_of_a_builtin_and_an_exception_outside_the_root_are_named(tmp_path: Path) -> None:
    """The checkers themselves, on a package that breaks both rules."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "bad.py").write_text(
        "def f():\n    raise ValueError('x')\n\ndef g():\n    raise KeyboardInterrupt\n"
        "\ndef h():\n    raise\n"
    )
    assert builtin_raises(modules(package)) == ["pkg.bad:2 raises ValueError"]


RUNS_DOOR: Final = ("adws.engine", "adws.runs")
"""Where `run_workflow` may be called: the engine itself, and the one path for a run."""
CLAIMS: Final = frozenset({"claim_batch", "claim_batch_run", "take_queued"})
"""The journal's functions that take a run (or a batch) for a process; `Journal.claim` too."""
_SQL: Final = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(TABLE|INDEX)|ALTER\s+TABLE|BEGIN\s+IMMEDIATE)\b",
    re.DOTALL,
)
OWN_PROGRAMS: Final = frozenset({"adws.testing.model_api", "adws.testing.github_api"})
"""Modules that are programs of their own (`python -m adws.testing.model_api`): they parse
their own command line, the one place outside `adws.cli` argparse may be."""


def _within(name: str, folders: tuple[str, ...]) -> bool:
    return any(name == folder or name.startswith(folder + ".") for folder in folders)


def _calls(path: Path) -> list[ast.Call]:
    return [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]


def run_workflow_callers(known: dict[str, Path]) -> list[str]:
    """Name the modules outside the engine and `adws.runs` that call `run_workflow`."""
    return [
        f"{name}:{call.lineno}"
        for name, path in known.items()
        if not _within(name, RUNS_DOOR)
        for call in _calls(path)
        if (isinstance(call.func, ast.Name) and call.func.id == "run_workflow")
        or (isinstance(call.func, ast.Attribute) and call.func.attr == "run_workflow")
    ]


def claimers(known: dict[str, Path]) -> list[str]:
    """Name the modules outside the journal and `adws.runs` that claim a run or a batch."""
    found = []
    for name, path in known.items():
        if _within(name, ("adws.journal", "adws.runs")):
            continue
        for call in _calls(path):
            func = call.func
            if (isinstance(func, ast.Name) and func.id in CLAIMS) or (
                isinstance(func, ast.Attribute) and func.attr == "claim"
            ):
                found.append(f"{name}:{call.lineno}")
    return found


def sql_outside_the_journal(known: dict[str, Path]) -> list[str]:
    """Name the SQL written outside `adws.journal`: every statement lives in the journal."""
    return [
        f"{name}:{node.lineno}"
        for name, path in known.items()
        if not _within(name, ("adws.journal",))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _SQL.search(node.value)
    ]


def argparse_users(known: dict[str, Path]) -> list[str]:
    """Name the modules outside `adws.cli` that import argparse (own programs aside)."""
    graph = {
        name: [
            node
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Import | ast.ImportFrom)
        ]
        for name, path in known.items()
    }
    return sorted(
        name
        for name, nodes in graph.items()
        if not _within(name, ("adws.cli",))
        and name not in OWN_PROGRAMS
        and any(
            (isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and node.module == "argparse")
            for node in nodes
        )
    )


def test_only_the_engine_and_adws_runs_call_run_workflow() -> None:
    assert run_workflow_callers(modules()) == []


def test_only_the_journal_and_adws_runs_claim_a_run() -> None:
    assert claimers(modules()) == []


def test_sql_is_written_in_the_journal_only() -> None:
    assert sql_outside_the_journal(modules()) == []


def test_argparse_stops_at_the_command_line() -> None:
    assert argparse_users(modules()) == []


def test_the_run_path_rules_name_what_breaks_them(tmp_path: Path) -> None:
    """The checkers themselves, on a package that breaks each rule once."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "door.py").write_text(
        "import argparse\nfrom x import run_workflow, take_queued\n\n"
        "def f(journal):\n    run_workflow(1)\n    journal.claim('r')\n    take_queued(journal)\n"
        "    return 'UPDATE runs SET status = ? WHERE run_id = ?'\n"
    )
    known = modules(package)
    assert run_workflow_callers(known) == ["pkg.door:5"]
    assert claimers(known) == ["pkg.door:6", "pkg.door:7"]
    assert sql_outside_the_journal(known) == ["pkg.door:8"]
    assert argparse_users(known) == ["pkg.door"]
