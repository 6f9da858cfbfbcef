"""Drift: a kept worktree that is gone, or whose content is not what the run left.

A resume goes on in the worktrees a run kept (a failed step's, or one kept
`always`); it must not go on over someone's edits without saying so. For
each worktree the journal says is present, `drifted` hashes the folder's
content as `worktree` does after every attempt (tracked and untracked files
git does not ignore, through a scratch index: nothing in the worktree is
touched) and compares it with the hash journaled last, naming the files
that differ. A worktree adws removed itself is not drift: the resume makes
a fresh one from the recorded base.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from adws.workspaces._git import GitError, changed_files, tree_hash

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["KeptWorktree", "drifted"]


class KeptWorktree(Protocol):
    """What drift needs of a journaled worktree (`adws.journal.workspaces.WorktreeRecord`)."""

    @property
    def label(self) -> str:
        """The worktree's name in the run (the step's, or a branch's path)."""

    @property
    def path(self) -> str:
        """Its folder."""

    @property
    def tree(self) -> str:
        """The hash of its content when the run last left it (empty: never hashed)."""

    @property
    def state(self) -> str:
        """`present`, or what became of it."""


_NAMED = 20
"""How many changed files a refusal names before it says how many more there are."""


def _names(files: Sequence[str]) -> str:
    """Name the files, the first `_NAMED` of them.

    >>> _names(["a.py"]), _names([f"f{i}" for i in range(22)])[-14:]
    ('a.py', 'f19 and 2 more')
    """
    shown = ", ".join(files[:_NAMED])
    more = len(files) - _NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def _drift(record: KeptWorktree, run_id: str) -> str | None:
    path = Path(record.path)
    where = f"worktree {record.label} ({record.path})"
    if path.parts[-2:] != (run_id, record.label):
        return f"{where} is not a worktree adws made for run {run_id}"
    if not path.is_dir():
        return f"{where} is missing"
    try:
        now = tree_hash(path)
    except GitError as exc:
        return f"{where} is no longer a git worktree: {exc}"
    if not record.tree or now == record.tree:
        return None
    try:
        files = changed_files(path, record.tree, now)
    except GitError:
        files = ()
    what = _names(files) if files else "its content"
    return f"{where} changed since the run last left it: {what}"


def drifted(records: Sequence[KeptWorktree], run_id: str) -> list[str]:
    """Say, for each worktree the run kept, what is wrong with it; empty when nothing drifted."""
    found = (_drift(record, run_id) for record in records if record.state == "present")
    return [problem for problem in found if problem is not None]
