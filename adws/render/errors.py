"""Describe an error whole: every line of its message, the command it ran, what it printed.

The one-line summary (`short`) goes where space is tight: a progress line,
a table. Under it, `error_lines` gives the rest, so a terminal shows what
`--json` holds: a multi-line message (a replay miss's diff), a failed
command with the values it ran with and the tails of its stdout and
stderr, the problems found in an agent's answer, how each branch of a
parallel step ended, where a failed `worktree` step kept its worktree, and
(verbose) the traceback of a step that raised.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Final

from adws.engine.errors import ErrorType, PipelineError
from adws.render._text import indent, short

__all__ = ["branch_lines", "cleanup_lines", "error_lines", "whole_error"]

_VALUE_CHARS: Final = 200
_ANSWER_LINES: Final = 12


def _shown_value(value: object) -> str:
    """Quote a value as a shell would need it, cut when long.

    >>> _shown_value("needs triage"), _shown_value("42")
    ("'needs triage'", '42')
    """
    text = str(value)
    if len(text) > _VALUE_CHARS:
        text = text[: _VALUE_CHARS - 1] + "…"
    return shlex.quote(text)


def _command(context: Mapping[str, object]) -> list[str]:
    """Say what a command really ran: its argv, or its template and the values it was given."""
    argv = context.get("argv")
    if isinstance(argv, Sequence) and not isinstance(argv, str) and argv:
        return [f"ran: {shlex.join(str(part) for part in argv)}"]
    values = context.get("values")
    command = context.get("command")
    if isinstance(values, Mapping) and values and isinstance(command, str):
        given = " ".join(f"{key}={_shown_value(value)}" for key, value in values.items())
        return [f"ran: {command}", f"  with {given}"]
    return []


def _answer_end(answer: object) -> list[str]:
    """Show the last lines of a rejected answer (`adws status --step` shows it whole)."""
    if not isinstance(answer, str) or not answer.strip():
        return ["the answer was empty"]
    kept = answer.rstrip().splitlines()
    shown = [line if len(line) <= _VALUE_CHARS else line[: _VALUE_CHARS - 1] + "…" for line in kept]
    head = "the answer:" if len(kept) <= _ANSWER_LINES else "the answer ended:"
    return [head, *indent(shown[-_ANSWER_LINES:], "  ")]


def _output(context: Mapping[str, object]) -> list[str]:
    lines: list[str] = []
    for stream in ("stdout", "stderr"):
        tail = context.get(f"{stream}_tail")
        if isinstance(tail, str) and tail.strip():
            lines.append(f"{stream}:")
            lines.extend(indent(tail.rstrip().splitlines(), "  "))
    return lines


def _kept(context: Mapping[str, object]) -> list[str]:
    """Say where a failed `worktree` step left its worktree for inspection (and `adws resume`)."""
    kept, branch = context.get("worktree"), context.get("branch")
    if not isinstance(kept, str) or not kept:
        return []
    return [
        f"the worktree is kept for inspection: {kept}" + (f" (branch {branch})" if branch else "")
    ]


def branch_lines(context: Mapping[str, object]) -> list[str]:
    """Say how each branch of a parallel step ended (`context["branches"]`), one per line."""
    branches = context.get("branches")
    if not isinstance(branches, Mapping):
        return []
    lines = []
    for path, ended in branches.items():
        if not isinstance(ended, Mapping):
            continue
        status, error = ended.get("status"), ended.get("error")
        why = ""
        if isinstance(error, Mapping):
            lines_of = str(error.get("message", "")).strip().splitlines()
            first = lines_of[0] if lines_of else ""
            first = first[:-1] if len(lines_of) > 1 and first.endswith(":") else first
            why = f": {error.get('error_type')}: {first}"
        lines.append(f"{path}: {status}{why}")
    return lines


def error_lines(error: PipelineError, *, verbose: bool = False) -> list[str]:
    r"""Describe `error` after its one-line summary, one fact per line (empty: nothing more).

    `verbose` adds the traceback a raising step left.

    >>> from adws import PipelineError
    >>> error = PipelineError(
    ...     "label", "ShellFailed", "`tools/label.sh {n}` exited with 4:\nboom",
    ...     {"command": "tools/label.sh {n}", "values": {"n": "4 2"}, "stderr_tail": "boom\n"},
    ... )
    >>> print("\n".join(error_lines(error)))
    ran: tools/label.sh {n}
      with n='4 2'
    stderr:
      boom
    """
    context = error.context
    lines: list[str] = []
    printed = "stdout_tail" in context or "stderr_tail" in context
    problems = context.get("problems")
    if error.error_type == ErrorType.CONTRACT_VIOLATION and isinstance(problems, tuple | list):
        if len(problems) > 1:
            lines.extend(f"- {problem}" for problem in problems)
        lines.extend(_answer_end(context.get("raw_output")))
    elif not printed:
        # The rest of the message; a command's output is shown below, from its tails.
        lines.extend(error.message.strip().splitlines()[1:])
    lines.extend(_command(context))
    lines.extend(_output(context))
    lines.extend(branch_lines(context))
    rounds = context.get("rounds")
    if isinstance(rounds, int) and not isinstance(rounds, bool):
        lines.append(f"verification failed in each of {rounds} rounds")
    lines.extend(_kept(context))
    traceback = context.get("traceback")
    if verbose and isinstance(traceback, str) and traceback.strip():
        lines.append("traceback:")
        lines.extend(indent(traceback.rstrip().splitlines(), "  "))
    return lines


def whole_error(error: PipelineError, *, verbose: bool = False, prefix: str = "") -> list[str]:
    r"""Describe an error whole: its summary line, then the rest indented under it.

    >>> from adws import PipelineError
    >>> whole_error(PipelineError("s", "AgentFailed", "no answer\nsee above"), prefix="error: ")
    ['error: AgentFailed: no answer', '  see above']
    """
    lines = [f"{prefix}{short(error)}", *indent(error_lines(error, verbose=verbose), "  ")]
    return lines + cleanup_lines(error, verbose=verbose)


def cleanup_lines(error: PipelineError, *, verbose: bool = False) -> list[str]:
    """Describe, whole, each `always_run` step that failed after the run's first error."""
    lines = []
    for late in error.context.get("always_run_failures", ()):
        if isinstance(late, PipelineError):
            where = f"{late.step_name}: " if late.step_name else ""
            lines.append(f"also failed while cleaning up: {where}{short(late)}")
            lines.extend(indent(error_lines(late, verbose=verbose), "  "))
    return lines
