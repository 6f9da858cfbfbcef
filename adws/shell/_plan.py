"""Turn a shell step's command into an argv template, and fill it with a run's values.

A string command becomes `sh -c SCRIPT` with its placeholders compiled into
positional parameters (`adws.shell._script`); an argv list keeps its parts
as plain-text templates, and a shell with `-c` in it gets the script
treatment at the place `adws.shell._argv` finds; any other program's
`-c`, `-e`, `--command` or `--eval` may run its argument as code, so a
placeholder there is refused (`adws.shell._code`). Filling a plan never
builds shell code from a value.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING, final

import attrs
from returns.result import Failure

from adws._exceptions import DefinitionError
from adws.contract.template import (
    TOKEN,
    Placeholder,
    Unresolved,
    check_template,
    missing_input_error,
    render,
    resolve,
    template_paths,
    to_text,
)
from adws.shell._argv import SHELLS, ArgvError, HiddenShellError, NoParametersError, locate_script
from adws.shell._code import CodeValueError, refuse_code_values
from adws.shell._script import ShellScript, compile_script

if TYPE_CHECKING:
    from collections.abc import Mapping

    from adws.engine.context import WorkflowContext
    from adws.engine.errors import PipelineError

__all__ = ["Plan", "fill_argv", "plan_command", "script_argv"]


@final
@attrs.frozen
class Plan:
    """How to build a step's argv from a run's inputs.

    `argv` holds the template's parts (rendered as plain text: no shell sees
    them) with the script, if any, at `script_at` already compiled; the
    values of the script's placeholders go in at `script_at + 2`, right
    after the script's `$0`, where the script takes them (see
    `adws.shell._script`), so the user's own arguments after `$0` stay `$1`,
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
    raise DefinitionError(msg)


def _refuse_code(name: str, command: tuple[str, ...]) -> None:
    """Refuse a value where a program adws does not know may run it as code (`_code`)."""
    if not any(template_paths(part) for part in command):
        return  # nothing to protect (and wrappers adws could not read are fine then)
    try:
        refuse_code_values(command)
    except CodeValueError as exc:
        msg = f"shell_step {name!r}: {exc}"
        raise DefinitionError(msg) from exc


def plan_command(name: str, command: str | tuple[str, ...]) -> Plan:
    owner = f"step {name!r}"
    if isinstance(command, str):
        _refuse_whole_script(name, command)
        return Plan(("sh", "-c", "", "sh"), compile_script(command, step_name=name), 2)
    try:
        at = locate_script(command)
    except HiddenShellError as exc:
        msg = (
            f"shell_step {name!r}: {exc}; start the shell first, or behind a wrapper adws"
            " knows (env, timeout, nice, nohup, stdbuf, setsid, flock, ionice, xargs, chroot,"
            " unshare, sudo, busybox)"
        )
        raise DefinitionError(msg) from exc
    except NoParametersError as exc:
        if any(template_paths(part) for part in command):
            msg = f"shell_step {name!r}: cannot pass values safely in {list(command)}: {exc}"
            raise DefinitionError(msg) from exc
        at = None  # nothing to protect: no value goes into this command
    except ArgvError as exc:
        if any(template_paths(part) for part in command):
            msg = (
                f"shell_step {name!r}: cannot tell where the script starts in {list(command)}"
                f" ({exc}); give the shell its options plainly, as in ['bash', '-c', SCRIPT]"
            )
            raise DefinitionError(msg) from exc
        at = None  # nothing to protect: no value goes into this command
    for index, part in enumerate(command):
        if index != at:
            check_template(part, owner=owner, what=f"argument {index} of the command")
    if at is None:
        _refuse_code(name, command)
        return Plan(command)
    _refuse_whole_script(name, command[at])
    script = compile_script(command[at], step_name=name)
    shell = next(
        PurePath(part).name for part in reversed(command[:at]) if PurePath(part).name in SHELLS
    )
    after = command[at + 1 :] or (shell,)
    return Plan((*command[:at], "", *after), script, at)


def fill_argv(name: str, plan: Plan, ctx: WorkflowContext) -> tuple[str, ...] | PipelineError:
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


def script_argv(
    name: str, key: str, inputs: Mapping[str, object]
) -> tuple[str, ...] | PipelineError:
    if key not in inputs:
        return missing_input_error(name, "the script", (Unresolved(Placeholder(key, key)),), inputs)
    return ("sh", "-c", to_text(inputs[key]))
