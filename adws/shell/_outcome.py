"""Judge what a shell step's command did: its outputs, or an error that says what ran.

A failure names the command as written, the values it ran with (or its
argv), its return code and the tails of its output; a success writes
`<name>_stdout`, `_stderr` and `_returncode` (and `_ran`, the script a
step wrote, with `allow_generated`).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from returns.io import IOFailure, IOResult, IOSuccess

from adws import io_ops
from adws.engine.errors import ErrorType, PipelineError
from adws.shell.failures import CommandOutput, FailureParser, failures_of, passes_of, unnamed

if TYPE_CHECKING:
    from collections.abc import Mapping

    from adws.engine.context import WorkflowContext
    from adws.shell._plan import Plan

__all__ = ["command_label", "judge", "ran_values"]


def ran_values(plan: Plan | None, argv: tuple[str, ...]) -> dict[str, object]:
    """Say what really ran, for a failure: the argv, or the values a script was given.

    An argv without a shell is exact as it is; a script's values are passed
    apart from it, so they are named with the keys they came from.
    """
    if plan is None:
        return {}
    if plan.script is None:
        return {"argv": list(argv)}
    placeholders = plan.script.placeholders
    start = plan.script_at + 2  # the values follow the script's $0 (see `_plan.fill_argv`)
    values = argv[start : start + len(placeholders)]
    return {"values": {p.text: value for p, value in zip(placeholders, values, strict=True)}}


def command_label(command: str | tuple[str, ...] | None) -> str | None:
    """Name the command in messages: the template as written (None: the script, at run time)."""
    if command is None:
        return None
    return f"`{command if isinstance(command, str) else shlex.join(command)}`"


def _named(
    parser: FailureParser, outcome: io_ops.ProcessOutcome, cwd: str | None
) -> dict[str, object]:
    """Name a failed command's failures (and, when the parser can, what passed) for its error."""
    told = CommandOutput(outcome.stdout, outcome.stderr, outcome.returncode, cwd)
    found = failures_of(parser, told)
    details: dict[str, object] = {"failures": sorted(found), "failure_details": found}
    if unnamed(found):
        details["unnamed"] = True
    passed = passes_of(parser, told)
    if passed is not None:
        details["passed"] = passed
    return details


def judge(  # noqa: PLR0913 - the outcome and what it is judged against
    name: str,
    shown: str,
    ctx: WorkflowContext,
    outcome: io_ops.ProcessOutcome,
    ran: Mapping[str, object],
    *,
    timeout: float | None,
    max_output_bytes: int,
    script: str | None,
    keep_script: bool,
    parser: FailureParser | None = None,
    cwd: str | None = None,
) -> IOResult[WorkflowContext, PipelineError]:
    """Turn a finished command into the step's result: its outputs, or the error it is."""
    details: dict[str, object] = {
        "command": shown[1:-1],
        **ran,
        "returncode": outcome.returncode,
        "stdout_tail": io_ops.tail(outcome.stdout),
        "stderr_tail": io_ops.tail(outcome.stderr),
    }
    if script is not None:
        details["script"] = script
    if outcome.error is not None:
        message = f"could not run {shown}: {outcome.error}"
        return IOFailure(PipelineError(name, ErrorType.SHELL_FAILED, message, details))
    if outcome.overflowed is not None:
        message = (
            f"{shown} printed more than {max_output_bytes} bytes on {outcome.overflowed} "
            "(max_output_bytes) and was killed"
        )
        details["limit"] = max_output_bytes
        return IOFailure(PipelineError(name, ErrorType.SHELL_FAILED, message, details))
    if outcome.timed_out:
        message = f"{shown} ran past its {timeout}s timeout and was killed"
        return IOFailure(PipelineError(name, ErrorType.TIMEOUT, message, details))
    if outcome.returncode != 0:
        parts = (outcome.stdout.strip(), outcome.stderr.strip())
        output = "\n".join(part for part in parts if part)
        message = f"{shown} exited with {outcome.returncode}"
        message += f":\n{io_ops.tail(output, 1500)}" if output else " and printed nothing"
        if parser is not None:
            details.update(_named(parser, outcome, cwd))
        return IOFailure(PipelineError(name, ErrorType.SHELL_FAILED, message, details))
    outputs: dict[str, object] = {
        f"{name}_stdout": outcome.stdout,
        f"{name}_stderr": outcome.stderr,
        f"{name}_returncode": outcome.returncode,
    }
    if keep_script:
        outputs[f"{name}_ran"] = script
    if parser is not None:
        outputs[f"{name}_failures"] = []
        told = CommandOutput(outcome.stdout, outcome.stderr, outcome.returncode, cwd)
        passed = passes_of(parser, told)
        if passed is not None:
            outputs[f"{name}_passed"] = passed
    return IOSuccess(ctx.merge_outputs(outputs))
