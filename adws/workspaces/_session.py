"""One worktree's life inside a run: made (or found again), journaled, committed, removed.

`Session` runs a step in a fresh worktree (or in the one an earlier,
failed session of the run kept: see `adws.workspaces._places`), hashes the
worktree's content after each attempt and tells the run's observers
(`WorktreeRecorded`, which the journal keeps), commits after a success,
and removes the folder when its `keep` policy says so. Branches stay,
but one that holds no commit goes with its worktree (see `adws.workspaces.branches`).
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws import io_ops
from adws.contract.template import render_for_step
from adws.engine.context import WorkflowContext
from adws.engine.errors import PipelineError
from adws.engine.events import WorktreeRecorded
from adws.engine.protect import Guard, Rules
from adws.engine.retry import current_attempt, retry_step
from adws.engine.scope import current_branch, current_scope, in_worktree
from adws.workspaces._git import GitError, commit_all, diffstat, output, tree_hash
from adws.workspaces._places import (
    Place,
    branch_label,
    locate,
    open_worktree,
    remove_worktree,
)
from adws.workspaces._seeding import provide
from adws.workspaces.branches import delete_branch
from adws.workspaces.patches import patch_between
from adws.workspaces.seeds import SeedError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from adws.engine.scope import RunScope
    from adws.engine.step import Step, StepFunction
    from adws.workspaces.seeds import SeedSpec

__all__ = ["KEEP", "WORKSPACE_FAILED", "Keep", "Session"]

Keep: TypeAlias = Literal["on_failure", "always", "never"]
KEEP: Final = ("on_failure", "always", "never")
WORKSPACE_FAILED: Final = "WorkspaceFailed"
"""The error kind of a worktree git could not make, commit or remove (git's message kept)."""


@final
class _Folders:
    """The worktree folders sessions of this process are in: two branches never share one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[Path] = set()

    @contextlib.contextmanager
    def claimed(self, path: Path) -> Iterator[bool]:
        """Hold `path` while the block runs; yield False (holding nothing) if another holds it."""
        with self._lock:
            mine = path not in self._held
            self._held.add(path)
        try:
            yield mine
        finally:
            if mine:
                with self._lock:
                    self._held.discard(path)


_IN_USE: Final = _Folders()


def _error(name: str, exc: GitError, place: Place | None) -> PipelineError:
    """Describe what git refused, with the worktree (when it is kept) and its branch."""
    where = {} if place is None else {"worktree": str(place.path), "branch": place.branch}
    return PipelineError(name, WORKSPACE_FAILED, str(exc), where)


@final
class Session:
    """Run one step in a worktree: the body of a `worktree` step, and of each `best_of` branch.

    `prefix` names the outputs (`<prefix>_branch`, `_commit`, `_diffstat`);
    `label` names the folder and the branch (by default the step's name,
    followed inside a parallel branch by that branch's path: each branch
    gets a worktree of its own).
    """

    def __init__(  # noqa: PLR0913 - one worktree's whole configuration
        self,
        name: str,
        step: Step,
        *,
        repo: str,
        base: str,
        keep: Keep,
        prefix: str,
        label: str | None = None,
        protect: tuple[str, ...] = (),
        seed: SeedSpec | None = None,
    ) -> None:
        """Remember what to run where; nothing touches git until called."""
        self.name, self.step, self.keep = name, step, keep
        self.repo, self.base, self.prefix = repo, base, prefix
        self.label, self.protect, self.seed = label, protect, seed

    def __call__(self, ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        """Make the worktree, run the step in it, commit, and remove it as `keep` says."""
        scope = current_scope()
        repo = render_for_step(self.repo, ctx.inputs, step_name=self.name, what="the repo")
        base = render_for_step(self.base, ctx.inputs, step_name=self.name, what="the base")
        if isinstance(repo, PipelineError):
            return IOFailure(repo)
        if isinstance(base, PipelineError):
            return IOFailure(base)
        branch = current_branch()
        label = self.label or branch_label(self.name, branch)
        try:
            found = locate(repo, label, branch or self.name, scope)
        except GitError as exc:
            return IOFailure(_error(self.name, exc, None))
        with _IN_USE.claimed(found.path) as mine:
            if not mine:
                message = (
                    f"worktree {found.path} is in use by another step of run {found.run_id}"
                    " in this process (the same run started twice at once?): run it once, or"
                    " name the worktree steps apart"
                )
                return IOFailure(PipelineError(self.name, WORKSPACE_FAILED, message))
            return self._opened(scope, found, base, ctx)

    def _opened(
        self, scope: RunScope, found: Place, base: str, ctx: WorkflowContext
    ) -> IOResult[WorkflowContext, PipelineError]:
        try:
            place = open_worktree(found, base, scope)
        except GitError as exc:
            return IOFailure(_error(self.name, exc, None))
        try:
            seeded = {} if self.seed is None else {f"{self.prefix}_seed": provide(place, self.seed)}
            self._record(scope, place, tree_hash(place.path, gitdir=place.gitdir), "created")
            return self._run_in(scope, place, ctx).map(lambda done: done.merge_outputs(seeded))
        except SeedError as exc:
            kept = self._settle(scope, place, failed=True)
            where = {"worktree": str(place.path)} if kept else {}
            return IOFailure(PipelineError(self.name, exc.kind, str(exc), where))
        except GitError as exc:
            kept = self._settle(scope, place, failed=True)
            return IOFailure(_error(self.name, exc, place if kept else None))
        except KeyboardInterrupt:
            self._settle(scope, place, failed=True, interrupted=True)
            raise

    def _run_in(
        self, scope: RunScope, place: Place, ctx: WorkflowContext
    ) -> IOResult[WorkflowContext, PipelineError]:
        folder = str(place.path)
        inner = WorkflowContext(
            inputs={**ctx.inputs, "worktree": folder}, feedback=ctx.feedback, failure=ctx.failure
        )
        guard = None
        if self.protect:
            gitdir = str(place.gitdir or "") or None
            rules = Rules.of(self.protect)
            guard = Guard.at_commit(self.name, rules, folder, place.base, gitdir)
        recorded = attrs.evolve(self.step, run=self._hashed(scope, place, self.step, guard))
        with in_worktree(folder, str(place.gitdir or ""), place.base):
            made, _ = retry_step(recorded, inner)
        if isinstance(made, PipelineError):
            kept = self._settle(scope, place, failed=True)
            where = {"worktree": folder} if kept else {}
            return IOFailure(made.with_context(branch=place.branch, **where))
        summary = str(made.outputs.get("summary", ctx.inputs.get("summary", ""))).strip()
        message = summary or f"adws: run {place.run_id}, step {self.name}"
        commit_all(place.path, message, gitdir=place.gitdir)
        # The base, when nothing changed.
        commit = output(place.path, "rev-parse", "HEAD", gitdir=place.gitdir)
        stat = diffstat(place.path, place.base, commit, gitdir=place.gitdir)
        kept = self._settle(scope, place, failed=False)
        if not kept and commit == place.base:  # the branch holds nothing: it goes with its worktree
            delete_branch(place.repo, place.branch)
        return IOSuccess(
            ctx.merge_outputs(
                {
                    **made.outputs,
                    f"{self.prefix}_branch": place.branch,
                    f"{self.prefix}_commit": commit,
                    f"{self.prefix}_diffstat": stat,
                }
            )
        )

    def _hashed(
        self, scope: RunScope, place: Place, step: Step, guard: Guard | None
    ) -> StepFunction:
        """Wrap the step's function: after each attempt, hash the worktree and journal it.

        With `protect`, an attempt that succeeded but changed a protected path
        fails `Tampered` (retried, under the step's policy, with the files named).
        """

        def attempt(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
            try:
                result = step.run(ctx)
            except KeyboardInterrupt:
                raise  # the worktree goes (unless kept always): no hash needed
            except BaseException:
                self._rehash(scope, place)
                raise
            self._rehash(scope, place)
            if guard is None or not isinstance(result, IOSuccess):
                return result
            tampered = guard.check()
            return result if tampered is None else IOFailure(tampered)

        return attempt

    def _rehash(self, scope: RunScope, place: Place) -> None:
        """Journal the worktree's content as the attempt left it, and its diff from the base.

        If git fails, the worktree stays journaled as it was (a resume sees
        the content differ from the last hash: drift); a diff git cannot
        make is journaled as not taken.
        """
        try:
            tree = tree_hash(place.path, gitdir=place.gitdir)
        except GitError:
            return
        try:
            diff: str | None = patch_between(place.path, place.base, tree, place.gitdir)
        except GitError:
            diff = None
        path, attempt = current_attempt()
        self._record(scope, place, tree, diff=diff, attempt=(path, attempt))

    def _record(  # noqa: PLR0913 - the row, and what an attempt adds to it
        self,
        scope: RunScope,
        place: Place,
        tree: str,
        state: Literal["created", "present", "removed"] = "present",
        *,
        diff: str | None = None,
        attempt: tuple[str, int] = ("", 0),
    ) -> None:
        scope.emit(
            WorktreeRecorded(
                scope.run_id,
                place.step,
                place.label,
                str(place.repo),
                str(place.path),
                place.branch,
                place.base,
                tree,
                state,
                str(place.gitdir or ""),
                diff,
                *attempt,
            )
        )

    def _settle(
        self, scope: RunScope, place: Place, *, failed: bool, interrupted: bool = False
    ) -> bool:
        """Remove the worktree as `keep` says; tell whether it is still there.

        A branch a parallel step cancelled counts as interrupted.
        """
        cancel = io_ops.CANCEL.get()
        interrupted = interrupted or (cancel is not None and cancel.is_set())
        if self.keep == "always" or (self.keep == "on_failure" and failed and not interrupted):
            return True
        try:
            remove_worktree(place)
        except GitError:
            return True  # kept after all: the journal still says so, and a resume checks it
        self._record(scope, place, "", "removed")
        return False
