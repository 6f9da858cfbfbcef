"""Where worktrees live by default: a folder of adws's own, outside any project.

A worktree inside the project that runs adws makes pytest, ruff and mypy in
the target repository find that project's configuration by looking upward
(its `rootdir`, its `conftest.py`): node ids change and a `--deselect`
selects nothing. So the shared worktrees folder is `$ADWS_WORKTREES`, else
`$XDG_CACHE_HOME/adws/worktrees` (`~/.cache/adws/worktrees` when unset),
and holds one folder per repository (`repository_key`) before the run's.
Any worktrees folder, chosen or not, must lie outside every checkout:
`outside_checkouts` refuses one that does not, naming the checkout.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws.workspaces._git import GitError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ENV_VAR", "outside_checkouts", "repository_key", "shared_root"]

ENV_VAR: Final = "ADWS_WORKTREES"
"""The environment variable that names the shared worktrees folder."""


def shared_root(environ: Mapping[str, str], home: Path) -> Path:
    """Name the shared worktrees folder: `$ADWS_WORKTREES`, else in the user's cache folder.

    >>> shared_root({}, Path("/home/u"))
    PosixPath('/home/u/.cache/adws/worktrees')
    >>> shared_root({"XDG_CACHE_HOME": "/c"}, Path("/home/u"))
    PosixPath('/c/adws/worktrees')
    >>> shared_root({"ADWS_WORKTREES": "/w", "XDG_CACHE_HOME": "/c"}, Path("/home/u"))
    PosixPath('/w')
    """
    chosen = environ.get(ENV_VAR, "")
    if chosen:
        return Path(chosen)
    cache = environ.get("XDG_CACHE_HOME", "")
    # The XDG spec ignores a relative XDG_CACHE_HOME: so do we.
    base = Path(cache) if cache and Path(cache).is_absolute() else home / ".cache"
    return base / "adws" / "worktrees"


def repository_key(top: Path, common: Path) -> str:
    """Name a repository's folder in the shared worktrees folder: its name and a hash of its place.

    The hash of its git directory tells two repositories of one name apart;
    the name is there for people listing the folder.

    >>> repository_key(Path("/src/my app"), Path("/src/my app/.git"))
    'my-app-1199efe74afc'
    """
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", top.name).strip("-.") or "repo"
    digest = hashlib.sha256(str(common).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{name}-{digest}"


def outside_checkouts(root: Path) -> Path:
    """Return `root` (absolute) if no checkout holds it; else raise `GitError` saying which does.

    A checkout is a folder with a `.git` entry (a folder, or a worktree's
    file); `root` and every folder above it are looked at.
    """
    root = root.resolve()
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            msg = (
                f"the worktrees folder {root} is inside the checkout {folder}: tools run in a"
                " worktree there (pytest, ruff, mypy) would read that checkout's configuration;"
                f" choose a folder outside any checkout (--worktrees, ${ENV_VAR}; the default is"
                " $XDG_CACHE_HOME/adws/worktrees)"
            )
            raise GitError(msg)
    return root
