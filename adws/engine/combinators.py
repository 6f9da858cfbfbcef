"""Functions from steps to steps: `with_verification` and `sequence`.

`with_verification` lives in `adws.engine.verification` (its rounds, baseline,
targets and guard); this module hands its names on beside `sequence`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_callable, require_type
from adws._exceptions import DefinitionError
from adws.engine.context import WorkflowContext, promote
from adws.engine.retry import exception_error, reraise_interrupt, retry_step
from adws.engine.step import Step
from adws.engine.verification import VerificationSpec, failures_of, with_verification

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.engine.errors import PipelineError

__all__ = ["SequenceSpec", "VerificationSpec", "failures_of", "sequence", "with_verification"]


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
        raise DefinitionError(msg)
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
