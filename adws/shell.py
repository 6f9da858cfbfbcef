"""`shell_step`: run a command; its output becomes the step's outputs.

A value is data, never code: see `adws._shell_script` for how each
placeholder of a shell script becomes a positional parameter.
"""

from __future__ import annotations

import shlex
from pathlib import PurePath
from typing import TYPE_CHECKING, Final, final

import attrs
from returns.io import IOFailure, IOResult, IOSuccess

from adws import io_ops
from adws._argv import SHELLS, ArgvError, locate_script
from adws._checks import require_count, require_seconds, require_type
from adws._shell_script import ShellScript, compile_script
from adws.errors import ErrorType, PipelineError
from adws.step import RetryPolicy, Step
from adws.template import missing_input_error, placeholders, render, render_for_step, to_text

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from adws.context import WorkflowContext

__all__ = ["SHELLS", "SHELL_MAX_OUTPUT_BYTES", "ShellSpec", "shell_step"]

SHELL_MAX_OUTPUT_BYTES: Final = 16 << 20
"""How much a shell step may print on stdout (and on stderr) before it is killed."""


@final
@attrs.frozen
class ShellSpec:
    """Describe a shell step, for `adws show` and the fingerprint.

    `command` is the template as written (None when `script_from` names
    the input that holds the script).
    """

    command: str | tuple[str, ...] | None
    timeout: float | None
    cwd: str | None
    script_from: str | None = None
    max_output_bytes: int = SHELL_MAX_OUTPUT_BYTES


@final
@attrs.frozen
class _Plan:
    """How to build a step's argv from a run's inputs.

    `argv` holds the template's parts (rendered as plain text: no shell sees
    them) with the script, if any, at `script_at` already compiled; the
    values of the script's placeholders go in at `script_at + 2`, right
    after the script's `$0`, where the script takes them (see
    `adws._shell_script`), so the user's own arguments after `$0` stay `$1`,
    `$2`, ...
    """

    argv: tuple[str, ...]
    script: ShellScript | None = None
    script_at: int = -1


def _plan(name: str, command: str | tuple[str, ...]) -> _Plan:
    if isinstance(command, str):
        return _Plan(("sh", "-c", "", "sh"), compile_script(command, step_name=name), 2)
    try:
        at = locate_script(command)
    except ArgvError as exc:
        if any(placeholders(part) for part in command):
            msg = (
                f"shell_step {name!r}: cannot tell where the script starts in {list(command)}"
                f" ({exc}); give the shell its options plainly, as in ['bash', '-c', SCRIPT]"
            )
            raise ValueError(msg) from exc
        at = None  # nothing to protect: no value goes into this command
    if at is None:
        return _Plan(command)
    script = compile_script(command[at], step_name=name)
    shell = next(
        PurePath(part).name for part in reversed(command[:at]) if PurePath(part).name in SHELLS
    )
    after = command[at + 1 :] or (shell,)
    return _Plan((*command[:at], "", *after), script, at)


def _argv(name: str, plan: _Plan, ctx: WorkflowContext) -> tuple[str, ...] | PipelineError:
    needed = dict.fromkeys(key for part in plan.argv for key in placeholders(part))
    if plan.script is not None:
        needed.update(dict.fromkeys(plan.script.keys))
    missing = tuple(key for key in needed if key not in ctx.inputs)
    if missing:
        return missing_input_error(name, "the command", missing, ctx.inputs)
    script = "" if plan.script is None else plan.script.script
    parts = tuple(
        script if index == plan.script_at else render(part, ctx.inputs).unwrap()
        for index, part in enumerate(plan.argv)
    )
    if plan.script is None:
        return parts
    values = tuple(to_text(ctx.inputs[key]) for key in plan.script.keys)
    cut = plan.script_at + 2  # right after the script's $0
    return (*parts[:cut], *values, *parts[cut:])


def _script_argv(
    name: str, key: str, inputs: Mapping[str, object]
) -> tuple[str, ...] | PipelineError:
    if key not in inputs:
        return missing_input_error(name, "the script", (key,), inputs)
    return ("sh", "-c", to_text(inputs[key]))


def _checked_options(  # noqa: PLR0913 - every option of shell_step, checked in one place
    name: str,
    *,
    command: str | Sequence[str] | None,
    script_from: str | None,
    max_output_bytes: int,
    timeout: float | None,
    cwd: str | None,
) -> str | tuple[str, ...] | None:
    if (command is None) == (script_from is None):
        msg = f"shell_step {name!r}: give either a command or script_from=INPUT, not both"
        raise ValueError(msg)
    owner = f"shell_step {name!r}"
    require_count(owner, "max_output_bytes", max_output_bytes)
    require_seconds(owner, "timeout", timeout, minimum=0.0, optional=True)
    require_type(owner, "cwd", cwd, (str, type(None)), "a str or None")
    if command is None or isinstance(command, str):
        return command
    parts = tuple(command)
    if not parts or not all(isinstance(part, str) for part in parts):
        msg = f"shell_step {name!r}: an argv command must be a non-empty list of strings"
        raise ValueError(msg)
    return parts


def shell_step(  # noqa: PLR0913 - the step's whole configuration, all keyword-only
    name: str,
    command: str | Sequence[str] | None = None,
    *,
    script_from: str | None = None,
    timeout: float | None = None,
    cwd: str | None = None,
    always_run: bool = False,
    retry: RetryPolicy = RetryPolicy(),  # noqa: B008 - frozen, safe to share
    when: Callable[[WorkflowContext], bool] | None = None,
    max_output_bytes: int = SHELL_MAX_OUTPUT_BYTES,
    rerun_on_resume: bool = False,
) -> Step:
    """Build a step that runs `command` and records its output.

    A value is data, never code, wherever its `{key}` stands. A string runs
    under `sh -c` with each value passed as a positional parameter and its
    placeholder written as the expansion its quoting context needs (bare,
    inside double quotes, in an unquoted heredoc); a placeholder the shell
    could not expand safely (inside single quotes, a quoted heredoc,
    backticks) is a `ValueError` now, naming the step and the fix. An argv
    list runs without a shell, each `{key}` filled in as plain text; when it
    starts a shell with `-c` (`["bash", "-c", "..."]`) its script gets the
    string treatment. `script_from="check_command"` instead runs that
    input's value as a script the user chose on purpose; the key must be
    one of `Workflow.inputs`, so no step can write it (that would be a
    `ContextCollision`).

    `cwd` may hold placeholders too. Outputs are `<name>_stdout`,
    `<name>_stderr` and `<name>_returncode`; a non-zero exit is `ShellFailed`
    (with the tails of stdout and stderr); printing more than
    `max_output_bytes` on either stream kills the process group and is
    `ShellFailed` naming the limit; a timeout kills the process group and is
    `Timeout`. `rerun_on_resume` makes `adws resume` run it again (see `Step`).
    """
    spec_command = _checked_options(
        name,
        command=command,
        script_from=script_from,
        max_output_bytes=max_output_bytes,
        timeout=timeout,
        cwd=cwd,
    )
    plan = None if spec_command is None else _plan(name, spec_command)
    label = _label(spec_command)

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        if plan is None:
            rendered = _script_argv(name, str(script_from), ctx.inputs)
        else:
            rendered = _argv(name, plan, ctx)
        where = render_for_step(cwd, ctx.inputs, step_name=name, what="the cwd")
        if isinstance(rendered, PipelineError):
            return IOFailure(rendered)
        if isinstance(where, PipelineError):
            return IOFailure(where)
        outcome = io_ops.run_process(
            rendered, timeout=timeout, cwd=where, max_output_bytes=max_output_bytes
        )
        shown = label or f"`{rendered[2]}`"
        return _outcome(
            name, shown, ctx, outcome, timeout=timeout, max_output_bytes=max_output_bytes
        )

    return Step(
        name,
        run,
        always_run=always_run,
        retry=retry,
        when=when,
        rerun_on_resume=rerun_on_resume,
        kind="shell",
        spec=ShellSpec(spec_command, timeout, cwd, script_from, max_output_bytes),
    )


def _label(command: str | tuple[str, ...] | None) -> str | None:
    """Name the command in messages: the template as written (None: the script, at run time)."""
    if command is None:
        return None
    return f"`{command if isinstance(command, str) else shlex.join(command)}`"


def _outcome(  # noqa: PLR0913 - the outcome and what it is judged against
    name: str,
    shown: str,
    ctx: WorkflowContext,
    outcome: io_ops.ProcessOutcome,
    *,
    timeout: float | None,
    max_output_bytes: int,
) -> IOResult[WorkflowContext, PipelineError]:
    details: dict[str, object] = {
        "command": shown.strip("`"),
        "returncode": outcome.returncode,
        "stdout_tail": io_ops.tail(outcome.stdout),
        "stderr_tail": io_ops.tail(outcome.stderr),
    }
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
