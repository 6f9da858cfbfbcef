"""Concurrency inside one step: `parallel` and `fan_out`.

(DESIGN's layout calls this module `parallel.py`; it is `concurrency.py` so
that importing it never shadows the function `adws.parallel`, the trap
`adws.agent_step` fell into. `from adws import parallel, fan_out` is the way in.)

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
- On success `parallel` merges the succeeded branches' outputs in
  declaration order (a key two branches write is a `ContextCollision`,
  refused at definition time where the keys are known); `fan_out` outputs
  `name`, a tuple in element order of each branch's outputs (None for a
  branch that failed or was cancelled). Both add `<name>_failures`, the
  `to_dict()` of each failed branch's error.
- Ctrl-C (or SIGTERM) while branches run cancels them all, waits for their
  threads, and re-raises, so the run ends `Interrupted` after cleanup.
- Each branch reports `BranchStarted`, `BranchAttemptFailed` and
  `BranchFinished` to the run's observers, one event at a time; a resume
  reuses the stored outputs of branches that already succeeded.
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Final, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws import io_ops
from adws._checks import require_callable, require_count, require_type
from adws.context import WorkflowContext
from adws.errors import ErrorType, PipelineError
from adws.events import BranchAttemptFailed, BranchFinished, BranchStarted, BranchStatus
from adws.executor import RunScope, current_scope, enter_branch, retry_step
from adws.step import Step
from adws.usage import Meter, Usage

__all__ = ["TOO_FEW_SUCCESSES", "FanOutSpec", "ParallelSpec", "fan_out", "parallel"]

_TICK: Final = 0.05

TOO_FEW_SUCCESSES: Final = "TooFewSuccesses"
"""The error kind of a parallel step whose branches could not all run (none failed)."""


@final
@attrs.frozen
class ParallelSpec:
    """Describe a `parallel` step, for `adws show`, the fingerprint and `--agent`."""

    branches: tuple[Step, ...]
    max_concurrency: int | None
    min_successes: int | None


@final
@attrs.frozen
class FanOutSpec:
    """Describe a `fan_out` step, for `adws show`, the fingerprint and `--agent`."""

    step: Step
    over: str
    item: str
    max_concurrency: int | None
    min_successes: int | None


@final
@attrs.frozen
class _Branch:
    parent: str
    path: str
    step: Step
    ctx: WorkflowContext


@final
@attrs.define
class _Outcome:
    status: BranchStatus | None = None
    outputs: Mapping[str, object] = attrs.field(factory=dict)
    error: PipelineError | None = None
    usage: Usage | None = None
    """What a succeeded branch's last attempt spent (failed ones are on their own events)."""


def _wait(scope: RunScope, cancel: threading.Event) -> Callable[[float], None]:
    """Sleep through the run's `sleep`, but never past a cancellation."""
    if scope.sleep is not time.sleep:
        return scope.sleep  # a test's fake clock: it does not wait anyway

    def wait_unless_cancelled(seconds: float) -> None:
        cancel.wait(seconds)

    return wait_unless_cancelled


def _run_branch(
    branch: _Branch, scope: RunScope, cancel: threading.Event, outcome: _Outcome
) -> None:
    """Run one branch in its thread, under its retry policy; fill `outcome`."""
    step, path = branch.step, branch.path
    io_ops.CANCEL.set(cancel)
    enter_branch(path)
    attempts = step.retry.max_attempts
    parent = branch.parent
    scope.emit(BranchStarted(scope.run_id, parent, scope.index, scope.total, path, attempts))

    meters: list[Meter] = []

    def report(n: int, error: PipelineError, again: bool, delay: float, secs: float) -> None:  # noqa: FBT001 - retry_step's hook signature
        event = BranchAttemptFailed(
            scope.run_id,
            parent,
            scope.index,
            scope.total,
            path,
            n,
            attempts,
            error,
            again,
            delay,
            secs,
            meters[-1].report(),
        )
        scope.emit(event)

    made, _ = retry_step(
        step, branch.ctx, sleep=_wait(scope, cancel), on_attempt_failed=report, meters=meters
    )
    if isinstance(made, WorkflowContext):  # it finished before the cancellation reached it
        outcome.status, outcome.outputs = "succeeded", made.outputs
        outcome.usage = meters[-1].report()
    elif cancel.is_set():
        outcome.status = "cancelled"
    else:
        outcome.status, outcome.error = "failed", attrs.evolve(made, step_name=path)


def _run_all(  # noqa: C901, PLR0915 - the scheduler: start, watch, cancel, report
    name: str,
    branches: Sequence[_Branch],
    max_concurrency: int | None,
    min_successes: int | None,
) -> list[_Outcome]:
    """Run the branches, at most `max_concurrency` at once; return their outcomes in order."""
    scope = current_scope()
    needed = len(branches) if min_successes is None else min_successes
    outcomes = [_Outcome() for _ in branches]
    cancels = [threading.Event() for _ in branches]
    stop = threading.Event()
    counts = {"done": 0, "failed": 0}

    def finish(index: int, seconds: float) -> None:
        outcome = outcomes[index]
        if outcome.status in {"succeeded", "reused"}:
            counts["done"] += 1
        elif outcome.status == "failed":
            counts["failed"] += 1
        branch = branches[index]
        scope.emit(
            BranchFinished(
                scope.run_id,
                name,
                scope.index,
                scope.total,
                branch.path,
                outcome.status or "cancelled",
                0 if outcome.status == "reused" else 1,
                seconds,
                outcome.error,
                outcome.outputs,
                counts["done"],
                counts["failed"],
                len(branches),
                outcome.usage,
            )
        )
        if len(branches) - counts["failed"] < needed:
            stop.set()  # k is out of reach: stop everything still running

    pending: dict[Future[None], tuple[int, float]] = {}
    waiting = deque(range(len(branches)))
    workers = max_concurrency or max(len(branches), 1)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"adws-{name}") as pool:
        try:
            while waiting or pending:
                # Start branches only while there is room and no reason to stop: a branch
                # that never started is cancelled without ever running.
                while waiting and len(pending) < workers and not stop.is_set():
                    index = waiting.popleft()
                    stored = scope.reuse.get(branches[index].path)
                    if stored is not None:
                        outcomes[index].status, outcomes[index].outputs = "reused", stored
                        finish(index, 0.0)
                        continue
                    job = functools.partial(
                        _run_branch, branches[index], scope, cancels[index], outcomes[index]
                    )
                    future = pool.submit(contextvars.copy_context().run, job)
                    pending[future] = (index, io_ops.monotonic())
                if stop.is_set():
                    _cancel(pending, cancels)
                    while waiting:
                        index = waiting.popleft()
                        outcomes[index].status = "cancelled"
                        finish(index, 0.0)
                if not pending:
                    continue
                done, _ = wait(tuple(pending), timeout=_TICK, return_when=FIRST_COMPLETED)
                for future in done:
                    index, started = pending.pop(future)
                    future.result()
                    finish(index, io_ops.monotonic() - started)
        except BaseException:
            # Ctrl-C or SIGTERM while branches run: stop them all, let their threads
            # end, record how each ended, then let the run clean up as interrupted.
            _cancel(pending, cancels)
            wait(tuple(pending))
            for index, started in pending.values():
                finish(index, io_ops.monotonic() - started)
            for index in waiting:
                outcomes[index].status = "cancelled"
                finish(index, 0.0)
            raise
    return outcomes


def _cancel(
    pending: Mapping[Future[None], tuple[int, float]], cancels: Sequence[threading.Event]
) -> None:
    """Cancel every running branch: it starts no new process, and its groups are killed."""
    for index, _ in pending.values():
        cancels[index].set()
        io_ops.kill_groups_of(cancels[index])  # again on a later tick: harmless, groups are gone


def _branches_map(
    branches: Sequence[_Branch], outcomes: Sequence[_Outcome]
) -> dict[str, dict[str, object]]:
    return {
        branch.path: {
            "status": outcome.status,
            "error": None if outcome.error is None else outcome.error.to_dict(),
        }
        for branch, outcome in zip(branches, outcomes, strict=True)
    }


def _verdict(
    name: str,
    branches: Sequence[_Branch],
    outcomes: Sequence[_Outcome],
    min_successes: int | None,
) -> PipelineError | list[dict[str, object]]:
    """Fail with the first failed branch's error, or list the failures of a success."""
    succeeded = sum(outcome.status in {"succeeded", "reused"} for outcome in outcomes)
    needed = len(branches) if min_successes is None else min_successes
    failures = [outcome.error for outcome in outcomes if outcome.error is not None]
    if succeeded >= needed:
        return [error.to_dict() for error in failures]
    if failures:
        first = failures[0]
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
        raise ValueError(msg)
    _check_limits(owner, max_concurrency, min_successes)
    if min_successes is not None and min_successes > len(branches):
        msg = f"{owner}: min_successes={min_successes} but there are {len(branches)} branches"
        raise ValueError(msg)
    seen: dict[str, str] = {}
    for branch in branches:
        for key in sorted(_known_keys(branch)):
            if key in seen:
                msg = (
                    f"{owner}: branches {seen[key]!r} and {branch.name!r} both write {key!r}; "
                    "their outputs would collide"
                )
                raise ValueError(msg)
            seen[key] = branch.name


def parallel(  # noqa: PLR0913 - DESIGN's signature, all keyword-only
    name: str,
    steps: Sequence[Step],
    *,
    max_concurrency: int | None = None,
    min_successes: int | None = None,
    always_run: bool = False,
    when: Callable[[WorkflowContext], bool] | None = None,
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

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        work = [_Branch(name, f"{name}[{step.name}]", step, ctx) for step in branches]
        outcomes = _run_all(name, work, max_concurrency, min_successes)
        verdict = _verdict(name, work, outcomes, min_successes)
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
        spec=ParallelSpec(branches, max_concurrency, min_successes),
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
    require_type(owner, "over", over, str, "an input name")
    require_type(owner, "item", item, str, "an input name")
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
            _Branch(
                name,
                f"{name}[{index}]",
                step,
                WorkflowContext(inputs={**ctx.inputs, item: element, f"{item}_index": index}),
            )
            for index, element in enumerate(elements)
        ]
        outcomes = _run_all(name, work, max_concurrency, min_successes)
        verdict = _verdict(name, work, outcomes, min_successes)
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
        spec=FanOutSpec(step, over, item, max_concurrency, min_successes),
        children=(step,),
    )
