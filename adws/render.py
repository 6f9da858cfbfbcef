"""Turn definitions and events into text; `cli.py` does the printing."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

from adws.agent_steps import AgentSpec
from adws.combinators import SequenceSpec, VerificationSpec
from adws.concurrency import FanOutSpec, ParallelSpec
from adws.events import (
    AgentActivity,
    AttemptFailed,
    BranchAttemptFailed,
    BranchFinished,
    BranchStarted,
    RunEvent,
    RunFinished,
    RunStarted,
    StepSkipped,
    StepStarted,
    StepSucceeded,
)
from adws.shell import ShellSpec

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from adws.errors import PipelineError
    from adws.journal import AttemptRecord, RunRecord, StepPlan
    from adws.step import RetryPolicy, Step, Workflow
    from adws.usage import Usage

__all__ = [
    "describe_retry",
    "format_event",
    "plan_text",
    "runs_table",
    "show_text",
    "status_text",
    "step_outcomes",
    "table",
    "to_mermaid",
]

_ONE_LINE: Final = 240


def _short(error: PipelineError) -> str:
    lines = error.message.strip().splitlines()
    text = f"{error.error_type}: {lines[0] if lines else ''}"
    return text if len(text) <= _ONE_LINE else text[: _ONE_LINE - 1] + "…"


def _seconds(value: float) -> str:
    return f"{value:.1f}s"


def format_event(event: RunEvent) -> str:  # noqa: C901, PLR0911, PLR0912 - one line per kind of event
    """Render one progress line for stderr.

    >>> format_event(StepSucceeded("r", "verify", 1, 4, 2, 1.23, None))  # type: ignore[arg-type]
    '[2/4] verify … ok in 1.2s (2 attempts)'
    """
    match event:
        case RunStarted():
            resumed = ""
            if event.resumed and event.first_step < len(event.steps):
                resumed = f", resuming at {event.steps[event.first_step]}"
                if event.rerun:
                    verb = "runs" if len(event.rerun) == 1 else "run"
                    resumed += f" ({', '.join(event.rerun)} {verb} again)"
            count = len(event.steps)
            noun = "step" if count == 1 else "steps"
            return f"{event.workflow}: run {event.run_id}, {count} {noun}{resumed}"
        case StepStarted():
            return f"[{event.index + 1}/{event.total}] {event.step} … running"
        case AttemptFailed():
            prefix = f"[{event.index + 1}/{event.total}] {event.step} …"
            if event.will_retry:
                wait = f" in {_seconds(event.delay)}" if event.delay > 0 else ""
                return (
                    f"{prefix} attempt {event.attempt}/{event.max_attempts} failed: "
                    f"{_short(event.error)}; retrying{wait}"
                )
            after = f" after {event.attempt} attempts" if event.attempt > 1 else ""
            return f"{prefix} failed{after}: {_short(event.error)}"
        case StepSucceeded():
            attempts = f" ({event.attempts} attempts)" if event.attempts > 1 else ""
            prefix = f"[{event.index + 1}/{event.total}] {event.step} …"
            return f"{prefix} ok in {_seconds(event.seconds)}{attempts}"
        case StepSkipped():
            why = "condition is false" if event.reason == "condition" else "an earlier step failed"
            return f"[{event.index + 1}/{event.total}] {event.step} … skipped ({why})"
        case BranchStarted() | BranchAttemptFailed():
            return _branch_line(event)
        case BranchFinished():
            cancelled = " (branches cancelled)" if event.status == "cancelled" else ""
            return (
                f"[{event.index + 1}/{event.total}] {event.step} … {event.done}/{event.of} done, "
                f"{event.failed} failed{cancelled}"
            )
        case AgentActivity():
            return f"      {event.branch or event.step} … {event.text}"
        case RunFinished():
            head = f"{event.workflow} {event.status} in {_seconds(event.seconds)}"
            spent = _spent(event)
            if event.error is None:
                return f"{head} (run {event.run_id}){spent}"
            where = f" at {event.error.step_name}" if event.error.step_name else ""
            return f"{head}{where}: {_short(event.error)} (run {event.run_id}){spent}"
    return f"warning: observer {event.observer} failed and was detached: {event.message}"


def _spent(event: RunFinished) -> str:
    """Say what the run spent, and of what budget, when either is known."""
    if event.usage is None and event.budget is None:
        return ""
    spent = "nothing reported" if event.usage is None else event.usage.describe()
    limit = "" if event.budget is None else f" (budget {event.budget.describe()})"
    return f"; spent {spent}{limit}"


def _branch_line(event: BranchStarted | BranchAttemptFailed) -> str:
    prefix = f"[{event.index + 1}/{event.total}] {event.branch} …"
    if isinstance(event, BranchStarted):
        return f"{prefix} running"
    verb = "retrying" if event.will_retry else "giving up"
    failed = f"attempt {event.attempt}/{event.max_attempts} failed: {_short(event.error)}"
    return f"{prefix} {failed}; {verb}"


def describe_retry(policy: RetryPolicy) -> str:
    """Summarise a retry policy in a few words.

    >>> from adws import RetryPolicy
    >>> describe_retry(RetryPolicy()), describe_retry(RetryPolicy(3, delay=1))
    ('1 attempt', '3 attempts, wait 1s x2 up to 60s')
    """
    if policy.max_attempts == 1:
        return "1 attempt"
    text = f"{policy.max_attempts} attempts"
    if policy.delay:
        text += f", wait {policy.delay:g}s x{policy.backoff:g} up to {policy.max_delay:g}s"
    if policy.jitter:
        text += f" +≤{policy.jitter:g}s jitter"
    return text


def _callable_name(function: Callable[..., object]) -> str:
    return getattr(function, "__name__", type(function).__name__)


def _shell_details(spec: ShellSpec) -> str:
    if spec.command is None and spec.allow_generated:
        return (
            f"runs the script in {spec.script_from}, which an earlier step wrote"
            " (allow_generated: GENERATED CODE)"
        )
    if spec.command is None:
        return f"runs the script in input {spec.script_from}"
    command = spec.command
    return f"runs {command if isinstance(command, str) else json.dumps(command)}"


def _spec_details(spec: object) -> list[str]:
    """Describe what built a step: its contract, command, rounds, steps or branches."""
    if isinstance(spec, AgentSpec) and spec.contract.keys:
        keys = [
            f"{key} ({spec.contract.schemas[key].__name__})"
            if key in spec.contract.schemas
            else key
            for key in spec.contract.keys
        ]
        return ["expects " + ", ".join(keys)]
    if isinstance(spec, ShellSpec):
        return [_shell_details(spec)]
    if isinstance(spec, VerificationSpec):
        return [f"{spec.main.name} then {spec.verify.name}, up to {spec.max_attempts} rounds"]
    if isinstance(spec, SequenceSpec):
        return ["runs " + (" then ".join(inner.name for inner in spec.steps) or "nothing")]
    if isinstance(spec, ParallelSpec | FanOutSpec):
        what = (
            f"{len(spec.branches)} branches at once"
            if isinstance(spec, ParallelSpec)
            else f"{spec.step.name} once per element of {spec.over} (as {spec.item})"
        )
        limits = [f"at most {spec.max_concurrency} at a time"] if spec.max_concurrency else []
        if spec.min_successes is not None:
            limits.append(f"needs {spec.min_successes} to succeed")
        if not spec.fail_fast:
            limits.append("every branch runs to its end")
        return [", ".join([f"runs {what}", *limits])]
    return []


def _step_details(step: Step) -> str:
    parts = [step.kind, describe_retry(step.retry)]
    if step.always_run:
        parts.append("always_run")
    if step.when is not None:
        parts.append(f"when {_callable_name(step.when)}")
    return " · ".join(parts + _spec_details(step.spec))


def _lines(steps: Iterable[Step], prefix: str) -> list[str]:
    lines: list[str] = []
    for number, step in enumerate(steps, 1):
        lines.append(f"{prefix}{number}. {step.name}: {_step_details(step)}")
        lines.extend(_lines(step.children, prefix + "   "))
    return lines


def show_text(workflow: Workflow) -> str:
    """Describe a workflow's steps for `adws show`."""
    head = workflow.name + (f" — {workflow.description}" if workflow.description else "")
    inputs = ", ".join(workflow.inputs) or "none required"
    if workflow.optional_inputs:
        inputs += f" (optional: {', '.join(workflow.optional_inputs)})"
    return "\n".join([head, f"inputs: {inputs}", *_lines(workflow.steps, "  ")])


def _node(step: Step) -> str:
    label = f"{step.name}<br/>{step.kind}"
    if step.retry.max_attempts > 1:
        label += f" · {step.retry.max_attempts} attempts"
    if step.when is not None:
        label += f"<br/>when {_callable_name(step.when)}"
    if step.always_run:
        return f'{step.name}[["{label}<br/>always_run"]]:::always'
    return f'{step.name}["{label}"]'


_STATUS_STYLES: Final = {
    "succeeded": "fill:#d4f7d4,stroke:#2e7d32",
    "failed": "fill:#fbd5d5,stroke:#c62828",
    "skipped": "fill:#eeeeee,stroke:#9e9e9e",
    "not_run": "fill:#ffffff,stroke:#9e9e9e,stroke-dasharray: 2 2",
}


def step_outcomes(attempts: Sequence[AttemptRecord]) -> dict[str, str]:
    """Name what last happened to each step of a run: succeeded, failed or skipped.

    Steps with no record are absent (not run).
    """
    outcomes: dict[str, str] = {}
    for record in attempts:
        if record.status == "retried":
            continue
        outcomes[record.step] = "skipped" if record.status.startswith("skipped") else record.status
    return outcomes


def to_mermaid(workflow: Workflow, outcomes: Mapping[str, str] | None = None) -> str:
    """Draw a workflow as a Mermaid flowchart from its definition alone.

    Steps run top to bottom; a retry is a loop on the step; a verification
    step is a subgraph whose verify feeds back into main; dashed edges show
    where a failure jumps to the next `always_run` step. With `outcomes`
    (what happened in one run, see `step_outcomes`) each top-level step is
    coloured: succeeded, failed, skipped or not run.
    """
    lines = ["flowchart TD", f"    start(({workflow.name}))"]
    previous = "start"
    for step in workflow.steps:
        spec = step.spec
        if isinstance(spec, VerificationSpec):
            lines += [
                f'    subgraph {step.name}["{step.name} · up to {spec.max_attempts} rounds"]',
                f"        {_node(spec.main)}",
                f"        {_node(spec.verify)}",
                f"        {spec.main.name} --> {spec.verify.name}",
                f"        {spec.verify.name} -. fails: feedback .-> {spec.main.name}",
                "    end",
            ]
            lines.extend(
                f"    {inner.name} -- retry --> {inner.name}"
                for inner in (spec.main, spec.verify)
                if inner.retry.max_attempts > 1
            )
        elif isinstance(spec, ParallelSpec | FanOutSpec):
            lines += _fork_join(step, spec)
        elif isinstance(spec, SequenceSpec):
            lines += _chain(step, spec)
        else:
            lines.append(f"    {_node(step)}")
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
        lines.extend(f"    classDef {name} {style}" for name, style in _STATUS_STYLES.items())
        lines.extend(
            f"    class {step.name} {outcomes.get(step.name, 'not_run')}" for step in steps
        )
    return "\n".join(lines)


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


def plan_text(record: RunRecord, plan: Sequence[StepPlan]) -> str:
    """Describe what `adws resume RUN` would do, step by step.

    >>> from types import SimpleNamespace
    >>> from adws.journal import StepPlan
    >>> record = SimpleNamespace(run_id="r1", workflow="w", status="failed")
    >>> print(plan_text(record, [StepPlan("a", "kept"), StepPlan("b", "rerun"), StepPlan("c", "to run")]))
    run r1 · w · failed
      1. a: kept
      2. b: rerun (runs again on every resume)
      3. c: to run
    a resume starts at c
    """  # noqa: E501
    lines = [f"run {record.run_id} · {record.workflow} · {record.status}"]
    for number, item in enumerate(plan, 1):
        detail = ""
        if item.action == "changed":
            detail = f" (recorded {item.recorded}, now {item.current})"
        elif item.action == "rerun":
            detail = " (runs again on every resume)"
        lines.append(f"  {number}. {item.step}: {item.action}{detail}")
    first = next((item.step for item in plan if item.action == "to run"), None)
    changed = any(item.action == "changed" for item in plan)
    if changed:
        lines.append(
            "changed finished steps are refused; --rerun-changed runs again from the first, "
            "--force keeps their outputs"
        )
    elif first is None:
        lines.append("every step is done; nothing to resume")
    else:
        lines.append(f"a resume starts at {first}")
    return "\n".join(lines)


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """Align `rows` under `header` in columns two spaces apart."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    return "\n".join(line.rstrip() for line in lines)


def runs_table(records: Sequence[RunRecord]) -> str:
    """Render `adws runs`: one row per run, newest first."""
    rows = [
        (
            record.run_id,
            record.workflow,
            record.status + (" (stale)" if record.stale else ""),
            record.started,
            "-" if record.seconds is None else _seconds(record.seconds),
            _cost(record.usage),
            record.failed_step or "-",
        )
        for record in records
    ]
    header = ("RUN", "WORKFLOW", "STATUS", "STARTED", "DURATION", "COST", "FAILED STEP")
    return table(header, rows)


def _cost(usage: Usage | None) -> str:
    """Show a cost in a table cell: dollars, else tokens, else a dash.

    >>> from adws.usage import Usage
    >>> _cost(Usage(0.12345)), _cost(Usage(input_tokens=900)), _cost(None)
    ('$0.1235', '900 tokens', '-')
    """
    if usage is None:
        return "-"
    return usage.describe().split(", ")[0]


def _branch_lines(step: str, attempts: Sequence[AttemptRecord]) -> list[str]:
    """One line per branch of a parallel step: how it last ended, and its errors."""
    branches: dict[str, list[AttemptRecord]] = {}
    for attempt in attempts:
        if attempt.step.startswith(f"{step}["):
            branches.setdefault(attempt.step, []).append(attempt)
    lines = []
    for path, records in branches.items():
        errors = [f"; {_short(r.error)}" for r in records if r.error is not None][-1:]
        lines.append(f"       {path}: {records[-1].status}{''.join(errors)}")
    return lines


def status_text(record: RunRecord, attempts: Sequence[AttemptRecord]) -> str:
    """Render `adws status RUN`: the run, then each step's attempts and errors."""
    status = record.status + (
        " (stale: its process is gone; `adws resume` continues it)" if record.stale else ""
    )
    lines = [
        f"run {record.run_id} · {record.workflow} · {status}",
        f"started {record.started}"
        + (f", finished {record.finished}" if record.finished else "")
        + (f", resumed {record.resumes}x" if record.resumes else ""),
    ]
    for index, name in enumerate(record.steps, 1):
        mine = [attempt for attempt in attempts if attempt.step == name]
        if not mine:
            lines.append(f"  {index}. {name}: not run")
            continue
        last = mine[-1]
        seconds = sum(attempt.seconds for attempt in mine)
        tries = sum(1 for attempt in mine if not attempt.status.startswith("skipped"))
        noun = "attempt" if tries == 1 else "attempts"
        spent = _sum_usage(attempt.usage for attempt in mine)
        cost = "" if spent is None else f", {spent.describe()}"
        lines.append(
            f"  {index}. {name}: {last.status} ({tries} {noun}, {_seconds(seconds)}{cost})"
        )
        lines.extend(
            _attempt_line(attempt) for attempt in mine if attempt.error or attempt.sessions
        )
        lines.extend(_branch_lines(name, attempts))
    if record.error is not None:
        lines.append(f"error: {record.error}")
    if record.usage is not None:
        lines.append(f"spent: {record.usage.describe()}")
    return "\n".join(lines)


def _attempt_line(attempt: AttemptRecord) -> str:
    """Say how one attempt ended and which agent sessions it used (to find its transcript)."""
    what = attempt.status if attempt.error is None else _short(attempt.error)
    sessions = f" · session {', '.join(attempt.sessions)}" if attempt.sessions else ""
    return f"       attempt {attempt.attempt}: {what}{sessions}"


def _sum_usage(usages: Iterable[Usage | None]) -> Usage | None:
    known = [usage for usage in usages if usage is not None]
    return sum(known[1:], known[0]) if known else None
