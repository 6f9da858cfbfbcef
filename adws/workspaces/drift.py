"""Drift: a kept worktree that is gone, or whose content is not what the run left.

A resume goes on in the worktrees a run kept (a failed step's, or one kept
`always`); it must not go on over edits made after the run recorded them
without saying so. For each worktree the journal says is present,
`drifted` hashes the folder's content as `worktree` does after every
attempt (tracked and untracked files git does not ignore, through a
scratch index: nothing in the worktree is touched) and compares it with the
hash journaled last, naming the files that differ. A worktree whose `.git`
no longer points at the git directory git made for it is drift too (adws's
git never follows it: see `adws.workspaces._git`). A worktree adws removed
itself is not drift: the resume makes a fresh one from the recorded base.

Nor are the edits of the attempt that was in flight when the run stopped
(a crash, a kill, a full disk, Ctrl-C): that attempt runs again, so
`reset_in_flight` puts the worktree back to the tree the journal recorded
last (files changed since back as they were, files added removed, ignored
files left alone). Drift is an edit made after a recorded end.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from adws.engine.errors import ErrorType
from adws.workspaces._git import (
    GitError,
    admin_dir,
    changed_files,
    git,
    output,
    points_at,
    tree_hash,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.engine.errors import PipelineError

__all__ = ["Attempted", "KeptWorktree", "drifted", "in_flight", "reset_in_flight"]


class KeptWorktree(Protocol):
    """What drift needs of a journaled worktree (`adws.journal.store.workspaces.WorktreeRecord`)."""

    @property
    def label(self) -> str:
        """The worktree's name in the run (the step's, or a branch's path)."""

    @property
    def step(self) -> str:
        """The step (or branch path) that ran in it: its attempts are recorded under this name."""

    @property
    def repo(self) -> str:
        """The repository's top level."""

    @property
    def path(self) -> str:
        """Its folder."""

    @property
    def tree(self) -> str:
        """The hash of its content when the run last left it (empty: never hashed)."""

    @property
    def state(self) -> str:
        """`present`, or what became of it."""

    @property
    def gitdir(self) -> str:
        """The git directory git made for it ("" when the journal predates recording it)."""

    @property
    def attempts(self) -> int | None:
        """How many of the run's attempt rows were recorded before it (None: unknown)."""


class Attempted(Protocol):
    """What telling an attempt in flight needs of an attempt row (`AttemptRecord`)."""

    @property
    def step(self) -> str:
        """The step or branch path the row is recorded under."""

    @property
    def error(self) -> PipelineError | None:
        """How the attempt failed (an `Interrupted` one was stopped in flight)."""


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


def _made(record: KeptWorktree) -> Path:
    """Return the git directory git made for the worktree: the journal's, else git's record."""
    if record.gitdir:
        return Path(record.gitdir)
    repo = Path(record.repo)
    common = output(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
    found = admin_dir(Path(common), Path(record.path))
    if found is None:
        msg = f"its repository {repo} keeps no record of it"
        raise GitError(msg)
    return found


def _checked(record: KeptWorktree, run_id: str) -> tuple[Path, str] | str:
    """Return the worktree's git directory and its content's hash now, or what is wrong."""
    path = Path(record.path)
    where = f"worktree {record.label} ({record.path})"
    if path.parts[-2:] != (run_id, record.label):
        return f"{where} is not a worktree adws made for run {run_id}"
    if not path.is_dir():
        return f"{where} is missing"
    try:
        gitdir = _made(record)
        pointed = points_at(path)
        if pointed != gitdir:
            now = "nothing" if pointed is None else str(pointed)
            return f"{where}: its .git points at {now}, not at {gitdir}, where git made it"
        return gitdir, tree_hash(path, gitdir=gitdir)
    except GitError as exc:
        return f"{where} is no longer a git worktree: {exc}"


def _drift(record: KeptWorktree, run_id: str) -> str | None:
    checked = _checked(record, run_id)
    if isinstance(checked, str):
        return checked
    gitdir, now = checked
    if not record.tree or now == record.tree:
        return None
    try:
        files = changed_files(Path(record.path), record.tree, now, gitdir=gitdir)
    except GitError:
        files = ()
    what = _names(files) if files else "its content"
    return (
        f"worktree {record.label} ({record.path}) changed since run {run_id} last recorded it:"
        f" {what}"
    )


def drifted(records: Sequence[KeptWorktree], run_id: str) -> list[str]:
    """Say, for each worktree the run kept, what is wrong with it; empty when nothing drifted."""
    found = (_drift(record, run_id) for record in records if record.state == "present")
    return [problem for problem in found if problem is not None]


def in_flight(record: KeptWorktree, attempts: Sequence[Attempted]) -> bool:
    """Tell whether the worktree's step recorded no end since the worktree was recorded.

    A row that says the attempt was interrupted (Ctrl-C, SIGTERM) is no
    end: the attempt was stopped in flight.
    """
    if record.state != "present" or not record.tree or record.attempts is None:
        return False
    return all(
        row.step != record.step
        or (row.error is not None and row.error.error_type == ErrorType.INTERRUPTED)
        for row in attempts[record.attempts :]
    )


def _remove_empty(folder: Path, top: Path) -> None:
    """Remove `folder` and the folders above it, up to `top`, while they are empty."""
    while folder != top:
        try:
            folder.rmdir()
        except OSError:  # not empty: it holds files the run made, or ignored ones
            return
        folder = folder.parent


def _restore(path: Path, gitdir: Path, tree: str, now: str) -> int:
    """Put the worktree's content back to `tree`; return how many files that changed."""
    listed = git(
        path, "diff-tree", "-r", "-z", "--no-renames", "--name-status", tree, now, gitdir=gitdir
    ).stdout.split("\0")
    changes = list(zip(listed[0::2], listed[1::2], strict=False))
    back = [name for status, name in changes if status != "A"]
    for status, name in changes:
        if status == "A":  # the attempt added it
            (path / name).unlink()
            _remove_empty((path / name).parent, path)
    if back:
        with tempfile.TemporaryDirectory(prefix="adws-reset-") as folder:
            env = {"GIT_INDEX_FILE": str(Path(folder) / "index")}
            git(path, "read-tree", tree, gitdir=gitdir, env=env)
            git(
                path,
                "checkout-index",
                "--force",
                "-z",
                "--stdin",
                gitdir=gitdir,
                env=env,
                stdin_text="\0".join(back),
            )
    return len(changes)


def reset_in_flight(
    records: Sequence[KeptWorktree], attempts: Sequence[Attempted], run_id: str
) -> list[str]:
    """Reset each worktree an attempt in flight changed to the tree the journal recorded last.

    Call it only for a run that stopped without recording its end (its
    process gone, or interrupted). A worktree is in flight when its step
    recorded no attempt row after the worktree's latest record, or only
    one that says it was interrupted (`attempts` are the run's rows in the
    order recorded). Returns one line per
    worktree reset, naming the run, the worktree and how many files were
    reset; a worktree that cannot be checked or reset is left as it is,
    for `drifted` to name.
    """
    said = []
    for record in records:
        if not in_flight(record, attempts):
            continue
        checked = _checked(record, run_id)
        if isinstance(checked, str) or checked[1] == record.tree:
            continue
        gitdir, now = checked
        try:
            count = _restore(Path(record.path), gitdir, record.tree, now)
        except (GitError, OSError):
            continue
        files = f"{count} file{'s' if count != 1 else ''}"
        said.append(
            f"run {run_id}: reset {files} in worktree {record.label} ({record.path}) to what the"
            " run last recorded: the attempt in flight when it stopped runs again"
        )
    return said
