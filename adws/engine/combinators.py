"""Functions from steps to steps: `with_verification` and `sequence`."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_callable, require_count, require_type
from adws.engine.context import WorkflowContext, promote
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.events import RoundFailed
from adws.engine.retry import current_attempt, exception_error, reraise_interrupt, retry_step
from adws.engine.scope import current_scope
from adws.engine.step import Step

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["SequenceSpec", "VerificationSpec", "sequence", "with_verification"]


@final
@attrs.frozen
class VerificationSpec:
    """Describe a `with_verification` step, for `adws show` and `--agent`."""

    main: Step
    verify: Step
    max_attempts: int


def _round_feedback(round_number: int, max_rounds: int, error: PipelineError) -> str:
    return (
        f"verification round {round_number}/{max_rounds} failed: "
        f"{error.error_type}: {error.message}"
    )


def with_verification(
    main: Step,
    verify: Step,
    *,
    max_attempts: int = 3,
    name: str | None = None,
    rerun_on_resume: bool = False,
) -> Step:
    """Run `main`, then `verify` on its outputs; on a failed verify, run both again.

    Each round starts from the step's own context plus one feedback line per
    failed verification, so the third round of `main` sees both earlier
    verify errors. `verify` sees `main`'s outputs as inputs. Each inner step
    keeps its own retry policy (an agent's self-healing retries happen inside
    a round); their attempts are not reported as separate events. The
    combined outputs are `main`'s plus `verify`'s; the step is named
    `<main>_verified` unless `name` is given. A `main` failure, or a verify
    error its policy will not retry (`Blocked`), ends the step at once; after
    `max_attempts` rounds the last verify error is returned with `rounds`.
    Each failed round is reported to the run's observers (`RoundFailed`),
    so progress, the journal and `adws status` show every round's error.
    Retries inside a round wait through the run's injected `sleep`.
    `rerun_on_resume` makes `adws resume` run it again (see `Step`).
    """
    require_type("with_verification", "main", main, Step, "a Step")
    require_type("with_verification", "verify", verify, Step, "a Step")
    require_count("with_verification", "max_attempts", max_attempts)

    step_name = name or f"{main.name}_verified"

    def report(round_number: int, error: PipelineError, *, again: bool) -> None:
        scope = current_scope()
        path, attempt = current_attempt()
        event = RoundFailed(
            scope.run_id,
            step_name,
            scope.index,
            scope.total,
            path or step_name,
            attempt or 1,
            round_number,
            max_attempts,
            error,
            again,
        )
        scope.emit(event)

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        round_ctx = ctx
        error = PipelineError("", ErrorType.STEP_EXCEPTION, "no verification round ran")
        for round_number in range(1, max_attempts + 1):
            made, _ = retry_step(main, round_ctx)
            if isinstance(made, PipelineError):
                return IOFailure(made.with_step_name(main.name))
            promoted = promote(ctx.inputs, made.outputs)
            if isinstance(promoted, PipelineError):
                return IOFailure(promoted.with_step_name(main.name))
            checked, _ = retry_step(verify, promoted)
            if isinstance(checked, WorkflowContext):
                clashes = sorted(set(made.outputs) & set(checked.outputs))
                if clashes:
                    return IOFailure(
                        PipelineError(
                            verify.name,
                            ErrorType.CONTEXT_COLLISION,
                            f"verify output {clashes[0]!r} would overwrite main's output",
                            {"keys": clashes},
                        )
                    )
                return IOSuccess(ctx.merge_outputs(made.outputs).merge_outputs(checked.outputs))
            error = checked.with_step_name(verify.name)
            retryable = verify.retry.retry_on(error)
            report(round_number, error, again=bool(retryable) and round_number < max_attempts)
            if not retryable:
                return IOFailure(error)
            round_ctx = round_ctx.add_feedback(_round_feedback(round_number, max_attempts, error))
        return IOFailure(error.with_context(rounds=max_attempts))

    return Step(
        step_name,
        run,
        rerun_on_resume=rerun_on_resume,
        kind="verification",
        spec=VerificationSpec(main, verify, max_attempts),
        children=(main, verify),
    )


@final
@attrs.frozen
class SequenceSpec:
    """Describe a `sequence` step, for `adws show`, the fingerprint and `--agent`."""

    steps: tuple[Step, ...]


def _skipped(step: Step, ctx: WorkflowContext) -> bool | PipelineError:
    """Tell whether `step.when` skips it here, or return the error a raising condition is."""
    try:
        return step.when is not None and not step.when(ctx)
    except BaseException as exc:  # noqa: BLE001 - rule 6 of the executor, inside a sequence
        reraise_interrupt(exc)
        return exception_error(step.name, exc, f"the condition of step {step.name!r}")


def _run_in_order(
    steps: tuple[Step, ...], ctx: WorkflowContext
) -> tuple[dict[str, object], PipelineError | None]:
    """Run `steps` as the executor runs a workflow's; return their outputs and the first error."""
    inputs = ctx.inputs
    outputs: dict[str, object] = {}
    first: PipelineError | None = None
    late: list[PipelineError] = []
    for step in steps:
        if first is not None and not step.always_run:
            continue
        failure = first if first is not None else ctx.failure
        step_ctx = WorkflowContext(inputs, feedback=ctx.feedback, failure=failure)
        skipped = _skipped(step, step_ctx)
        if skipped is True:
            continue
        made = retry_step(step, step_ctx)[0] if skipped is False else skipped
        if isinstance(made, WorkflowContext):
            promoted = promote(inputs, made.outputs)
            if isinstance(promoted, WorkflowContext):
                outputs.update(made.outputs)
                inputs = promoted.inputs
                continue
            made = promoted.with_step_name(step.name)
        if first is None:
            first = made
        else:
            late.append(made)
    if first is not None and late:
        first = first.with_context(always_run_failures=late)
    return outputs, first


def sequence(
    name: str,
    steps: Sequence[Step],
    *,
    always_run: bool = False,
    when: Callable[[WorkflowContext], bool] | None = None,
    rerun_on_resume: bool = False,
) -> Step:
    """Build a step that runs `steps` one after another: a sub-pipeline as one step.

    Inside, the executor's rules hold: each step runs under its own retry
    policy, its outputs are promoted into inputs for the next (a clash is a
    `ContextCollision`), a `when` that is false skips it, and at the first
    failure the rest are skipped but for `always_run` steps, which see the
    failure in `ctx.failure`; the step fails with that first error (later
    errors of `always_run` steps under `context["always_run_failures"]`).
    On success its outputs are every output of its steps. Each step sees
    the feedback the sequence was given, so `with_verification(sequence(
    "stage", [plan, execute]), verify)` re-runs the whole stage with
    verify's complaint, and `fan_out("items", sequence(...), over=...)` runs
    a sub-pipeline per item. Step names must be distinct; like a
    combinator's inner steps, their attempts are not separate events.
    `rerun_on_resume` makes `adws resume` run it again (see `Step`).
    """
    owner = f"sequence {name!r}"
    require_type(owner, "steps", steps, (list, tuple), "a list of Steps")
    children = tuple(steps)
    for child in children:
        require_type(owner, "steps", child, Step, "a sequence of Steps")
    names = [child.name for child in children]
    if len(set(names)) != len(names):
        msg = f"{owner}: step names must be distinct, got {names}"
        raise ValueError(msg)
    require_callable(owner, "when", when, optional=True)

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        outputs, error = _run_in_order(children, ctx)
        if error is not None:
            return IOFailure(error)
        return IOSuccess(ctx.merge_outputs(outputs))

    return Step(
        name,
        run,
        always_run=always_run,
        when=when,
        rerun_on_resume=rerun_on_resume,
        kind="sequence",
        spec=SequenceSpec(children),
        children=children,
    )
