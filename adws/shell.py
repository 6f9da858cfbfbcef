"""`shell_step`: run a command; its output becomes the step's outputs."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws import io_ops
from adws.errors import ErrorType, PipelineError
from adws.step import RetryPolicy, Step
from adws.template import missing_input_error, placeholders, render, render_for_step

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.context import WorkflowContext

__all__ = ["ShellSpec", "shell_step"]


@final
@attrs.frozen
class ShellSpec:
    """Describe a shell step, for `adws show` and the fingerprint."""

    command: str | tuple[str, ...]
    timeout: float | None
    cwd: str | None


def _argv(
    name: str, command: str | tuple[str, ...], ctx: WorkflowContext
) -> tuple[str, ...] | PipelineError:
    if isinstance(command, str):
        script = render_for_step(
            command, ctx.inputs, step_name=name, what="the command", quote=shlex.quote
        )
        return script if isinstance(script, PipelineError) else ("sh", "-c", script)
    needed = dict.fromkeys(key for part in command for key in placeholders(part))
    missing = tuple(key for key in needed if key not in ctx.inputs)
    if missing:
        return missing_input_error(name, "the command", missing, ctx.inputs)
    return tuple(render(part, ctx.inputs).unwrap() for part in command)


def shell_step(  # noqa: PLR0913 - the step's whole configuration, all keyword-only
    name: str,
    command: str | Sequence[str],
    *,
    timeout: float | None = None,
    cwd: str | None = None,
    always_run: bool = False,
    retry: RetryPolicy = RetryPolicy(),  # noqa: B008 - frozen, safe to share
    when: Callable[[WorkflowContext], bool] | None = None,
) -> Step:
    """Build a step that runs `command` and records its output.

    An argv list runs without a shell, each `{key}` filled in as-is. A string
    runs under `sh -c` with every substituted value shell-quoted, so no input
    can inject a command. `cwd` may hold placeholders too. Outputs are
    `<name>_stdout`, `<name>_stderr` and `<name>_returncode`; a non-zero exit
    is `ShellFailed` (with the tails of stdout and stderr), a timeout kills
    the process group and is `Timeout`.
    """
    spec_command = command if isinstance(command, str) else tuple(command)

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        rendered = _argv(name, spec_command, ctx)
        where = render_for_step(cwd, ctx.inputs, step_name=name, what="the cwd")
        if isinstance(rendered, PipelineError):
            return IOFailure(rendered)
        if isinstance(where, PipelineError):
            return IOFailure(where)
        outcome = io_ops.run_process(rendered, timeout=timeout, cwd=where)
        shown = rendered[2] if isinstance(spec_command, str) else shlex.join(rendered)
        details: dict[str, object] = {
            "command": shown,
            "returncode": outcome.returncode,
            "stdout_tail": io_ops.tail(outcome.stdout),
            "stderr_tail": io_ops.tail(outcome.stderr),
        }
        if outcome.error is not None:
            message = f"could not run `{shown}`: {outcome.error}"
            return IOFailure(PipelineError(name, ErrorType.SHELL_FAILED, message, details))
        if outcome.timed_out:
            message = f"`{shown}` ran past its {timeout}s timeout and was killed"
            return IOFailure(PipelineError(name, ErrorType.TIMEOUT, message, details))
        if outcome.returncode != 0:
            parts = (outcome.stdout.strip(), outcome.stderr.strip())
            output = "\n".join(part for part in parts if part)
            message = f"`{shown}` exited with {outcome.returncode}"
            message += f":\n{io_ops.tail(output, 1500)}" if output else " and printed nothing"
            return IOFailure(PipelineError(name, ErrorType.SHELL_FAILED, message, details))
        return IOSuccess(
            ctx.merge_outputs(
                {
                    f"{name}_stdout": outcome.stdout,
                    f"{name}_stderr": outcome.stderr,
                    f"{name}_returncode": outcome.returncode,
                }
            )
        )

    return Step(
        name,
        run,
        always_run=always_run,
        retry=retry,
        when=when,
        kind="shell",
        spec=ShellSpec(spec_command, timeout, cwd),
    )
