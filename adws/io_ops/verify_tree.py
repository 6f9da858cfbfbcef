"""The folder a round's checks run in: the base commit plus the round's change, built by adws.

An agent works in its worktree, and with it in that worktree's git
metadata; checks that ran there would see whatever it left in either.
`build_verify_tree` copies the worktree's files (every file and symbolic
link, ignored ones included; never `.git`, never the caches tools rebuild,
`adws.io_ops.changes.CACHES`; no pipe, socket or device) into a fresh
folder beside it, and gives that folder a git directory of adws's own: a
new repository (no hook, no configuration but git's defaults and the
user's global ones, no `info/exclude` or `info/attributes`) that reads
the project's objects through `objects/info/alternates`, with `HEAD` on
the base commit and an index of it (so `git status` there shows the
change). Replace objects are never read (`GIT_NO_REPLACE_OBJECTS=1`).

A symbolic link the round made or changed that points outside the folder
(absolute, or through `..` past the top) is refused: copied, it would
bring into the checks files no one compared (`TreeError`). A file that
cannot be read is refused too. `remove_verify_tree` deletes the folder,
whatever the checks left in it.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws._exceptions import ToolError
from adws.io_ops.changes import listing

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["TreeError", "build_verify_tree", "escapes", "remove_verify_tree"]

_GIT_SECONDS: Final = 120.0
_BRANCH: Final = "adws-verify"
_NO_CODE: Final = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=")
_GIT_PLACES: Final = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)
"""Variables that would point adws's git at another repository than the one it names."""


class TreeError(ToolError):
    """The round's change cannot make a verify tree: the message names the path and why."""


def escapes(path: str, target: str) -> bool:
    """Tell whether a symbolic link at `path` (relative, `/`) to `target` points outside the top.

    >>> escapes("tests/data", "../fixtures"), escapes("tests/data", "../../etc")
    (False, True)
    >>> escapes("a", "/etc/passwd")
    True
    """
    if posixpath.isabs(target):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return joined == ".." or joined.startswith("../")


def _env() -> dict[str, str]:
    kept = {key: value for key, value in os.environ.items() if key not in _GIT_PLACES}
    return {**kept, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1"}


def _git(cwd: Path, *args: str, gitdir: str | Path | None = None) -> str:
    where = ["-C", str(cwd)] + ([f"--git-dir={gitdir}"] if gitdir is not None else [])
    done = subprocess.run(  # noqa: S603 - git, with arguments adws chose
        ["git", *_NO_CODE, *where, *args],  # noqa: S607 - git from PATH, as everywhere
        capture_output=True,
        text=True,
        timeout=_GIT_SECONDS,
        check=False,
        env=_env(),
    )
    if done.returncode != 0:
        msg = f"git {args[0]} for the verify tree {cwd} failed: {done.stderr.strip()}"
        raise TreeError(msg)
    return done.stdout


def _link(path: str, target: str, links: Mapping[str, str]) -> None:
    """Refuse a link the round made or changed that points outside the workspace."""
    if links.get(path) != target and escapes(path, target):
        msg = (
            f"the symbolic link {path} points outside the workspace (to {target}):"
            " the checks cannot use it; link inside the workspace or copy the file"
        )
        raise TreeError(msg)


def _copy(source: Path, folder: Path, paths: Mapping[str, int], links: Mapping[str, str]) -> None:
    """Copy each of `paths` (as `listing` gave them) from `source` into `folder`; see the module."""
    for path, mode in sorted(paths.items()):
        origin, copy = source / path, folder / path
        copy.parent.mkdir(parents=True, exist_ok=True)
        try:
            if stat.S_ISLNK(mode):
                target = str(origin.readlink())
                _link(path, target, links)
                copy.symlink_to(target)
            elif stat.S_ISREG(mode):
                shutil.copy2(origin, copy, follow_symlinks=False)
        except TreeError:
            raise
        except OSError as exc:
            msg = f"could not read {path} to check it: {exc.strerror}; make it readable"
            raise TreeError(msg) from exc


def build_verify_tree(
    source: str | Path,
    *,
    base: str,
    gitdir: str | Path,
    links: Mapping[str, str],
    parent: str | Path,
) -> Path:
    """Build a verify tree of `source` (a worktree on `base`) in a new folder under `parent`.

    `gitdir` is the worktree's git directory (the project's objects are
    found from it); `links` maps the symbolic links the workspace had
    before the round to their targets (those may point anywhere). Raises
    `TreeError` (nothing left behind) when the tree cannot be made.
    """
    try:
        paths = listing(source)
    except OSError as exc:
        msg = f"could not read the workspace {source} to check it: {exc}"
        raise TreeError(msg) from exc
    folder = Path(tempfile.mkdtemp(prefix=f"{Path(source).name}.verify-", dir=parent))
    try:
        _copy(Path(source), folder, paths, links)
        where = Path(source)
        objects = _git(
            where, "rev-parse", "--path-format=absolute", "--git-path", "objects", gitdir=gitdir
        ).strip()
        _git(folder, "init", "--quiet", "--template=", f"--initial-branch={_BRANCH}", ".")
        alternates = folder / ".git" / "objects" / "info" / "alternates"
        alternates.parent.mkdir(parents=True, exist_ok=True)
        alternates.write_text(objects + "\n", encoding="utf-8")
        _git(folder, "update-ref", "HEAD", base)
        _git(folder, "read-tree", base)
    except BaseException:
        remove_verify_tree(folder)
        raise
    return folder


def remove_verify_tree(folder: str | Path) -> None:
    """Delete a verify tree and whatever the checks left in it (read-only folders too)."""
    top = Path(folder)
    with contextlib.suppress(OSError):
        top.chmod(stat.S_IRWXU)
    for root, names, _files in os.walk(top):  # top down: each folder opened before it is read
        for name in names:
            inner = Path(root, name)
            if not inner.is_symlink():
                with contextlib.suppress(OSError):
                    inner.chmod(stat.S_IRWXU)
    shutil.rmtree(top, ignore_errors=True)
