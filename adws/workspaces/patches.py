"""A worktree's edits as a patch: taken after an agent call or an attempt, applied on replay.

The journal keeps what each agent call changed in its worktree (the
patch between the worktree's content just before the call and just
after), so `adws run W --replay RUN` can put the files back as the
recorded agent left them; and what each attempt of a `worktree` step
left, against the worktree's base commit, so a reviewer reads the change
(`adws status R --step S -v`, `adws approvals -v`, `adws report`) on any
machine, without the worktree.

A patch is `git diff --binary` between two trees `tree_hash` made
(tracked and untracked files git does not ignore, renames as a delete
and an add, file modes and binary files included), decoded so that bytes
that are not UTF-8 survive (`surrogateescape`): applying it writes back
the very bytes. `git apply` itself refuses a path outside the worktree
(`..`, a `.git` folder, a path beyond a symbolic link), so a forged
journal row cannot write elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, final

from adws.engine.scope import current_gitdir, current_worktree
from adws.workspaces._git import GitError, git, tree_hash

__all__ = ["CallEdits", "GitError", "apply_patch", "patch_between", "snapshot"]

_DIFF: Final = ("diff-tree", "-p", "--binary", "--full-index", "--no-renames", "--no-color")
"""Whole object names and binary data: a patch `git apply` takes back exactly."""


def _gitdir(gitdir: str | Path | None) -> Path | None:
    return Path(gitdir) if gitdir else None


def snapshot(worktree: str | Path, gitdir: str | Path | None = None) -> str:
    """Write the worktree's content as a git tree and return its id (see `tree_hash`)."""
    return tree_hash(Path(worktree), gitdir=_gitdir(gitdir))


def patch_between(
    worktree: str | Path, before: str, after: str, gitdir: str | Path | None = None
) -> str:
    """Return the patch that turns tree (or commit) `before` into `after`; "" when they match."""
    if before == after:
        return ""
    found = git(
        Path(worktree),
        *_DIFF,
        before,
        after,
        gitdir=_gitdir(gitdir),
        stdout_errors="surrogateescape",
    )
    return found.stdout


def apply_patch(worktree: str | Path, patch: str, gitdir: str | Path | None = None) -> None:
    """Apply `patch` to the worktree's files (not its index); raise `GitError` if it does not fit.

    Whitespace is taken as it is (`--whitespace=nowarn`, whatever the
    user's `apply.whitespace` says): the patch is what the agent wrote.
    """
    if not patch:
        return
    git(
        Path(worktree),
        "apply",
        "--binary",
        "--whitespace=nowarn",
        "-",
        gitdir=_gitdir(gitdir),
        stdin_text=patch,
    )


@final
class CallEdits:
    """What one agent call changes in the worktree in flight: a snapshot now, a patch after.

    Outside a worktree (`adws.engine.scope.current_worktree`) it takes
    nothing and `patch()` is None; so it is when git cannot snapshot the
    worktree: the call goes on, only its patch is not journaled.
    """

    def __init__(self) -> None:
        """Snapshot the worktree in flight, if there is one."""
        self.folder = current_worktree()
        self.gitdir = current_gitdir()
        self.before: str | None = None
        if self.folder is not None:
            try:
                self.before = snapshot(self.folder, self.gitdir)
            except GitError:
                self.before = None

    def patch(self) -> str | None:
        """Return what changed in the worktree since the snapshot ("" for nothing), or None."""
        if self.folder is None or self.before is None:
            return None
        try:
            return patch_between(
                self.folder, self.before, snapshot(self.folder, self.gitdir), self.gitdir
            )
        except GitError:
            return None
