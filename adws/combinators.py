"""Functions from steps to steps: `with_verification`."""

from __future__ import annotations

from typing import final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_count, require_type
from adws.context import WorkflowContext, promote
from adws.errors import ErrorType, PipelineError
from adws.retry import retry_step
from adws.step import Step

__all__ = ["VerificationSpec", "with_verification"]


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
    Retries inside a round wait through the run's injected `sleep`.
    `rerun_on_resume` makes `adws resume` run it again (see `Step`).
    """
    require_type("with_verification", "main", main, Step, "a Step")
    require_type("with_verification", "verify", verify, Step, "a Step")
    require_count("with_verification", "max_attempts", max_attempts)

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
            if not verify.retry.retry_on(error):
                return IOFailure(error)
            round_ctx = round_ctx.add_feedback(_round_feedback(round_number, max_attempts, error))
        return IOFailure(error.with_context(rounds=max_attempts))

    return Step(
        name or f"{main.name}_verified",
        run,
        rerun_on_resume=rerun_on_resume,
        kind="verification",
        spec=VerificationSpec(main, verify, max_attempts),
        children=(main, verify),
    )
