"""`shell_step`: run a command; its output becomes the step's outputs.

A value is data, never code: see `adws._shell_script` for how each
placeholder of a shell script becomes a positional parameter.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING, Final, final

import attrs
from returns.io import IOFailure, IOResult
from returns.result import Failure

from adws import io_ops
from adws._argv import SHELLS, ArgvError, locate_script
from adws._checks import is_input_name, require_count, require_seconds, require_type
from adws._shell_outcome import command_label, judge, ran_values
from adws._shell_script import ShellScript, compile_script
from adws.errors import PipelineError
from adws.scope import current_worktree
from adws.step import RetryPolicy, Step
from adws.template import (
    TOKEN,
    Placeholder,
    Unresolved,
    check_template,
    missing_input_error,
    render,
    render_for_step,
    resolve,
    template_paths,
    to_text,
)

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
    allow_generated: bool = False
    """The script in `script_from` may come from an earlier step (a plan's commands)."""


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


def _refuse_whole_script(name: str, script: str) -> None:
    """Refuse a script that is one placeholder: its value would run as a command name."""
    match = TOKEN.fullmatch(script.strip())
    if match is None or match.group(1) is None:
        return
    msg = (
        f"shell_step {name!r}: the whole script is the placeholder {script.strip()}, whose value"
        " would run as a command name, never as a script; to run a script held in an input,"
        " write shell_step(name, script_from=KEY) (and allow_generated=True when an earlier"
        " step wrote it)"
    )
    raise ValueError(msg)


def _plan(name: str, command: str | tuple[str, ...]) -> _Plan:
    owner = f"step {name!r}"
    if isinstance(command, str):
        _refuse_whole_script(name, command)
        return _Plan(("sh", "-c", "", "sh"), compile_script(command, step_name=name), 2)
    try:
        at = locate_script(command)
    except ArgvError as exc:
        if any(template_paths(part) for part in command):
            msg = (
                f"shell_step {name!r}: cannot tell where the script starts in {list(command)}"
                f" ({exc}); give the shell its options plainly, as in ['bash', '-c', SCRIPT]"
            )
            raise ValueError(msg) from exc
        at = None  # nothing to protect: no value goes into this command
    for index, part in enumerate(command):
        if index != at:
            check_template(part, owner=owner, what=f"argument {index} of the command")
    if at is None:
        return _Plan(command)
    _refuse_whole_script(name, command[at])
    script = compile_script(command[at], step_name=name)
    shell = next(
        PurePath(part).name for part in reversed(command[:at]) if PurePath(part).name in SHELLS
    )
    after = command[at + 1 :] or (shell,)
    return _Plan((*command[:at], "", *after), script, at)


def _argv(name: str, plan: _Plan, ctx: WorkflowContext) -> tuple[str, ...] | PipelineError:
    needed = {p.text: p for part in plan.argv for p in template_paths(part)}
    if plan.script is not None:
        needed.update((p.text, p) for p in plan.script.placeholders)
    values: dict[str, object] = {}
    missing: list[Unresolved] = []
    for placeholder in needed.values():
        found = resolve(ctx.inputs, placeholder)
        if isinstance(found, Failure):
            missing.append(found.failure())
        else:
            values[placeholder.text] = found.unwrap()
    if missing:
        return missing_input_error(name, "the command", missing, ctx.inputs)
    script = "" if plan.script is None else plan.script.script
    parts = tuple(
        script if index == plan.script_at else render(part, ctx.inputs).unwrap()
        for index, part in enumerate(plan.argv)
    )
    if plan.script is None:
        return parts
    params = tuple(to_text(values[p.text]) for p in plan.script.placeholders)
    cut = plan.script_at + 2  # right after the script's $0
    return (*parts[:cut], *params, *parts[cut:])


def _script_argv(
    name: str, key: str, inputs: Mapping[str, object]
) -> tuple[str, ...] | PipelineError:
    if key not in inputs:
        return missing_input_error(name, "the script", (Unresolved(Placeholder(key, key)),), inputs)
    return ("sh", "-c", to_text(inputs[key]))


def _checked_options(  # noqa: PLR0913 - every option of shell_step, checked in one place
    name: str,
    *,
    command: str | Sequence[str] | None,
    script_from: str | None,
    allow_generated: bool,
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
    require_type(owner, "allow_generated", allow_generated, bool, "a bool")
    if cwd is not None:
        check_template(cwd, owner=f"step {name!r}", what="the cwd")
    if script_from is not None and not is_input_name(script_from):
        msg = f"{owner}: script_from={script_from!r} is not an input name (lower_snake_case)"
        raise ValueError(msg)
    if allow_generated and script_from is None:
        msg = f"{owner}: allow_generated=True goes with script_from=KEY (a script a step wrote)"
        raise ValueError(msg)
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
    allow_generated: bool = False,
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
    `ContextCollision`). A script that is a single placeholder
    (`["sh", "-c", "{x}"]`) would run its value as a command name, so it is
    refused, pointing here.

    `script_from=KEY, allow_generated=True` runs a script an earlier step
    wrote (a plan's verification commands): say so, because that step's
    agent then chooses code to run. The key need not be a workflow input;
    `adws check` notes the step, `adws show` marks it, and the exact script
    is kept with each attempt (the output `<name>_ran` on success,
    `context["script"]` on failure).

    Placeholders are `{key}`, `{key.field}` or `{key[0]}` (see
    `adws.template`); a field is data like any value. `cwd` may hold them
    too; with no `cwd`, a shell step inside a `worktree` step runs in the
    worktree's folder, elsewhere in the current directory. Outputs are `<name>_stdout`,
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
        allow_generated=allow_generated,
        max_output_bytes=max_output_bytes,
        timeout=timeout,
        cwd=cwd,
    )
    plan = None if spec_command is None else _plan(name, spec_command)
    label = command_label(spec_command)

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
        where = where if where is not None else current_worktree()
        outcome = io_ops.run_process(
            rendered, timeout=timeout, cwd=where, max_output_bytes=max_output_bytes
        )
        script = None if plan is not None else rendered[2]
        shown = label or f"`{script}`"
        return judge(
            name,
            shown,
            ctx,
            outcome,
            ran_values(plan, rendered),
            timeout=timeout,
            max_output_bytes=max_output_bytes,
            script=script,
            keep_script=allow_generated,
        )

    return Step(
        name,
        run,
        always_run=always_run,
        retry=retry,
        when=when,
        rerun_on_resume=rerun_on_resume,
        kind="shell",
        spec=ShellSpec(spec_command, timeout, cwd, script_from, max_output_bytes, allow_generated),
    )
