"""A run's branches as litter: those that hold nothing a person would lose are deleted.

Every worktree is on a branch `adws/<run>/<name>`. Once the run has ended,
a branch whose tip is contained in the branch its checkout is on (the one
`fast_forward` moved), or whose tree equals that branch's (a squash merge),
holds nothing that branch does not: it is deleted (`delete_merged`). Only
branches named `adws/<run>/...` of the run asked about are ever deleted,
and a branch a worktree is on never is (git refuses: the worktree keeps it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from adws.workspaces._git import GitError, git

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "delete_branch",
    "delete_branches_of",
    "delete_merged",
    "delete_run_branches",
    "merged",
    "owned_by",
]


def owned_by(branch: str, run_id: str) -> bool:
    """Tell whether `branch` is one adws made for run `run_id` (`adws/<run>/...`).

    >>> owned_by("adws/r1/impl", "r1"), owned_by("adws/r10/impl", "r1"), owned_by("main", "r1")
    (True, False, False)
    >>> owned_by("adws/r1/", "r1"), owned_by("adws//impl", "")
    (False, False)
    """
    prefix = f"adws/{run_id}/"
    return bool(run_id) and branch.startswith(prefix) and len(branch) > len(prefix)


def _tip(repo: Path, branch: str) -> str | None:
    found = git(
        repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", ok=(0, 1)
    )
    return found.stdout.strip() if found.returncode == 0 else None


def merged(repo: Path, branch: str, into: str = "HEAD") -> bool:
    """Tell whether `into` holds all `branch` holds: its tip is an ancestor, or the trees are equal.

    An equal tree (an empty two-dot diff) is how a squash merge shows: the
    commits differ, the content does not. A branch that is not there holds
    nothing.
    """
    tip = _tip(repo, branch)
    if tip is None:
        return True
    if git(repo, "merge-base", "--is-ancestor", tip, into, ok=(0, 1)).returncode == 0:
        return True
    return git(repo, "diff", "--quiet", into, tip, "--", ok=(0, 1)).returncode == 0


def delete_branch(repo: Path, branch: str) -> bool:
    """Delete `branch`; False when git refuses (a worktree is on it) or it is gone already."""
    return git(repo, "branch", "--quiet", "-D", branch, ok=(0, 1)).returncode == 0


def delete_merged(repo: Path, run_id: str, branches: Iterable[str]) -> tuple[str, ...]:
    """Delete each of the run's `branches` its repository's checked-out branch holds; name them.

    Branches not named `adws/<run_id>/...` are passed over, and so is a
    repository git cannot read any more (moved, deleted): nothing there to tidy.
    """
    gone: list[str] = []
    for branch in dict.fromkeys(branches):
        if not owned_by(branch, run_id):
            continue
        try:
            if (
                _tip(repo, branch) is not None
                and merged(repo, branch)
                and delete_branch(repo, branch)
            ):
                gone.append(branch)
        except GitError:
            continue
    return tuple(gone)


def delete_run_branches(repo: Path, run_id: str) -> tuple[str, ...]:
    """Delete every branch `adws/<run_id>/...` of `repo` no worktree is on; name those deleted.

    For a run that leaves the journal (`adws runs --prune`) or was only an
    evaluation's (`adws eval`): nothing adws keeps names them any more. A
    repository git cannot read deletes nothing.
    """
    if not run_id or "/" in run_id:
        return ()
    try:
        listed = git(
            repo, "for-each-ref", "--format=%(refname:short)", f"refs/heads/adws/{run_id}/"
        )
    except GitError:
        return ()
    return tuple(b for b in listed.stdout.split() if owned_by(b, run_id) and delete_branch(repo, b))


def delete_branches_of(repos_by_run: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    """Delete the branches of each run in each of its repositories (`delete_run_branches`)."""
    gone: list[str] = []
    for run_id, repos in repos_by_run.items():
        for repo in dict.fromkeys(repos):
            if repo:
                gone.extend(delete_run_branches(Path(repo), run_id))
    return tuple(gone)
