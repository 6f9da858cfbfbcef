"""Import an optional extra: the installed package, never a workflow module of the same name.

A workflows folder is on `sys.path` (after everything else), so helpers such
as `_common.py` import by plain name. A workflow file named like a package
that is not installed (`claude_agent_sdk.py`) would then be imported in its
place; `import_optional` refuses such a module, so the caller says how to
install the real one instead of failing somewhere inside it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws._exceptions import MissingExtraError

if TYPE_CHECKING:
    import types

__all__ = ["WORKFLOW_FOLDERS", "import_optional"]

WORKFLOW_FOLDERS: Final[set[Path]] = set()
"""The workflows folders discovery put on `sys.path` (resolved)."""


def import_optional(name: str) -> types.ModuleType:
    """Import `name`, or raise `ImportError` when it is missing or is a workflows-folder module.

    >>> import_optional("json").__name__
    'json'
    """
    module = importlib.import_module(name)
    file = getattr(module, "__file__", None)
    if file is not None and Path(file).resolve().parent in WORKFLOW_FOLDERS:
        msg = f"No module named {name!r} is installed ({file} in the workflows folder has its name)"
        raise MissingExtraError(msg)
    return module
