"""Functions from steps to steps: `with_verification` and `sequence`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_callable, require_count, require_type
from adws._exceptions import DefinitionError
from adws.engine.context import WorkflowContext, promote
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.events import RoundFailed
from adws.engine.protect import Guard, check_protect
from adws.engine.retry import current_attempt, exception_error, reraise_interrupt, retry_step
from adws.engine.scope import current_scope
from adws.engine.step import Step

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["SequenceSpec", "VerificationSpec", "failures_of", "sequence", "with_verification"]


@final
@attrs.frozen
class VerificationSpec:
    """Describe a `with_verification` step, for `adws show` and `--agent`."""

    main: Step
    verify: Step
    max_attempts: int
    baseline: bool = False
    recheck: int = 0
    protect: tuple[str, ...] = ()


def _round_feedback(round_number: int, max_rounds: int, error: PipelineError) -> str:
    return (
        f"verification round {round_number}/{max_rounds} failed: "
        f"{error.error_type}: {error.message}"
    )


def _new_feedback(round_number: int, max_rounds: int, new: Mapping[str, str]) -> str:
    """Tell the agent only what it broke: the failures that were not failing before."""
    lines = "\n".join(f"- {new[key]}" for key in sorted(new))
    return (
        f"verification round {round_number}/{max_rounds} failed: {len(new)} new"
        f" failure{'s' if len(new) != 1 else ''}:\n{lines}"
    )


def failures_of(error: PipelineError) -> dict[str, str]:
    """Name a verify error's failures by id: its parser's (`shell_step(failures=...)`).

    An error no parser named is one failure, its kind: any `ShellFailed` is
    the same failure as any other.

    >>> failures_of(PipelineError("t", "ShellFailed", "exit 1", {"failures": ["a::t"]}))
    {'a::t': 'a::t'}
    >>> failures_of(PipelineError("t", "ShellFailed", "exit 1"))
    {'ShellFailed': 'ShellFailed: exit 1'}
    """
    ids = error.context.get("failures")
    details = error.context.get("failure_details")
    details = details if isinstance(details, Mapping) else {}
    if isinstance(ids, list | tuple) and ids:
        return {str(key): str(details.get(key, key)) for key in ids}
    return {str(error.error_type): f"{error.error_type}: {error.message.strip()}"}


@final
@attrs.frozen
class _Verdict:
    """What a failed verify means once the baseline and the rechecks are known."""

    failing: Mapping[str, str]
    new: Mapping[str, str]
    flaky: Mapping[str, str]


def _judged(
    verify: Step, ctx: WorkflowContext, error: PipelineError, known: Mapping[str, str], recheck: int
) -> _Verdict:
    """Recheck a failed verify up to `recheck` times; tell what still fails, what is new."""
    failing = failures_of(error)
    flaky: dict[str, str] = {}
    for _ in range(recheck):
        if not set(failing) - set(known):
            break  # only old failures left: nothing a recheck could clear the round of
        again, _ = retry_step(verify, ctx)
        still = {} if isinstance(again, WorkflowContext) else failures_of(again)
        flaky.update({key: detail for key, detail in failing.items() if key not in still})
        failing = {key: detail for key, detail in failing.items() if key in still}
    new = {key: detail for key, detail in failing.items() if key not in known}
    return _Verdict(failing, new, flaky)


def with_verification(  # noqa: C901, PLR0913, PLR0915 - DESIGN's options, keyword-only; one round loop
    main: Step,
    verify: Step,
    *,
    max_attempts: int = 3,
    name: str | None = None,
    rerun_on_resume: bool = False,
    baseline: bool = False,
    recheck: int = 0,
    protect: Sequence[str] = (),
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

    Checks fail for reasons that are not the agent's. Failures are compared
    by id (`failures_of`: what `shell_step(..., failures=PARSER)` named).
    `baseline=True` first runs `verify` once on the untouched workspace
    (inside a `worktree`, its base commit); a round then passes when it adds
    no failure the baseline did not have, and only the new ones are fed
    back (one line each), never the pre-existing ones. `recheck=N` runs a
    failing verify up to N more times: a failure that passes on a recheck
    is flaky, not counted against the round and never fed back. With
    either, the outputs also hold `<name>_failures` (the ids still failing
    in the last round: pre-existing ones), `<name>_baseline` and
    `<name>_flaky` (sorted ids), and a failed round's error carries
    `new_failures`, `baseline` and `flaky` in its context.
    `protect=("tests/**", ...)`: a round whose `main` changed a protected
    path of the workspace (the worktree in flight, else the current
    folder; compared with how it was when the step began) fails `Tampered`
    before any check runs, and the next round is told to restore the files.
    """
    owner = "with_verification"
    require_type(owner, "main", main, Step, "a Step")
    require_type(owner, "verify", verify, Step, "a Step")
    require_count(owner, "max_attempts", max_attempts)
    require_type(owner, "baseline", baseline, bool, "a bool")
    if recheck != 0:
        require_count(owner, "recheck", recheck)
    globs = check_protect(owner, protect)
    judging = baseline or recheck > 0

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

    def extras(known: Mapping[str, str], verdict: _Verdict | None) -> dict[str, object]:
        if not judging:
            return {}
        return {
            f"{step_name}_failures": sorted(verdict.failing) if verdict else [],
            f"{step_name}_baseline": sorted(known),
            f"{step_name}_flaky": sorted(verdict.flaky) if verdict else [],
        }

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:  # noqa: C901, PLR0911 - a round: made, guarded, checked, judged
        guard = Guard(step_name, globs) if globs else None
        known: dict[str, str] = {}
        if baseline:
            before, _ = retry_step(verify, ctx)
            known = {} if isinstance(before, WorkflowContext) else failures_of(before)
        round_ctx = ctx
        error = PipelineError("", ErrorType.STEP_EXCEPTION, "no verification round ran")
        for round_number in range(1, max_attempts + 1):
            made, _ = retry_step(main, round_ctx)
            if isinstance(made, PipelineError):
                return IOFailure(made.with_step_name(main.name))
            tampered = guard.check() if guard is not None else None
            if tampered is not None:
                error = tampered
                again = verify.retry.retry_on(error) and round_number < max_attempts
                report(round_number, error, again=bool(again))
                if not again:
                    break
                feedback = _round_feedback(round_number, max_attempts, error)
                round_ctx = round_ctx.add_feedback(feedback)
                continue
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
                outputs = {**made.outputs, **checked.outputs, **extras(known, None)}
                return IOSuccess(ctx.merge_outputs(outputs))
            error = checked.with_step_name(verify.name)
            retryable = verify.retry.retry_on(error)
            feedback = _round_feedback(round_number, max_attempts, error)
            if retryable and judging:
                verdict = _judged(verify, promoted, error, known, recheck)
                if not verdict.new:
                    outputs = {**made.outputs, **extras(known, verdict)}
                    return IOSuccess(ctx.merge_outputs(outputs))
                error = error.with_context(
                    new_failures=sorted(verdict.new),
                    baseline=sorted(known),
                    flaky=sorted(verdict.flaky),
                )
                feedback = _new_feedback(round_number, max_attempts, verdict.new)
            report(round_number, error, again=bool(retryable) and round_number < max_attempts)
            if not retryable:
                return IOFailure(error)
            round_ctx = round_ctx.add_feedback(feedback)
        return IOFailure(error.with_context(rounds=max_attempts))

    return Step(
        step_name,
        run,
        rerun_on_resume=rerun_on_resume,
        kind="verification",
        spec=VerificationSpec(main, verify, max_attempts, baseline, recheck, globs),
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
