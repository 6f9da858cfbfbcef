"""`shell_step`: run a command; its output becomes the step's outputs.

A value is data, never code: see `adws.shell._script` for how each
placeholder of a shell script becomes a positional parameter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

import attrs
from returns.io import IOFailure, IOResult

from adws import io_ops
from adws._checks import is_input_name, require_count, require_seconds, require_type
from adws._exceptions import DefinitionError
from adws.contract.template import check_template, render_for_step
from adws.engine.errors import PipelineError
from adws.engine.scope import current_worktree
from adws.engine.step import RetryPolicy, Step
from adws.shell._argv import SHELLS
from adws.shell._outcome import command_label, judge, ran_values
from adws.shell._plan import fill_argv, plan_command, script_argv
from adws.shell.failures import PARSERS, FailureParser, name_of

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.engine.context import WorkflowContext

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
    failures: str | None = None
    """The name of the parser that names its failures (see `adws.shell.failures`)."""
    env_pass: tuple[str, ...] = ()
    """The variables adws keeps from steps that this one sees (see `adws.io_ops.environment`)."""


def _parser(name: str, failures: str | FailureParser | None) -> FailureParser | None:
    """Resolve `failures=`: a shipped parser's name, a function, or None."""
    if failures is None or callable(failures):
        return failures
    if failures in PARSERS:
        return PARSERS[failures]
    choices = ", ".join(map(repr, sorted(PARSERS)))
    msg = (
        f"shell_step {name!r}: failures={failures!r} is no parser adws ships; give one of"
        f" {choices}, junit(PATH) or a function from CommandOutput to {{id: detail}}"
    )
    raise DefinitionError(msg)


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
        raise DefinitionError(msg)
    owner = f"shell_step {name!r}"
    require_count(owner, "max_output_bytes", max_output_bytes)
    require_seconds(owner, "timeout", timeout, minimum=0.0, optional=True)
    require_type(owner, "cwd", cwd, (str, type(None)), "a str or None")
    require_type(owner, "allow_generated", allow_generated, bool, "a bool")
    if cwd is not None:
        check_template(cwd, owner=f"step {name!r}", what="the cwd")
    if script_from is not None and not is_input_name(script_from):
        msg = f"{owner}: script_from={script_from!r} is not an input name (lower_snake_case)"
        raise DefinitionError(msg)
    if allow_generated and script_from is None:
        msg = f"{owner}: allow_generated=True goes with script_from=KEY (a script a step wrote)"
        raise DefinitionError(msg)
    if command is None or isinstance(command, str):
        return command
    parts = tuple(command)
    if not parts or not all(isinstance(part, str) for part in parts):
        msg = f"shell_step {name!r}: an argv command must be a non-empty list of strings"
        raise DefinitionError(msg)
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
    failures: str | FailureParser | None = None,
    env_pass: Sequence[str] = (),
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
    string treatment; a placeholder after any other program's `-c`, `-e`,
    `--command` or `--eval` (`["rbash", "-c", "echo {x}"]`, `python -c`,
    `perl -e`) is a `ValueError` now, suggesting the rewrite that passes the
    value after the code (see `adws.shell._code`). `script_from="check_command"` instead runs that
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
    `adws.contract.template`); a field is data like any value. `cwd` may hold them
    too; with no `cwd`, a shell step inside a `worktree` step runs in the
    worktree's folder, elsewhere in the current directory. Outputs are `<name>_stdout`,
    `<name>_stderr` and `<name>_returncode`; a non-zero exit is `ShellFailed`
    (with the tails of stdout and stderr); printing more than
    `max_output_bytes` on either stream kills the process group and is
    `ShellFailed` naming the limit; a timeout kills the process group and is
    `Timeout`. `rerun_on_resume` makes `adws resume` run it again (see `Step`).

    `failures` names what a failing command found wrong, so that
    `with_verification` compares rounds by id: a shipped parser's name
    (`"pytest"`, `"ruff"`, `"mypy"`, `"exit_status"`), `junit(PATH)`, or
    a function (see `adws.shell.failures`). A non-zero exit then carries
    `context["failures"]` (the ids, sorted) and `context["failure_details"]`
    (`{id: the line that says so}`); a parser that finds nothing falls back
    to the one id `exit status` (and the error says `context["unnamed"]`).
    A success writes `<name>_failures` (`[]`). A parser that lists passes
    (`pytest`, `auto`, `junit(PATH)`) adds the ids that passed: a failure's
    `context["passed"]`, a success's `<name>_passed` (sorted).

    The command sees the user's environment less adws's own credentials:
    `ADWS_JOURNAL`, every `PG*` variable, `GITHUB_TOKEN` and `GH_TOKEN`.
    `env_pass=("PGHOST", "PGPASSWORD")` lets it see the ones named (see
    `adws.io_ops.environment`).
    """
    parser = _parser(name, failures)
    passed = io_ops.checked_env_pass(f"shell_step {name!r}", env_pass)
    spec_command = _checked_options(
        name,
        command=command,
        script_from=script_from,
        allow_generated=allow_generated,
        max_output_bytes=max_output_bytes,
        timeout=timeout,
        cwd=cwd,
    )
    plan = None if spec_command is None else plan_command(name, spec_command)
    label = command_label(spec_command)

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        if plan is None:
            rendered = script_argv(name, str(script_from), ctx.inputs)
        else:
            rendered = fill_argv(name, plan, ctx)
        where = render_for_step(cwd, ctx.inputs, step_name=name, what="the cwd")
        if isinstance(rendered, PipelineError):
            return IOFailure(rendered)
        if isinstance(where, PipelineError):
            return IOFailure(where)
        where = where if where is not None else current_worktree()
        outcome = io_ops.run_process(
            rendered,
            timeout=timeout,
            cwd=where,
            env_pass=passed,
            max_output_bytes=max_output_bytes,
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
            parser=parser,
            cwd=where,
        )

    return Step(
        name,
        run,
        always_run=always_run,
        retry=retry,
        when=when,
        rerun_on_resume=rerun_on_resume,
        kind="shell",
        spec=ShellSpec(
            spec_command,
            timeout,
            cwd,
            script_from,
            max_output_bytes,
            allow_generated,
            None if parser is None else name_of(parser),
            passed,
        ),
    )
