"""`fast_forward`: move a checkout's current branch to a commit a worktree made."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_type
from adws.contract.template import check_template, render_for_step
from adws.engine.errors import PipelineError
from adws.engine.step import Step
from adws.workspaces._git import GitError, git, output, uncommitted
from adws.workspaces._session import WORKSPACE_FAILED
from adws.workspaces.worktrees import check_repo

if TYPE_CHECKING:
    from adws.engine.context import WorkflowContext

__all__ = ["FastForwardSpec", "fast_forward"]


@final
@attrs.frozen
class FastForwardSpec:
    """Describe a `fast_forward` step, for `adws show`, `adws check` and the fingerprint."""

    repo: str
    commit: str

    def describe(self) -> str:
        """Say what the step does, for `adws show`."""
        return f"fast-forwards the branch checked out in {self.repo} to {self.commit}"


def _moved(name: str, checkout: Path, commit: str) -> dict[str, object]:
    """Fast-forward `checkout` to `commit`; raise `GitError` with git's reason if it cannot."""
    before = output(checkout, "rev-parse", "HEAD")
    git(checkout, "merge", "--ff-only", "--quiet", commit)
    branch = output(checkout, "rev-parse", "--abbrev-ref", "HEAD")
    after = output(checkout, "rev-parse", "HEAD")
    return {f"{name}_branch": branch, f"{name}_from": before, f"{name}_to": after}


def _dirty(name: str, checkout: Path, files: tuple[str, ...]) -> PipelineError:
    message = (
        f"the checkout {checkout} has uncommitted changes to {', '.join(files)}: commit or"
        " stash them, then resume the run"
    )
    return PipelineError(
        name, WORKSPACE_FAILED, message, {"repo": str(checkout), "files": list(files)}
    )


def fast_forward(name: str, *, commit: str, repo: str = "{target_dir}") -> Step:
    """Build a step that fast-forwards `repo`'s current branch to `commit`.

    `commit` is usually a placeholder for what a `worktree` or `best_of`
    step made (`{best_commit}`). The checkout must have no uncommitted
    changes to tracked files: otherwise the step fails (`WorkspaceFailed`,
    naming the files, with `context["files"]`) and nothing moves; commit
    or stash them and resume the run. A branch that moved on so that no
    fast-forward is possible fails with git's message, as does an
    untracked file the new commit would overwrite. Outputs:
    `<name>_branch` (the branch that moved, `HEAD` when detached),
    `<name>_from` and `<name>_to` (the commits before and after).
    """
    owner = f"fast_forward {name!r}"
    check_repo(owner, repo)
    require_type(
        owner, "commit", commit, str, "a revision or a placeholder such as '{best_commit}'"
    )
    check_template(commit, owner=owner, what="the commit")

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        where = render_for_step(repo, ctx.inputs, step_name=name, what="the repo")
        target = render_for_step(commit, ctx.inputs, step_name=name, what="the commit")
        if isinstance(where, PipelineError):
            return IOFailure(where)
        if isinstance(target, PipelineError):
            return IOFailure(target)
        try:
            checkout = Path(output(Path(where).resolve(), "rev-parse", "--show-toplevel"))
            dirty = uncommitted(checkout)
            if dirty:
                return IOFailure(_dirty(name, checkout, dirty))
            outputs = _moved(name, checkout, target)
        except GitError as exc:
            return IOFailure(PipelineError(name, WORKSPACE_FAILED, str(exc), {"repo": where}))
        return IOSuccess(ctx.merge_outputs(outputs))

    return Step(name, run, kind="fast_forward", spec=FastForwardSpec(repo, commit))
