"""`best_of(name, step, n=...)`: n candidate worktrees side by side, and the best of them kept."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_count, require_type
from adws.contract.template import render_for_step
from adws.engine._scheduler import Branch, Outcome, run_branches
from adws.engine.concurrency import branch_path
from adws.engine.context import WorkflowContext
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.events import WorktreeRecorded
from adws.engine.metering import METER, Meter, charging
from adws.engine.parking import is_parked, parked_branches
from adws.engine.retry import exception_error, reraise_interrupt
from adws.engine.scope import current_branch, current_scope
from adws.engine.step import Step, StepFunction
from adws.workspaces._git import GitError
from adws.workspaces._places import branch_label, discard_branch, locate
from adws.workspaces._session import WORKSPACE_FAILED, Session
from adws.workspaces.worktrees import check_repo

if TYPE_CHECKING:
    from adws.engine.usage import Usage

__all__ = ["SELECTS", "BestOfSpec", "Select", "best_of"]

Select: TypeAlias = (
    Literal["first_passing", "smallest_diff"]
    | Callable[[tuple[Mapping[str, object] | None, ...]], int]
)
SELECTS: Final = ("first_passing", "smallest_diff")


@final
@attrs.frozen
class BestOfSpec:
    """Describe a `best_of` step, for `adws show`, `adws check`, the fingerprint and `--agent`."""

    step: Step
    n: int
    repo: str
    select: Select
    max_concurrency: int | None

    def describe(self) -> str:
        """Say what the step does, for `adws show`."""
        chosen = self.select if isinstance(self.select, str) else "the one select picks"
        limit = f", at most {self.max_concurrency} at a time" if self.max_concurrency else ""
        return (
            f"runs {self.step.name} {self.n} times side by side, each in a worktree of"
            f" {self.repo}{limit}; keeps {chosen}"
        )


def _changed_lines(outputs: Mapping[str, object], name: str) -> int:
    """Count the lines a branch's change added and deleted (its `<name>_diffstat`)."""
    stat = outputs[f"{name}_diffstat"]
    return int(stat["added"]) + int(stat["deleted"])  # type: ignore[index] # a diffstat mapping


def _winner(
    name: str, select: Select, results: tuple[Mapping[str, object] | None, ...]
) -> int | PipelineError:
    """Pick the index of the branch to keep, or say why the choice failed."""
    passed = [index for index, outputs in enumerate(results) if outputs is not None]
    if select == "first_passing":
        return passed[0]
    if select == "smallest_diff":
        return min(passed, key=lambda index: (_changed_lines(results[index] or {}, name), index))
    try:
        chosen: object = select(results)
    except BaseException as exc:  # noqa: BLE001 - a raising select is the step's failure
        reraise_interrupt(exc)
        return exception_error(name, exc, f"the select function of best_of {name!r}")
    if isinstance(chosen, int) and not isinstance(chosen, bool) and chosen in passed:
        return chosen
    message = (
        f"the select function of best_of {name!r} returned {chosen!r}; it must return the "
        f"index of a branch that succeeded ({', '.join(map(str, passed))})"
    )
    return PipelineError(name, ErrorType.STEP_EXCEPTION, message, {"returned": repr(chosen)})


def _outcome(name: str, index: int, outcome: Outcome, usage: Usage | None) -> dict[str, object]:
    outputs = outcome.outputs if outcome.status in {"succeeded", "reused"} else {}
    return {
        "index": index,
        "status": outcome.status or "cancelled",
        "error": None if outcome.error is None else outcome.error.to_dict(),
        "branch": outputs.get(f"{name}_branch"),
        "commit": outputs.get(f"{name}_commit"),
        "diffstat": outputs.get(f"{name}_diffstat"),
        "usage": None if usage is None else usage.to_dict(),
    }


def _parked(name: str, work: Sequence[Branch], outcomes: Sequence[Outcome]) -> PipelineError | None:
    """Park the step when a branch parked: the best cannot be chosen before it wakes."""
    parked = [outcome.error for outcome in outcomes if is_parked(outcome.error)]
    if not parked:
        return None
    states = {
        branch.path: {"status": outcome.status or "cancelled"}
        for branch, outcome in zip(work, outcomes, strict=True)
    }
    return parked_branches(name, parked, len(work), states)


def _none_passed(
    outcomes: Sequence[Outcome], results: tuple[Mapping[str, object] | None, ...]
) -> PipelineError | None:
    """Fail with the first branch's error when no branch passed, as `fan_out` does."""
    if any(outputs is not None for outputs in results):
        return None
    return next(outcome.error for outcome in outcomes if outcome.error is not None)


def _metered(session: Session, spends: list[Usage | None], index: int) -> StepFunction:
    """Wrap a branch's session so that what all its attempts spent is kept in `spends`."""

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        with charging(Meter(METER.get())) as meter:
            try:
                return session(ctx)
            finally:
                spends[index] = meter.report()

    return run


def best_of(  # noqa: PLR0913 - DESIGN's signature, all keyword-only
    name: str,
    step: Step,
    *,
    n: int,
    repo: str = "{target_dir}",
    select: Select = "first_passing",
    max_concurrency: int | None = None,
) -> Step:
    """Build a step that runs `step` n times side by side, each in a worktree, and keeps one.

    Branch i (named `<name>[i]` in events and the journal) runs in a
    worktree of its own on the branch `adws/<run_id>/<name>-<i>` (see
    `worktree`, with `keep="on_failure"`) and sees the input
    `<name>_index = i`. Every branch runs to its end (at most
    `max_concurrency` at once); then `select` picks the winner among those
    that succeeded: `first_passing`, the lowest index (whatever finished
    first); `smallest_diff`, the fewest changed lines (ties to the lowest
    index); or a function given a tuple of each branch's outputs (None
    where it failed) that returns an index.

    Outputs: the winner's own outputs (its step's, so a later step can read
    the winner's `summary`), `<name>_winner` (its index), `<name>_branch`,
    `<name>_commit`, `<name>_diffstat`, and `<name>_outcomes`: per branch
    its `index`, `status`, `error`, `branch`, `commit`, `diffstat` and
    `usage` (what it spent; all of it counts toward the run's budget). The
    losers' worktrees and branches are removed. With no branch passing,
    the step fails with the first branch's error, as `fan_out` does, with
    `context["outcomes"]`; the failed branches' worktrees are kept for
    inspection and a resume goes on in them. A branch whose agent's limit
    resets past the run's `max_wait` parks: the others run to their end,
    then the step parks (`Parked`) and a resume keeps those that succeeded.
    """
    owner = f"best_of {name!r}"
    require_type(owner, "step", step, Step, "a Step")
    require_count(owner, "n", n)
    check_repo(owner, repo)
    if select not in SELECTS and not callable(select):
        choices = " or ".join(map(repr, SELECTS))
        msg = f"{owner}: select must be {choices} or a function, got {select!r}"
        raise ValueError(msg)
    if max_concurrency is not None:
        require_count(owner, "max_concurrency", max_concurrency)
    index_key = f"{name}_index"

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        where = render_for_step(repo, ctx.inputs, step_name=name, what="the repo")
        if isinstance(where, PipelineError):
            return IOFailure(where)
        if index_key in ctx.inputs:
            message = f"best_of {name!r}: input {index_key!r} exists already; rename the step"
            return IOFailure(PipelineError(name, ErrorType.CONTEXT_COLLISION, message))
        outer = current_branch()
        labels = [branch_label(f"{name}-{index}", outer) for index in range(n)]
        spends: list[Usage | None] = [None] * n
        work = [
            Branch(
                name,
                branch_path(name, index),
                Step(
                    f"{name}_{index}",
                    _metered(
                        Session(
                            name,
                            step,
                            repo=repo,
                            base="HEAD",
                            keep="on_failure",
                            prefix=name,
                            label=labels[index],
                        ),
                        spends,
                        index,
                    ),
                ),
                WorkflowContext(
                    inputs={**ctx.inputs, index_key: index},
                    feedback=ctx.feedback,
                    failure=ctx.failure,
                ),
            )
            for index in range(n)
        ]
        outcomes = run_branches(name, work, max_concurrency, None, fail_fast=False)
        results = tuple(
            dict(outcome.outputs) if outcome.status in {"succeeded", "reused"} else None
            for outcome in outcomes
        )
        report = [
            _outcome(name, index, outcome, spends[index]) for index, outcome in enumerate(outcomes)
        ]
        stopped = _parked(name, work, outcomes) or _none_passed(outcomes, results)
        if stopped is not None:
            return IOFailure(stopped.with_context(outcomes=report))
        winner = _winner(name, select, results)
        if isinstance(winner, PipelineError):
            return IOFailure(winner.with_context(outcomes=report))
        losers = _discard(name, where, labels, winner)
        if losers is not None:
            return IOFailure(losers.with_context(outcomes=report))
        return IOSuccess(
            ctx.merge_outputs(
                {
                    **(results[winner] or {}),
                    f"{name}_winner": winner,
                    f"{name}_outcomes": report,
                }
            )
        )

    return Step(
        name,
        run,
        kind="best_of",
        spec=BestOfSpec(step, n, repo, select, max_concurrency),
        children=(step,),
    )


def _discard(name: str, where: str, labels: Sequence[str], winner: int) -> PipelineError | None:
    """Remove every loser's worktree (a failed one was kept) and delete its branch."""
    scope = current_scope()
    try:
        for index, label in enumerate(labels):
            if index != winner:
                place = locate(where, label, f"{name}[{index}]", scope)
                discard_branch(place)
                scope.emit(
                    WorktreeRecorded(
                        scope.run_id,
                        place.step,
                        label,
                        str(place.repo),
                        str(place.path),
                        place.branch,
                        "",
                        "",
                        "discarded",
                    )
                )
    except GitError as exc:
        return PipelineError(name, WORKSPACE_FAILED, f"could not remove a losing branch: {exc}")
    return None
