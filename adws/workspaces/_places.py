"""Where a run's worktrees live, and how they are made, found again and removed.

A worktree of label L in run R is the folder `<worktrees>/R/L` on the
branch `adws/R/L`: `<worktrees>` is the folder the run was given, else
`<shared folder>/<repository key>` (see `adws.workspaces._home`: outside any
project by default); either is refused inside a checkout. Making one
holds the repository's worktree lock (`repository_lock`), so concurrent
runs on one repository never collide; the worktrees folder holds a
`.gitignore` of `*`, so a checkout it happens to lie in never sees them.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import attrs

from adws.workspaces._git import GitError, admin_dir, git, on_branch, output, repository_lock
from adws.workspaces._home import outside_checkouts, repository_key, shared_root

if TYPE_CHECKING:
    from adws.engine.scope import RunScope

__all__ = [
    "Place",
    "branch_label",
    "branch_name",
    "discard_branch",
    "locate",
    "open_worktree",
    "remove_worktree",
]

_IGNORE_ALL: Final = "*\n"
"""The `.gitignore` of the worktrees folder."""
_RUN_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
"""A run id that names one folder and one branch component (adws's own are 12 hex digits)."""


@final
@attrs.frozen
class Place:
    """Where one worktree lives: its repository, folder, branch and base commit."""

    repo: Path
    """The repository's top level (its main checkout)."""
    common: Path
    """The repository's git directory (shared by its worktrees): where the lock lives."""
    path: Path
    branch: str
    base: str
    label: str
    step: str
    """The step (or branch path) that made it, for the journal."""
    run_id: str
    gitdir: Path | None = None
    """The git directory git made for it (None until it is made): every git command names it."""


def branch_label(name: str, branch: str) -> str:
    """Name a worktree after its step and, inside a parallel branch, that branch.

    >>> branch_label("impl", ""), branch_label("impl", "items[2]")
    ('impl', 'impl-items-2')
    >>> branch_label("lint", "checks[lint]")
    'checks-lint'
    """
    if not branch:
        return name
    flat = re.sub(r"[^a-z0-9_]+", "-", branch.lower()).strip("-")
    return flat if branch.endswith(f"[{name}]") else f"{name}-{flat}"


def branch_name(run_id: str, label: str) -> str:
    """Name the branch of a run's worktree; refuse a run id that cannot name a branch and a folder.

    adws's own run ids (hex) always can; one a library caller chose must be
    letters, digits, `_` and `-` (a `/`, `..` or a space would make another
    folder, or no branch git accepts).

    >>> branch_name("3f2a9c1d0b7e", "impl-items-2")
    'adws/3f2a9c1d0b7e/impl-items-2'
    >>> branch_name("../x", "impl")
    Traceback (most recent call last):
    adws.workspaces._git.GitError: run id '../x' cannot name a worktree's branch and folder: use letters, digits, '_' and '-'
    """  # noqa: E501
    if not _RUN_ID.fullmatch(run_id):
        msg = (
            f"run id {run_id!r} cannot name a worktree's branch and folder: use letters, digits,"
            " '_' and '-'"
        )
        raise GitError(msg)
    return f"adws/{run_id}/{label}"


def _root(scope: RunScope, top: Path, common: Path) -> Path:
    """Name the folder the run folders go in: the one the run was given, else the shared one."""
    if scope.worktrees:
        return outside_checkouts(Path(scope.worktrees))
    return outside_checkouts(shared_root(os.environ, Path.home()) / repository_key(top, common))


def _registered(place: Place) -> Place | None:
    """Find the worktree of `place` git keeps, with its git directory, wherever it lives.

    At `place.path` first; else the one git keeps on the place's branch (a
    run recorded when worktrees lived elsewhere, `.adws/worktrees` in the
    project, goes on where it is). None when there is none, or its folder is gone.
    """
    if place.path.is_dir():
        gitdir = admin_dir(place.common, place.path)
        return None if gitdir is None else attrs.evolve(place, gitdir=gitdir)
    found = on_branch(place.common, place.branch)
    if found is None:
        return None
    path, gitdir = found
    return attrs.evolve(place, path=path, gitdir=gitdir) if path.is_dir() else None


def locate(repo_text: str, label: str, step: str, scope: RunScope) -> Place:
    """Find the repository and where the worktree for `label` goes; the base is not resolved yet."""
    run_id = scope.run_id or "unrecorded"
    branch = branch_name(run_id, label)
    asked = (Path(repo_text).resolve(), "rev-parse", "--path-format=absolute")
    found = output(*asked, "--show-toplevel", "--git-common-dir").split("\n")
    if len(found) == 2:  # noqa: PLR2004 - one line each, in the order asked
        top, common = found
    else:  # a folder name with a line break in it: ask for each alone
        top, common = output(*asked, "--show-toplevel"), output(*asked, "--git-common-dir")
    path = _root(scope, Path(top), Path(common)) / run_id / label
    return Place(Path(top), Path(common), path, branch, "", label, step, run_id)


def open_worktree(place: Place, base_text: str, scope: RunScope) -> Place:
    """Make the worktree (or find the one an earlier session kept) and return it with its base.

    A resumed run starts a worktree adws removed from the base it recorded
    (`scope.bases`); a new one starts from `base_text` (`HEAD`: the
    commit the repository's checkout is on). The branch is made, or reset
    to that base (its earlier commits stay in git's reflog).
    """
    recorded = scope.bases.get(place.label)
    kept = _registered(place)
    if kept is not None:
        base = recorded or output(kept.path, "rev-parse", "HEAD", gitdir=kept.gitdir)
        return attrs.evolve(kept, base=base)
    base = recorded or _commit_of(place.repo, base_text)
    with repository_lock(place.common):
        git(place.repo, "worktree", "prune")
        root = place.path.parent.parent
        root.mkdir(parents=True, exist_ok=True)
        ignore = root / ".gitignore"
        if not ignore.exists():
            ignore.write_text(_IGNORE_ALL, encoding="utf-8")
        git(
            place.repo,
            "worktree",
            "add",
            "--quiet",
            "--no-checkout",
            "-B",
            place.branch,
            str(place.path),
            base,
        )
        # Read back before any step runs; from git's own record, never the worktree's `.git`.
        gitdir = admin_dir(place.common, place.path)
    if gitdir is None:
        msg = f"git made the worktree {place.path} but keeps no record of it in {place.common}"
        raise GitError(msg)
    # The checkout writes only the worktree's own index and files: outside the lock, so the
    # worktrees of a best_of (or of several runs) are checked out side by side. A checkout
    # that did not finish (a full disk, Ctrl-C) leaves no half-filled worktree to go on in.
    try:
        git(place.path, "reset", "--quiet", "--hard", gitdir=gitdir)
    except BaseException:
        with contextlib.suppress(GitError, OSError):
            remove_worktree(place)
        raise
    return attrs.evolve(place, base=base, gitdir=gitdir)


def _commit_of(repo: Path, revision: str) -> str:
    found = git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}", ok=(0, 1))
    if found.returncode != 0:
        msg = f"base {revision!r} is not a commit of the repository {repo}"
        raise GitError(msg)
    return found.stdout.strip()


def remove_worktree(place: Place) -> None:
    """Remove the worktree's folder (whatever it holds) and git's record of it; keep the branch."""
    with repository_lock(place.common):
        if place.path.is_dir():
            git(place.repo, "worktree", "remove", "--force", "--force", str(place.path))
        else:  # gone already (removed by hand): forget git's record of it
            git(place.repo, "worktree", "prune")
    # The run's folder goes with its last worktree (one still there keeps it).
    with contextlib.suppress(OSError):
        place.path.parent.rmdir()


def discard_branch(place: Place) -> None:
    """Remove the worktree, if any, and delete its branch (a `best_of` loser's)."""
    remove_worktree(place)
    git(place.repo, "branch", "--quiet", "-D", place.branch, ok=(0, 1))
