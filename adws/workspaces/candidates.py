"""`best_of(name, step, n=...)`: n candidate worktrees side by side, and the best of them kept."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_count, require_type
from adws._exceptions import DefinitionError
from adws.contract.template import check_template, render_for_step
from adws.engine._scheduler import Branch, Outcome, run_branches
from adws.engine.concurrency import branch_path
from adws.engine.context import WorkflowContext
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.events import WorktreeRecorded
from adws.engine.metering import METER, Meter, charging
from adws.engine.parking import is_parked, parked_branches
from adws.engine.protect import check_protect
from adws.engine.retry import exception_error, reraise_interrupt
from adws.engine.scope import current_branch, current_scope
from adws.engine.step import Step, StepFunction
from adws.workspaces._git import GitError, output
from adws.workspaces._places import branch_label, discard_branch, locate
from adws.workspaces._session import WORKSPACE_FAILED, Session
from adws.workspaces.judging import Judge, judged, shown_candidates
from adws.workspaces.seeds import SeedSpec, ShareMode, check_seed
from adws.workspaces.worktrees import check_repo

if TYPE_CHECKING:
    from adws.engine.usage import Usage

__all__ = ["SELECTS", "BestOfSpec", "Select", "best_of"]

Select: TypeAlias = (
    Literal["first_passing", "smallest_diff", "fewest_failures"]
    | Callable[[tuple[Mapping[str, object] | None, ...]], int]
    | Judge
)
SELECTS: Final = ("first_passing", "smallest_diff", "fewest_failures")
_PASSED: Final = frozenset({"succeeded", "reused"})


@final
@attrs.frozen
class BestOfSpec:
    """Describe a `best_of` step, for `adws show`, `adws check`, the fingerprint and `--agent`."""

    step: Step
    n: int
    repo: str
    select: Select
    max_concurrency: int | None
    early_stop: bool = False
    protect: tuple[str, ...] = ()
    base: str = "HEAD"
    seed: SeedSpec | None = attrs.field(default=None, metadata={"unset_unseen": True})
    """The setup whose made folders each worktree gets (see `worktree`'s `setup`)."""

    def describe(self) -> str:
        """Say what the step does, for `adws show`."""
        if isinstance(self.select, Judge):
            chosen = f"the one {self.select.step.name} chooses"
        else:
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


def failure_count(outputs: Mapping[str, object]) -> int:
    """Count the verify failures a branch's last round left: every `*_failures` list's ids.

    >>> failure_count({"code_verified_failures": ["a", "b"], "note": "x"})
    2
    """
    return sum(
        len(value)
        for key, value in outputs.items()
        if key.endswith("_failures") and isinstance(value, list | tuple)
    )


def _winner(
    name: str,
    select: Literal["first_passing", "smallest_diff", "fewest_failures"]
    | Callable[[tuple[Mapping[str, object] | None, ...]], int],
    results: tuple[Mapping[str, object] | None, ...],
) -> int | PipelineError:
    """Pick the index of the branch to keep, or say why the choice failed."""
    passed = [index for index, outputs in enumerate(results) if outputs is not None]
    if select == "first_passing":
        return passed[0]
    if select == "smallest_diff":
        return min(passed, key=lambda index: (_changed_lines(results[index] or {}, name), index))
    if select == "fewest_failures":
        return min(passed, key=lambda index: (failure_count(results[index] or {}), index))
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


def _choose(  # noqa: PLR0913, PLR0917 - the step, its select, and what the branches left
    name: str,
    select: Select,
    ctx: WorkflowContext,
    where: str,
    results: tuple[Mapping[str, object] | None, ...],
    report: list[dict[str, object]],
) -> tuple[int, dict[str, object]] | PipelineError:
    """Pick the winner (asking the judge, when there is one) and the outputs saying why.

    A branch the judge cannot be shown becomes a failed branch in `report`.
    """
    if not isinstance(select, Judge):
        winner = _winner(name, select, results)
        return winner if isinstance(winner, PipelineError) else (winner, {})
    shown, unshown = _shown(name, where, results, report)
    if unshown is not None:
        return unshown
    choice = judged(name, select, ctx, shown)
    if isinstance(choice, PipelineError):
        return choice
    return choice[0], {f"{name}_judgement": {"index": choice[0], "reason": choice[1]}}


def _settled(select: Select) -> Callable[[Sequence[Outcome]], bool] | None:
    """Tell, for `early_stop`, when the branch `select` keeps is known before all end.

    `first_passing`: a branch passed and every lower one ended without
    passing. `fewest_failures`: the same for a branch that passed with no
    failure at all (none can do better). Any other select needs every branch.
    """
    if select not in {"first_passing", "fewest_failures"}:
        return None
    perfect = select == "first_passing"

    def settled(outcomes: Sequence[Outcome]) -> bool:
        for outcome in outcomes:
            if outcome.status is None or is_parked(outcome.error):
                return False
            if outcome.status in _PASSED and (perfect or failure_count(outcome.outputs) == 0):
                return True
        return False

    return settled


def _outcome(
    name: str, index: int, outcome: Outcome, usage: Usage | None, *, early: bool
) -> dict[str, object]:
    outputs = outcome.outputs if outcome.status in _PASSED else {}
    status = outcome.status or "cancelled"
    return {
        "index": index,
        "status": "cancelled (early stop)" if early and status == "cancelled" else status,
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


def _checked_select(name: str, select: Select) -> Select:
    """Refuse a select `best_of` cannot use; give a judge its candidates (`shown_candidates`)."""
    if isinstance(select, Judge):
        return shown_candidates(select, name)
    if select not in SELECTS and not callable(select):
        choices = ", ".join(map(repr, SELECTS))
        msg = (
            f"best_of {name!r}: select must be {choices}, judge(step) or a function, got {select!r}"
        )
        raise DefinitionError(msg)
    return select


def best_of(  # noqa: PLR0913 - DESIGN's signature, all keyword-only
    name: str,
    step: Step,
    *,
    n: int,
    repo: str = "{target_dir}",
    select: Select = "first_passing",
    max_concurrency: int | None = None,
    early_stop: bool = False,
    protect: Sequence[str] = (),
    base: str = "HEAD",
    setup: str | None = None,
    setup_key: Sequence[str] = (),
    share: Sequence[str] = (),
    share_mode: ShareMode = "hardlink",
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

    `select="fewest_failures"` keeps the passing branch whose last
    verification round left the fewest failures (the ids in every
    `*_failures` output, pre-existing ones included: a branch that also
    fixed an old failure ranks higher; ties to the lowest index).
    `select=judge(step)` asks the judge step to choose among the passing
    branches' diffs and summaries (see `adws.workspaces.judging`; an agent
    judge whose prompt never names `{<name>_candidates}` gets them appended);
    its choice is the output `<name>_judgement` (`index`, `reason`).

    `early_stop=True` cancels the other branches as soon as the branch
    `select` keeps is known (`first_passing`: one passed and every lower
    one ended; `fewest_failures`: the same with no failure left; other
    selects wait for all): their processes are stopped, their spend stops
    (what they spent still counts) and their outcomes say
    `cancelled (early stop)`. `protect=(globs...)` guards each branch's
    worktree as `worktree(..., protect=...)` does: a branch that changes a
    protected path fails `Tampered`. `base` is the commit every branch
    starts from (`HEAD`: the one `repo`'s checkout is on; any revision or
    a placeholder, such as a reproducer's `{reproduction_commit}`).
    `setup`, `setup_key`, `share` and `share_mode` give each worktree a
    seed's folders as `worktree`'s do: the n worktrees wait for one build.
    """
    owner = f"best_of {name!r}"
    require_type(owner, "step", step, Step, "a Step")
    require_count(owner, "n", n)
    check_repo(owner, repo)
    require_type(owner, "base", base, str, "a revision such as 'HEAD' or 'main'")
    check_template(base, owner=owner, what="the base")
    select = _checked_select(name, select)
    require_type(owner, "early_stop", early_stop, bool, "a bool")
    globs = check_protect(owner, protect)
    seed = check_seed(owner, setup, setup_key, share, share_mode)
    settled = _settled(select) if early_stop else None
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
                            base=base,
                            keep="on_failure",
                            prefix=name,
                            label=labels[index],
                            protect=globs,
                            seed=seed,
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
        outcomes = run_branches(name, work, max_concurrency, None, fail_fast=False, settled=settled)
        results = tuple(
            dict(outcome.outputs) if outcome.status in _PASSED else None for outcome in outcomes
        )
        report = [
            _outcome(name, index, outcome, spends[index], early=settled is not None)
            for index, outcome in enumerate(outcomes)
        ]
        stopped = _parked(name, work, outcomes) or _none_passed(outcomes, results)
        if stopped is not None:
            return IOFailure(stopped.with_context(outcomes=report))
        chosen = _choose(name, select, ctx, where, results, report)
        if isinstance(chosen, PipelineError):
            return IOFailure(chosen.with_context(outcomes=report))
        winner, extra = chosen
        losers = _discard(name, where, labels, winner)
        if losers is not None:
            return IOFailure(losers.with_context(outcomes=report))
        return IOSuccess(
            ctx.merge_outputs(
                {
                    **(results[winner] or {}),
                    f"{name}_winner": winner,
                    f"{name}_outcomes": report,
                    **extra,
                }
            )
        )

    return Step(
        name,
        run,
        kind="best_of",
        spec=BestOfSpec(step, n, repo, select, max_concurrency, early_stop, globs, base, seed),
        children=(step,),
    )


def _candidates(
    name: str, where: str, results: tuple[Mapping[str, object] | None, ...]
) -> tuple[list[dict[str, object]], dict[int, PipelineError]]:
    """Describe each passing branch for a judge: its summary, diffstat and diff.

    A branch whose change git cannot show against the base (an orphan
    commit has no merge base with it) is not shown: its error comes back
    by index instead, for the branch to count as failed.
    """
    shown: list[dict[str, object]] = []
    unshown: dict[int, PipelineError] = {}
    for index, outputs in enumerate(results):
        if outputs is None:
            continue
        commit = str(outputs.get(f"{name}_commit", ""))
        try:
            diff = output(Path(where), "diff", f"HEAD...{commit}")
        except GitError as exc:
            message = (
                f"best_of {name!r}: git cannot show branch {index}'s change against the base,"
                f" so no judge can read it: {exc}"
            )
            context = {"commit": commit}
            unshown[index] = PipelineError(
                branch_path(name, index), WORKSPACE_FAILED, message, context
            )
            continue
        stat = outputs.get(f"{name}_diffstat")
        shown.append(
            {
                "index": index,
                "summary": str(outputs.get("summary", "")),
                "diffstat": stat.get("text", "") if isinstance(stat, Mapping) else "",
                "diff": diff,
            }
        )
    return shown, unshown


def _shown(
    name: str,
    where: str,
    results: tuple[Mapping[str, object] | None, ...],
    report: list[dict[str, object]],
) -> tuple[list[dict[str, object]], PipelineError | None]:
    """Describe the passing branches for the judge; one git cannot show becomes a failed branch.

    Its `report` entry says `failed` and why; when no branch is left to
    choose from, the first such error comes back too.
    """
    shown, unshown = _candidates(name, where, results)
    for index, error in unshown.items():
        report[index] = {**report[index], "status": "failed", "error": error.to_dict()}
    if shown or not unshown:
        return shown, None
    return shown, unshown[min(unshown)]


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
