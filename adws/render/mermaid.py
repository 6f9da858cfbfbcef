"""Draw a workflow as a Mermaid flowchart, coloured by what happened in one run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.engine.combinators import SequenceSpec, VerificationSpec
from adws.engine.concurrency import FanOutSpec, ParallelSpec
from adws.render.describe import callable_name
from adws.render.words import row_word

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from adws.engine.step import Step, Workflow
    from adws.journal import AttemptRecord

__all__ = ["OUTCOME_STYLES", "branch_outcome", "step_outcomes", "to_mermaid"]


def _node(step: Step) -> str:
    label = f"{step.name}<br/>{step.kind}"
    if step.retry.max_attempts > 1:
        label += f" · {step.retry.max_attempts} attempts"
    if step.when is not None:
        label += f"<br/>when {callable_name(step.when)}"
    if step.always_run:
        return f'{step.name}[["{label}<br/>always_run"]]:::always'
    return f'{step.name}["{label}"]'


OUTCOME_STYLES: Final = {
    "succeeded": "fill:#d4f7d4,stroke:#2e7d32",
    "failed": "fill:#fbd5d5,stroke:#c62828",
    "skipped": "fill:#eeeeee,stroke:#9e9e9e",
    "not_run": "fill:#ffffff,stroke:#9e9e9e,stroke-dasharray: 2 2",
    "cancelled": "fill:#eeeeee,stroke:#616161,stroke-dasharray: 5 3",
    "partial": "fill:#fff3cd,stroke:#b26a00",
    "waiting": "fill:#ead7f2,stroke:#6a1b9a",
    "parked": "fill:#efebe9,stroke:#8d6e63",
    "unknown": "fill:#eeeeee,stroke:#616161",
}
"""How each outcome is drawn; `partial` is a fan-out whose branches did not all succeed."""


def step_outcomes(attempts: Sequence[AttemptRecord]) -> dict[str, str]:
    """Name what last happened to each step and branch of a run, by path.

    Succeeded, failed, skipped, cancelled, waiting (for approval), parked
    (on an agent's limit) or unknown (a status adws never writes: see `adws.render.words`); steps
    with no record are absent (not run).
    """
    return {record.step: row_word(record) for record in attempts if record.final}


def branch_outcome(step: str, outcomes: Mapping[str, str]) -> str | None:
    """Sum up the branches of one step: all succeeded, all failed, or `partial`.

    >>> branch_outcome("v", {"v[0]": "succeeded", "v[1]": "failed"})
    'partial'
    >>> branch_outcome("v", {"v[0]": "cancelled"}), branch_outcome("v", {}) is None
    ('cancelled', True)
    """
    mine = {status for path, status in outcomes.items() if path.startswith(f"{step}[")}
    if not mine:
        return None
    if len(mine) == 1:
        return mine.pop()
    return "partial"


def to_mermaid(workflow: Workflow, outcomes: Mapping[str, str] | None = None) -> str:
    """Draw a workflow as a Mermaid flowchart from its definition alone.

    Steps run top to bottom; a retry is a loop on the step; a verification
    step is a subgraph whose verify feeds back into main; dashed edges show
    where a failure jumps to the next `always_run` step. With `outcomes`
    (what happened in one run, see `step_outcomes`) each top-level step is
    coloured (succeeded, failed, skipped or not run), and so is each
    branch of a parallel step; a fan-out's one branch node says whether all
    its branches succeeded, failed, or some of each (`partial`).
    """
    lines = ["flowchart TD", f"    start(({workflow.name}))"]
    previous = "start"
    for step in workflow.steps:
        lines += _drawn_step(step)
        lines.append(f"    {previous} --> {step.name}")
        if step.retry.max_attempts > 1:
            lines.append(f"    {step.name} -- retry --> {step.name}")
        previous = step.name
    lines.append(f"    {previous} --> finish((done))")
    steps = workflow.steps
    for index, step in enumerate(steps):
        if step.always_run:
            continue
        target = next((later for later in steps[index + 1 :] if later.always_run), None)
        if target is not None:
            lines.append(f"    {step.name} -. failure .-> {target.name}")
    lines.append("    classDef always stroke-dasharray: 5 3")
    if outcomes is not None:
        lines.extend(f"    classDef {name} {style}" for name, style in OUTCOME_STYLES.items())
        for step in steps:
            lines.append(f"    class {step.name} {outcomes.get(step.name, 'not_run')}")
            lines.extend(_branch_classes(step, outcomes))
    return "\n".join(lines)


def _drawn_step(step: Step) -> list[str]:
    """Draw one step: a node, or the subgraph of a verification, a sequence or branches."""
    spec = step.spec
    if isinstance(spec, VerificationSpec):
        return [
            f'    subgraph {step.name}["{step.name} · up to {spec.max_attempts} rounds"]',
            f"        {_node(spec.main)}",
            f"        {_node(spec.verify)}",
            f"        {spec.main.name} --> {spec.verify.name}",
            f"        {spec.verify.name} -. fails: feedback .-> {spec.main.name}",
            "    end",
            *(
                f"    {inner.name} -- retry --> {inner.name}"
                for inner in (spec.main, spec.verify)
                if inner.retry.max_attempts > 1
            ),
        ]
    if isinstance(spec, ParallelSpec | FanOutSpec):
        return _fork_join(step, spec)
    if isinstance(spec, SequenceSpec):
        return _chain(step, spec)
    return [f"    {_node(step)}"]


def _branch_classes(step: Step, outcomes: Mapping[str, str]) -> list[str]:
    """Colour the branch nodes of a parallel or fan-out step by how they ended."""
    spec = step.spec
    if isinstance(spec, ParallelSpec):
        return [
            f"    class {branch.name} {_drawn(outcomes.get(f'{step.name}[{branch.name}]'))}"
            for branch in spec.branches
        ]
    if isinstance(spec, FanOutSpec):
        return [f"    class {spec.step.name} {_drawn(branch_outcome(step.name, outcomes))}"]
    return []


def _drawn(outcome: str | None) -> str:
    """Map an outcome to its style: a kept branch succeeded, one never recorded did not run."""
    if outcome is None:
        return "not_run"
    return "succeeded" if outcome == "reused" else outcome


def _chain(step: Step, spec: SequenceSpec) -> list[str]:
    """Draw a sequence as a subgraph of its steps, one after another."""
    lines = [f'    subgraph {step.name}["{step.name} · sequence"]']
    lines.extend(f"        {_node(inner)}" for inner in spec.steps)
    lines.extend(
        f"        {before.name} --> {after.name}"
        for before, after in zip(spec.steps, spec.steps[1:], strict=False)
    )
    lines.append("    end")
    return lines


def _fork_join(step: Step, spec: ParallelSpec | FanOutSpec) -> list[str]:
    """Draw a parallel step as a fork into its branches and a join after them."""
    name = step.name
    if isinstance(spec, ParallelSpec):
        title = f"{name} · parallel"
        inner = list(spec.branches)
    else:
        title = f"{name} · one branch per {spec.item} in {spec.over}"
        inner = [spec.step]
    lines = [
        f'    subgraph {name}["{title}"]',
        f"        {name}_fork{{{{fork}}}}",
        f"        {name}_join{{{{join}}}}",
    ]
    for branch in inner:
        lines += [
            f"        {_node(branch)}",
            f"        {name}_fork --> {branch.name}",
            f"        {branch.name} --> {name}_join",
        ]
    lines.append("    end")
    return lines
