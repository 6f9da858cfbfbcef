"""Find `Workflow` objects in a folder of workflow modules."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Final, final

import attrs

from adws._frozen import freeze_mapping
from adws._optional import WORKFLOW_FOLDERS
from adws.engine.step import Workflow

__all__ = ["ENV_VAR", "Catalog", "LoadError", "discover_workflows", "workflows_dir"]

ENV_VAR: Final = "ADWS_WORKFLOWS"
_MODULE_PREFIX: Final = "adws_workflows"


def workflows_dir(given: str | None, cwd: Path | None = None) -> Path:
    """Pick the workflows folder: `--workflows`, then `ADWS_WORKFLOWS`, then `./workflows`."""
    chosen = given or os.environ.get(ENV_VAR) or "workflows"
    return (cwd or Path.cwd()) / chosen


@final
@attrs.frozen
class LoadError:
    """A workflow module that could not be loaded, and why."""

    path: Path
    message: str

    def __str__(self) -> str:
        """Render `file: error`."""
        return f"{self.path.name}: {self.message}"


@final
@attrs.frozen
class Catalog:
    """The workflows found in one folder, by name, and the modules that failed."""

    directory: Path
    workflows: Mapping[str, Workflow] = attrs.field(converter=freeze_mapping)
    sources: Mapping[str, Path] = attrs.field(converter=freeze_mapping)
    errors: tuple[LoadError, ...] = ()
    conflicts: Mapping[str, tuple[Path, ...]] = attrs.field(factory=dict, converter=freeze_mapping)
    """Workflow names that more than one module defines, with every such module."""


def _load(path: Path) -> object:
    name = f"{_MODULE_PREFIX}.{path.stem}"
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    # A spec with a location sets __file__ (and __cached__), as an import would.
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type] # a path always has a spec
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _describe(exc: BaseException, path: Path) -> str:
    """Name the error and the line of `path` it came from.

    A syntax error carries its own line; for anything raised while the
    module ran, the line is the deepest frame in the module's own file.
    """
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
    line = f" (line {frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{line}"


def discover_workflows(directory: Path) -> Catalog:
    """Import every `*.py` in `directory` (but `_*.py`) and collect its workflows.

    A module that fails to import, or that defines a workflow name another
    module already used, is listed in `errors` by file name; the others still
    load. A missing folder yields an empty catalog with one error. The folder
    is put at the end of `sys.path`, so workflow modules can import private
    helpers such as `_common.py` by plain name while a workflow file named
    `uuid.py` or `socket.py` shadows nothing of the standard library or the
    installed packages; an optional extra is never taken for a workflow file
    of the same name (see `adws._optional`). Each module has `__file__`
    set, as an imported one. A `*.py` that is not a regular file (a FIFO, a
    dangling link) is listed in `errors` unread.
    """
    workflows: dict[str, Workflow] = {}
    sources: dict[str, Path] = {}
    errors: list[LoadError] = []
    conflicts: dict[str, tuple[Path, ...]] = {}
    if not directory.is_dir():
        errors.append(LoadError(directory, "no such folder of workflow modules"))
        return Catalog(directory, workflows, sources, tuple(errors), conflicts)
    folder = str(directory.resolve())
    if folder not in sys.path:
        sys.path.append(folder)
    WORKFLOW_FOLDERS.add(Path(folder))
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        if not path.is_file():  # a FIFO, a device, a dangling link: reading it could hang
            errors.append(LoadError(path, "not a regular file"))
            continue
        try:
            module = _load(path)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken module is reported, the rest still load
            errors.append(LoadError(path, _describe(exc, path)))
            continue
        found = {id(v): v for v in vars(module).values() if isinstance(v, Workflow)}
        for value in found.values():
            if workflows.get(value.name) is value:
                continue
            if value.name in workflows:
                other = sources[value.name].name
                message = f"workflow {value.name!r} is already defined in {other}"
                errors.append(LoadError(path, message))
                conflicts[value.name] = (*conflicts.get(value.name, (sources[value.name],)), path)
                continue
            workflows[value.name] = value
            sources[value.name] = path
    return Catalog(directory, workflows, sources, tuple(errors), conflicts)
