"""`check_workflow`: a workflow's dataflow, checked before any run (`adws check`).

Each step's reads and writes are inferred where the definition says them:
an agent step reads its prompt's and cwd's `{placeholders}` and writes its
contract's keys (lower-cased); a shell step reads its command's placeholders
(and its `script_from` input) and writes `<name>_stdout`, `_stderr` and
`_returncode`; `with_verification`, `parallel` and `fan_out` combine their
children's. A plain Python step declares them: `Step(..., reads=..., writes=...)`.

The rules, in declaration order:

- every read is written by an earlier step or declared in `Workflow.inputs`
  (an error; only a warning after a plain step that declares no `writes`,
  which might write anything);
- no key is written twice, by two steps or by a step and the inputs (an
  error: at run time it is a `ContextCollision`), and no step writes the
  input a shell step runs as its script;
- a plain step that declares nothing is a warning; an output no later step
  reads is a note (it may be the run's result).
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, final

import attrs

from adws.agent_steps import AgentSpec
from adws.combinators import VerificationSpec
from adws.concurrency import FanOutSpec, ParallelSpec
from adws.shell import ShellSpec
from adws.step import Step, Workflow, iter_steps
from adws.template import placeholders

__all__ = ["Flow", "Problem", "Severity", "check_workflow", "flow_of"]

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


@final
@attrs.frozen
class Flow:
    """What one step reads and writes; `opaque` means its writes are unknown."""

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    may_write: tuple[str, ...] = ()
    """Written only sometimes (an agent step's `<name>_agent`): may be read, never noted."""
    opaque: bool = False
    clashes: tuple[str, ...] = ()
    """Keys two branches of one parallel step both write."""


def _templates(command: str | tuple[str, ...] | None, cwd: str | None) -> tuple[str, ...]:
    parts = (command,) if isinstance(command, str) else (command or ())
    found = [name for part in (*parts, cwd or "") for name in placeholders(part)]
    return tuple(dict.fromkeys(found))


def _unique(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for group in groups for name in group))


def _inferred(step: Step) -> Flow:
    spec = step.spec
    if isinstance(spec, AgentSpec):
        reads = _templates(spec.prompt, spec.cwd)
        writes = tuple(key.lower() for key in spec.contract.keys)
        return Flow(reads, writes, (f"{step.name}_agent",))
    if isinstance(spec, ShellSpec):
        script = (spec.script_from,) if spec.script_from else ()
        reads = _unique(_templates(spec.command, spec.cwd), script)
        suffixes = ("stdout", "stderr", "returncode")
        return Flow(reads, tuple(f"{step.name}_{suffix}" for suffix in suffixes))
    if isinstance(spec, VerificationSpec):
        main, verify = flow_of(spec.main), flow_of(spec.verify)
        produced = set(main.writes) | set(main.may_write)
        reads = _unique(main.reads, tuple(k for k in verify.reads if k not in produced))
        return Flow(
            reads,
            _unique(main.writes, verify.writes),
            _unique(main.may_write, verify.may_write),
            main.opaque or verify.opaque,
        )
    if isinstance(spec, ParallelSpec):
        flows = [flow_of(branch) for branch in spec.branches]
        seen: set[str] = set()
        clashes: list[str] = []
        for key in (key for flow in flows for key in flow.writes):
            (clashes if key in seen else []).append(key)
            seen.add(key)
        return Flow(
            _unique(*(flow.reads for flow in flows)),
            _unique(*(flow.writes for flow in flows), (f"{step.name}_failures",)),
            _unique(*(flow.may_write for flow in flows)),
            any(flow.opaque for flow in flows),
            tuple(dict.fromkeys(clashes)),
        )
    if isinstance(spec, FanOutSpec):
        child = flow_of(spec.step)
        given = {spec.item, f"{spec.item}_index"}
        reads = _unique((spec.over,), tuple(k for k in child.reads if k not in given))
        return Flow(reads, (step.name, f"{step.name}_failures"))
    return Flow(opaque=True)


def flow_of(step: Step) -> Flow:
    """Return what `step` reads and writes: declared where it says, inferred elsewhere."""
    inferred = _inferred(step)
    if step.reads is None and step.writes is None:
        return inferred
    return attrs.evolve(
        inferred,
        reads=inferred.reads if step.reads is None else step.reads,
        writes=inferred.writes if step.writes is None else step.writes,
        opaque=inferred.opaque and step.writes is None,
    )


def _scripts(workflow: Workflow) -> dict[str, str]:
    """Map each input a shell step runs as its script to that step."""
    return {
        step.spec.script_from: step.name
        for step in iter_steps(workflow.steps)
        if isinstance(step.spec, ShellSpec) and step.spec.script_from
    }


def check_workflow(workflow: Workflow) -> tuple[Problem, ...]:
    """Check `workflow`'s dataflow; return the problems, errors first."""
    problems: list[Problem] = []
    writer = dict.fromkeys(workflow.inputs, "the workflow's inputs")
    available = set(workflow.inputs)
    scripts = _scripts(workflow)
    opaque: list[str] = []
    unread: dict[str, str] = {}
    for step in workflow.steps:
        flow = flow_of(step)
        problems.extend(_reads(step.name, flow, available, opaque))
        for key in flow.reads if step.reads is not None or not flow.opaque else tuple(unread):
            unread.pop(key, None)  # a step that declares no reads= might read any of them
        problems.extend(_writes(step.name, flow, writer, scripts))
        for key in flow.writes:
            writer.setdefault(key, f"step {step.name!r}")
            unread[key] = step.name
        available.update(flow.writes, flow.may_write)
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
