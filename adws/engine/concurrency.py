"""Concurrency inside one step: `parallel` and `fan_out`.

(DESIGN's layout calls this module `parallel.py`; it is `concurrency.py` so
that importing it never shadows the function `adws.parallel`: a module
named like the function it exports would replace it as an attribute of the
package. `from adws import parallel, fan_out` is the way in.)

The executor stays one `for` loop; a parallel step runs its branches in
threads and returns one `IOResult` like any step. Agents and commands are
processes, so branches truly overlap; CPU-bound Python branches do not
speed up (the GIL), and a pure-Python branch cannot be stopped midway: a
cancelled one finishes in its thread and its result is dropped.

Rules (see "Concurrency inside a run" in DESIGN.md):

- Every branch starts from the context the parallel step started with and
  runs under its own retry policy, waiting through the run's `sleep`.
- `min_successes=None`: every branch must succeed. At the first failure the
  branches still running are cancelled (their process groups stopped, no
  new process started, recorded `cancelled`) and the step fails with the
  error of the failed branch first in declaration order;
  `context["branches"]` maps each branch path to its status and error.
- `min_successes=k`: the step succeeds once the branches have finished if
  at least k succeeded; as soon as k can no longer be reached, the rest are
  cancelled and the step fails as above.
- A branch whose agent's limit resets past the run's `max_wait` parks (see
  `adws.engine.parking`): it has not failed, so nothing is cancelled for
  it; once every branch ended, a step that could still succeed when the
  parked ones wake parks too (`Parked`, waking when the last of them may),
  and a resume keeps the branches that succeeded.
- `fail_fast=False`: nothing is cancelled; every branch runs to its end,
  and then the step fails with every failed branch's error: the first in
  declaration order is the step's error (its step name and kind), its
  message goes on with each other failure (`also failed: <path>: ...`, so
  feedback to an agent lists them all), and `context["failures"]` holds
  each one's `to_dict()`. The shape for lint + tests + typecheck.
- On success `parallel` merges the succeeded branches' outputs in
  declaration order (a key two branches write is a `ContextCollision`,
  refused at definition time where the keys are known); `fan_out` outputs
  `name`, a tuple in element order of each branch's outputs (None for a
  branch that failed or was cancelled). Both add `<name>_failures`, the
  `to_dict()` of each failed branch's error.
- The scheduler (threads, cancellation, events) is `adws.engine._scheduler`; this
  module builds the steps and decides what their branches' outcomes mean.
- Ctrl-C (or SIGTERM) while branches run cancels them all, waits for their
  threads, and re-raises, so the run ends `Interrupted` after cleanup.
- Each branch reports `BranchStarted`, `BranchAttemptFailed` and
  `BranchFinished` to the run's observers, one event at a time; a resume
  reuses the stored outputs of branches that already succeeded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_callable, require_count, require_input_name, require_type
from adws._exceptions import DefinitionError
from adws.engine._scheduler import Branch, Outcome, run_branches
from adws.engine.context import WorkflowContext
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.parking import is_parked, parked_branches
from adws.engine.scope import current_branch
from adws.engine.step import Step

__all__ = ["TOO_FEW_SUCCESSES", "FanOutSpec", "ParallelSpec", "fan_out", "parallel"]

TOO_FEW_SUCCESSES: Final = "TooFewSuccesses"
"""The error kind of a parallel step whose branches could not all run (none failed)."""


@final
@attrs.frozen
class ParallelSpec:
    """Describe a `parallel` step, for `adws show`, the fingerprint and `--agent`."""

    branches: tuple[Step, ...]
    max_concurrency: int | None
    min_successes: int | None
    fail_fast: bool = True


@final
@attrs.frozen
class FanOutSpec:
    """Describe a `fan_out` step, for `adws show`, the fingerprint and `--agent`."""

    step: Step
    over: str
    item: str
    max_concurrency: int | None
    min_successes: int | None
    fail_fast: bool = True


def _branches_map(
    branches: Sequence[Branch], outcomes: Sequence[Outcome]
) -> dict[str, dict[str, object]]:
    return {
        branch.path: {
            "status": outcome.status,
            "error": None if outcome.error is None else outcome.error.to_dict(),
        }
        for branch, outcome in zip(branches, outcomes, strict=True)
    }


def _all_failures(failures: Sequence[PipelineError]) -> PipelineError:
    """Make the first failure the step's error, its message going on with every other one."""
    first = failures[0]
    message = first.message
    for other in failures[1:]:
        message += f"\n\nalso failed: {other.step_name}: {other.error_type}: {other.message}"
    return attrs.evolve(first, message=message).with_context(
        failures=[error.to_dict() for error in failures]
    )


def _verdict(
    name: str,
    branches: Sequence[Branch],
    outcomes: Sequence[Outcome],
    min_successes: int | None,
    *,
    fail_fast: bool,
) -> PipelineError | list[dict[str, object]]:
    """Fail with the first failed branch's error (and every other, unless `fail_fast`).

    On success, list the failures of the branches that did not succeed.
    """
    succeeded = sum(outcome.status in {"succeeded", "reused"} for outcome in outcomes)
    needed = len(branches) if min_successes is None else min_successes
    errors = [outcome.error for outcome in outcomes if outcome.error is not None]
    if succeeded >= needed:
        return [error.to_dict() for error in errors]
    parked = [error for error in errors if is_parked(error)]
    failures = [error for error in errors if not is_parked(error)]
    if parked and succeeded + len(parked) >= needed:
        # The step can still succeed once they wake: it parks; a resume keeps the siblings.
        return parked_branches(name, parked, len(branches), _branches_map(branches, outcomes))
    if failures:
        first = failures[0] if fail_fast else _all_failures(failures)
        return first.with_context(branches=_branches_map(branches, outcomes))
    return PipelineError(
        name,
        TOO_FEW_SUCCESSES,
        f"step {name!r} needs {needed} successful branches; "
        f"{succeeded} of {len(branches)} succeeded",
        {"branches": _branches_map(branches, outcomes)},
    )


def _check_limits(owner: str, max_concurrency: int | None, min_successes: int | None) -> None:
    if max_concurrency is not None:
        require_count(owner, "max_concurrency", max_concurrency)
    if min_successes is not None:
        require_count(owner, "min_successes", min_successes, minimum=0)


def _known_keys(step: Step) -> frozenset[str]:
    """The output keys a step is known to write before it runs (agent contracts, shell steps)."""
    spec = step.spec
    keys = getattr(getattr(spec, "contract", None), "keys", ())
    known = {key.lower() for key in keys}
    if step.kind == "shell":
        known |= {f"{step.name}_stdout", f"{step.name}_stderr", f"{step.name}_returncode"}
        if getattr(spec, "allow_generated", False):
            known.add(f"{step.name}_ran")
    for child in step.children:
        known |= _known_keys(child)
    return frozenset(known)


def _check_branches(
    owner: str, branches: tuple[Step, ...], max_concurrency: int | None, min_successes: int | None
) -> None:
    """Refuse, at definition time, branches that could never run as one step."""
    for branch in branches:
        require_type(owner, "steps", branch, Step, "a sequence of Steps")
    names = [branch.name for branch in branches]
    if len(set(names)) != len(names):
        msg = f"{owner}: branch names must be distinct, got {names}"
        raise DefinitionError(msg)
    _check_limits(owner, max_concurrency, min_successes)
    if min_successes is not None and min_successes > len(branches):
        msg = f"{owner}: min_successes={min_successes} but there are {len(branches)} branches"
        raise DefinitionError(msg)
    seen: dict[str, str] = {}
    for branch in branches:
        for key in sorted(_known_keys(branch)):
            if key in seen:
                msg = (
                    f"{owner}: branches {seen[key]!r} and {branch.name!r} both write {key!r}; "
                    "their outputs would collide"
                )
                raise DefinitionError(msg)
            seen[key] = branch.name


def branch_path(name: str, key: str | int) -> str:
    """Name a branch by its step and key, after the branch it runs inside (if any).

    A parallel step inside another's branch names its own branches under
    that one, so branches of nested steps named alike stay apart in the
    journal, the report and their worktrees: `outer[1]/inner[lint]`.
    """
    own = f"{name}[{key}]"
    parent = current_branch()
    return f"{parent}/{own}" if parent else own


def parallel(  # noqa: PLR0913 - DESIGN's signature, all keyword-only
    name: str,
    steps: Sequence[Step],
    *,
    max_concurrency: int | None = None,
    min_successes: int | None = None,
    always_run: bool = False,
    when: Callable[[WorkflowContext], bool] | None = None,
    fail_fast: bool = True,
    rerun_on_resume: bool = False,
) -> Step:
    """Build a step that runs `steps` (distinct names) at the same time; see the module rules.

    A branch is named `<name>[<branch>]` in events and the journal.
    `rerun_on_resume` makes `adws resume` run it again (see `Step`).
    """
    owner = f"parallel {name!r}"
    branches = tuple(steps)
    _check_branches(owner, branches, max_concurrency, min_successes)
    require_callable(owner, "when", when, optional=True)
    require_type(owner, "fail_fast", fail_fast, bool, "a bool")

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        work = [Branch(name, branch_path(name, step.name), step, ctx) for step in branches]
        outcomes = run_branches(name, work, max_concurrency, min_successes, fail_fast=fail_fast)
        verdict = _verdict(name, work, outcomes, min_successes, fail_fast=fail_fast)
        if isinstance(verdict, PipelineError):
            return IOFailure(verdict)
        merged: dict[str, object] = {}
        for branch, outcome in zip(work, outcomes, strict=True):
            clashes = sorted(set(merged) & set(outcome.outputs))
            if clashes:
                message = f"branch {branch.path} writes {clashes[0]!r}, which another branch wrote"
                return IOFailure(
                    PipelineError(name, ErrorType.CONTEXT_COLLISION, message, {"keys": clashes})
                )
            merged.update(outcome.outputs)
        return IOSuccess(ctx.merge_outputs({**merged, f"{name}_failures": verdict}))

    return Step(
        name,
        run,
        always_run=always_run,
        when=when,
        rerun_on_resume=rerun_on_resume,
        kind="parallel",
        spec=ParallelSpec(branches, max_concurrency, min_successes, fail_fast),
        children=branches,
    )


def fan_out(  # noqa: PLR0913 - DESIGN's signature, all keyword-only
    name: str,
    step: Step,
    *,
    over: str,
    item: str = "item",
    max_concurrency: int | None = None,
    min_successes: int | None = None,
    fail_fast: bool = True,
    rerun_on_resume: bool = False,
) -> Step:
    """Build a step that runs `step` once per element of `ctx.inputs[over]`; see the module rules.

    Branch i sees its element as input `item` and its index as
    `<item>_index`, and is named `<name>[i]`. A missing or non-sequence
    `over` input is a `MissingInput` failure; an empty sequence succeeds
    with an empty tuple (unless `min_successes` asks for more).
    `rerun_on_resume` makes `adws resume` run it again (see `Step`).
    """
    owner = f"fan_out {name!r}"
    require_type(owner, "step", step, Step, "a Step")
    require_input_name(owner, "over", over)
    require_input_name(owner, "item", item)
    require_type(owner, "fail_fast", fail_fast, bool, "a bool")
    _check_limits(owner, max_concurrency, min_successes)

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        elements = ctx.inputs.get(over)
        if not isinstance(elements, Sequence) or isinstance(elements, str):
            message = f"fan_out {name!r} needs input {over!r} to be a list, got {elements!r}"
            return IOFailure(
                PipelineError(name, ErrorType.MISSING_INPUT, message, {"missing": [over]})
            )
        for key in (item, f"{item}_index"):
            if key in ctx.inputs:
                message = f"fan_out {name!r}: input {key!r} exists already; choose another item="
                return IOFailure(PipelineError(name, ErrorType.CONTEXT_COLLISION, message))
        work = [
            Branch(
                name,
                branch_path(name, index),
                step,
                WorkflowContext(inputs={**ctx.inputs, item: element, f"{item}_index": index}),
            )
            for index, element in enumerate(elements)
        ]
        outcomes = run_branches(name, work, max_concurrency, min_successes, fail_fast=fail_fast)
        verdict = _verdict(name, work, outcomes, min_successes, fail_fast=fail_fast)
        if isinstance(verdict, PipelineError):
            return IOFailure(verdict)
        results = tuple(
            dict(outcome.outputs) if outcome.status in {"succeeded", "reused"} else None
            for outcome in outcomes
        )
        return IOSuccess(ctx.merge_outputs({name: results, f"{name}_failures": verdict}))

    return Step(
        name,
        run,
        rerun_on_resume=rerun_on_resume,
        kind="fan_out",
        spec=FanOutSpec(step, over, item, max_concurrency, min_successes, fail_fast),
        children=(step,),
    )
