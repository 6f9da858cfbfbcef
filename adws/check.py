"""`check_workflow`: a workflow's dataflow, checked before any run (`adws check`).

Each step's reads and writes are inferred where the definition says them:
an agent step reads its prompt's and cwd's `{placeholders}` and writes its
contract's keys (lower-cased); a shell step reads its command's placeholders
(and its `script_from` input) and writes `<name>_stdout`, `_stderr` and
`_returncode` (by-products: never listed as unread); `with_verification`,
`sequence`, `parallel` and `fan_out` combine their children's. A plain
Python step declares them: `Step(..., reads=..., writes=...)`.

A placeholder's path is read too: `{triage_json.lable}` where an agent
step's contract declares a schema for `TRIAGE_JSON` is an error naming the
fields the schema has (`{key}` without a schema, or a dict, cannot be
checked before a run; the run reports a missing field as `MissingInput`).

The rules, in declaration order:

- every read is written by an earlier step or declared in `Workflow.inputs`
  (an error; only a warning after a plain step that declares no `writes`,
  which might write anything);
- no key is written twice, by two steps or by a step and the inputs (an
  error: at run time it is a `ContextCollision`), and no step writes the
  input a shell step runs as its script;
- a plain step that declares nothing is a warning; an output no later step
  reads is a note (it may be the run's result); so is a shell step that
  runs a script an earlier step wrote (`allow_generated=True`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs

from adws.contract._schemas import path_problem
from adws.engine.step import Step, Workflow, iter_steps
from adws.flows import Flow, flow_of, inferred_flow
from adws.shell.step import ShellSpec

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Flow", "Problem", "Severity", "check_workflow", "flow_of", "known_inputs"]

Severity: TypeAlias = Literal["error", "warning", "note"]
_ORDER: Final = {"error": 0, "warning": 1, "note": 2}


@final
@attrs.frozen
class Problem:
    """One finding: how bad, which step (empty for the workflow) and key, and why."""

    severity: Severity
    step: str
    key: str
    message: str

    def __str__(self) -> str:
        """Return the line `adws check` prints."""
        where = f"{self.step}: " if self.step else ""
        return f"{self.severity}: {where}{self.message}"

    def to_dict(self) -> dict[str, str]:
        """Return the JSON-safe dict `adws check --json` prints."""
        return attrs.asdict(self)


def _scripts(workflow: Workflow) -> dict[str, str]:
    """Map each input a shell step runs as its script (one the user chose) to that step."""
    return {
        step.spec.script_from: step.name
        for step in iter_steps(workflow.steps)
        if isinstance(step.spec, ShellSpec)
        and step.spec.script_from
        and not step.spec.allow_generated
    }


def _generated(step: Step, writer: dict[str, str]) -> list[Problem]:
    """Note every shell step inside `step` that runs a script an earlier step wrote."""
    notes = []
    for inner in iter_steps((step,)):
        spec = inner.spec
        if isinstance(spec, ShellSpec) and spec.allow_generated and spec.script_from:
            key = spec.script_from
            message = (
                f"runs the script in {key!r}, which {writer.get(key, 'an earlier step')} wrote"
                " (allow_generated=True): what that step's agent wrote runs as code"
            )
            notes.append(Problem("note", inner.name, key, message))
    return notes


def _path_problems(step: str, flow: Flow, typed: dict[str, object]) -> list[Problem]:
    known = {**typed, **dict(flow.types)}
    problems = []
    for placeholder in flow.paths:
        if placeholder.path and placeholder.key in known:
            broken = path_problem(known[placeholder.key], placeholder.key, placeholder.path)
            if broken is not None:
                message = f"reads {{{placeholder.text}}}, but {broken}"
                problems.append(Problem("error", step, placeholder.key, message))
    return problems


def known_inputs(workflow: Workflow) -> frozenset[str] | None:
    """Return every input a run of `workflow` may be given, or None when any may be read.

    That is its declared inputs, required and optional, and every key a step
    reads (inferred or declared) that no step writes; a plain step that
    declares no `reads=` might read anything.
    """
    read: set[str] = set()
    written: set[str] = set()
    for step in workflow.steps:
        if step.reads is None and inferred_flow(step).opaque:
            return None
        flow = flow_of(step)
        read.update(flow.reads)
        written.update(flow.writes, flow.may_write)
    return frozenset({*workflow.inputs, *workflow.optional_inputs, *(read - written)})


def check_workflow(workflow: Workflow, *, given: Iterable[str] = ()) -> tuple[Problem, ...]:
    """Check `workflow`'s dataflow; return the problems, errors first.

    `given` names inputs a particular run is given (`adws run -i`): steps may
    read them as if the workflow declared them.
    """
    problems: list[Problem] = []
    declared = (*workflow.inputs, *workflow.optional_inputs)
    writer = dict.fromkeys(declared, "the workflow's inputs")
    available = set(declared) | set(given)
    scripts = _scripts(workflow)
    opaque: list[str] = []
    unread: dict[str, str] = {}
    typed: dict[str, object] = {}
    for step in workflow.steps:
        flow = flow_of(step)
        problems.extend(_reads(step.name, flow, available, opaque))
        problems.extend(_path_problems(step.name, flow, typed))
        problems.extend(_generated(step, writer))
        for key in flow.reads if step.reads is not None or not flow.opaque else tuple(unread):
            unread.pop(key, None)  # a step that declares no reads= might read any of them
        problems.extend(_writes(step.name, flow, writer, scripts))
        for key in flow.writes:
            writer.setdefault(key, f"step {step.name!r}")
            if key not in flow.quiet:
                unread[key] = step.name
        available.update(flow.writes, flow.may_write)
        typed.update(flow.types)
        if flow.opaque:
            opaque.append(step.name)
            message = (
                "a plain Python step declaring no writes=: adws check cannot see what it"
                " writes (and reads, without reads=)"
            )
            problems.append(Problem("warning", step.name, "", message))
    problems.extend(
        Problem("note", name, key, f"writes {key!r}, which no later step reads")
        for key, name in unread.items()
    )
    return tuple(sorted(problems, key=lambda problem: _ORDER[problem.severity]))


def _reads(step: str, flow: Flow, available: set[str], opaque: list[str]) -> list[Problem]:
    problems = []
    for key in flow.reads:
        if key in available:
            continue
        if opaque:
            message = (
                f"reads {key!r}, which no earlier step declares writing; only"
                f" {', '.join(map(repr, opaque))} might (declare its writes=)"
            )
            problems.append(Problem("warning", step, key, message))
        else:
            message = (
                f"reads {key!r}, which no earlier step writes and the workflow's inputs"
                " do not declare"
            )
            problems.append(Problem("error", step, key, message))
    return problems


def _writes(
    step: str, flow: Flow, writer: dict[str, str], scripts: dict[str, str]
) -> list[Problem]:
    problems = [
        Problem("error", step, key, f"two of its branches write {key!r}") for key in flow.clashes
    ]
    for key in flow.writes:
        if key in scripts:
            message = (
                f"writes {key!r}, which shell step {scripts[key]!r} runs as its script:"
                " only the user may choose a script"
            )
            problems.append(Problem("error", step, key, message))
        elif key in writer:
            problems.append(
                Problem("error", step, key, f"writes {key!r}, which {writer[key]} wrote")
            )
    return problems
