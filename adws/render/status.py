"""The journal as text: `adws runs`, `adws status`, `adws status --step` and `resume --plan`."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.engine.errors import json_safe
from adws.render._text import cost_cell, indent, seconds, short, sum_usage, table
from adws.render.errors import whole_error
from adws.render.proved import proofs_of, proved_lines
from adws.render.words import (
    parked_until,
    row_word,
    run_word,
    skip_reason,
    until,
    waiting_for,
    waits,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from adws.journal import AttemptRecord, RunRecord, StepPlan
    from adws.journal.records.exchanges import ExchangeRecord, Text
    from adws.journal.records.sessions import SessionRecord

__all__ = [
    "attempt_text",
    "branch_order",
    "call_facts",
    "outcome",
    "own_seconds",
    "plan_text",
    "runs_table",
    "status_text",
    "tries",
    "wall_seconds",
]

_INDEX: Final = re.compile(r"\[(\d+)\]$")
_RUNS: Final = ("retried", "failed", "succeeded", "cancelled")
"""Row statuses that are attempts (not skips, not verification rounds)."""


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
            "--keep-changed keeps their outputs"
        )
    elif first is None:
        lines.append("every step is done; nothing to resume")
    else:
        lines.append(f"a resume starts at {first}")
    return "\n".join(lines)


def runs_table(records: Sequence[RunRecord]) -> str:
    """Render `adws runs`: one row per run, newest first.

    `STOPPED AT` is the step a run did not get past: where it failed, was
    blocked, or waits for approval.
    """
    rows = [
        (
            record.run_id,
            record.workflow,
            record.held_elsewhere
            or run_word(record.status)
            + (" (stale)" if record.stale else "")
            + (" (cancel asked)" if record.cancel and record.status == "running" else "")
            + _until(record),
            record.started,
            "-" if record.seconds is None else seconds(record.seconds),
            cost_cell(record.usage),
            record.failed_step or "-",
        )
        for record in records
    ]
    header = ("RUN", "WORKFLOW", "STATUS", "STARTED", "DURATION", "COST", "STOPPED AT")
    return table(header, rows)


def _until(record: RunRecord) -> str:
    """Say when a parked run may go on, for its row in `adws runs`."""
    if record.status != "parked" or record.wake_at is None:
        return ""
    return f" {until(record.wake_at, io_ops.wall_clock())}"


def wall_seconds(rows: Iterable[AttemptRecord]) -> float:
    """Time a step or branch by the wall clock: how long any of its attempts was running.

    Overlapping spans count once (a success's row spans its step's earlier
    attempts and waits); the time between two sessions of a resumed run
    does not count. Rows from before schema 9 carry no start: their
    durations are added up.
    """
    spans = sorted(
        (row.started, row.started + row.seconds) for row in rows if row.started is not None
    )
    total = sum(row.seconds for row in rows if row.started is None)
    end = float("-inf")
    for start, stop in spans:
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def own_seconds(row: AttemptRecord, rows: Iterable[AttemptRecord]) -> float:
    """Time one attempt alone: a success's row spans its step's earlier attempts and waits.

    The earlier attempts of the same session end inside the success's span;
    the success took what is left after the last of them.
    """
    if row.status != "succeeded" or row.started is None:
        return row.seconds
    end = row.started + row.seconds
    earlier = [
        other.started + other.seconds
        for other in rows
        if other.status == "retried"
        and other.started is not None
        and row.started <= other.started <= other.started + other.seconds <= end
    ]
    return end - max(earlier) if earlier else row.seconds


def tries(rows: Iterable[AttemptRecord]) -> int:
    """Count the attempts among a step's rows.

    Skips, verification rounds and a branch cancelled before it started are not attempts.
    """
    return sum(1 for row in rows if row.status in _RUNS and row.attempt > 0)


def branch_order(path: str, seen: Mapping[str, int]) -> tuple[tuple[int, str], ...]:
    """Sort branches as they were declared: a fan-out's by index, others as first recorded.

    A nested branch (`outer[1]/inner[a]`) sorts right after the branch it
    ran inside; `seen` numbers each path in the order it was first recorded.

    >>> seen = {"v[10]": 0, "v[2]": 1, "v[2]/w[b]": 2, "v[2]/w[a]": 3}
    >>> sorted(seen, key=lambda path: branch_order(path, seen))
    ['v[2]', 'v[2]/w[b]', 'v[2]/w[a]', 'v[10]']
    """
    parts = path.split("/")
    key = []
    for depth, part in enumerate(parts):
        prefix = "/".join(parts[: depth + 1])
        found = _INDEX.search(part)
        key.append((int(found.group(1)), "") if found else (seen.get(prefix, seen[path]), part))
    return tuple(key)


def outcome(rows: Sequence[AttemptRecord]) -> tuple[str, list[str]]:
    """Say how a step or branch ended, and the facts of it: attempts, rounds, wall time, cost.

    The status is the last row that says how it ended (`running` when none
    does yet), as one of the fixed words (see `adws.render.words`).
    """
    final = [row for row in rows if row.final]
    status = row_word(final[-1]) if final else "running"
    count = tries(rows)
    facts = [f"{count} attempt{'' if count == 1 else 's'}"]
    rounds = sum(1 for row in rows if row.status == "round_failed")
    if rounds:
        facts.append(f"{rounds + (status == 'succeeded')} rounds")
    facts.append(seconds(wall_seconds(rows)))
    spent = sum_usage(row.usage for row in rows)
    if spent is not None:
        facts.append(spent.describe())
    return status, facts


def _summary(rows: Sequence[AttemptRecord]) -> str:
    status, facts = outcome(rows)
    return f"{status} ({', '.join(facts)})"


def _attempt_line(row: AttemptRecord, prefix: str, said: str = "") -> str:
    """Say how one attempt ended and which agent sessions it used (to find its transcript).

    `said` describes its sessions from the journal's `agent_sessions`; a
    journal from before them names only their ids.
    """
    what = row_word(row) if row.error is None else short(row.error)
    if not said and row.sessions:
        said = f"session {', '.join(row.sessions)}"
    return f"{prefix}{_label(row)}: {what}" + (f" · {said}" if said else "")


def _label(row: AttemptRecord) -> str:
    """Name a row with an error: `attempt 2`, or `attempt 1, round 2` for a verification round."""
    label = f"attempt {row.attempt}"
    found = row.error.context.get("round") if row.error is not None else None
    if row.status == "round_failed" and isinstance(found, int):
        label += f", round {found}"
    return label


def _problems(rows: Sequence[AttemptRecord], prefix: str, sessions: Mapping[int, str]) -> list[str]:
    lines = []
    for row in rows:
        said = sessions.get(id(row), "")
        if row.error is not None or row.sessions or said:
            lines.append(_attempt_line(row, prefix, said))
    return lines


def _said(sessions: Sequence[SessionRecord], attempts: Sequence[AttemptRecord]) -> dict[int, str]:
    """Describe each attempt row's agent sessions, by the row's identity (`id`)."""
    from adws.journal.records.sessions import by_attempt  # noqa: PLC0415 - only for runs with sessions

    said: dict[int, str] = {}
    for row, found in zip(attempts, by_attempt(sessions, attempts), strict=True):
        texts = list(dict.fromkeys(record.describe() for record in found))
        if texts:
            said[id(row)] = ", ".join(texts)
    return said


def _branch_lines(
    step: str, attempts: Sequence[AttemptRecord], sessions: Mapping[int, str]
) -> list[str]:
    """One line per branch of a parallel step, in declaration order, then its errors."""
    branches: dict[str, list[AttemptRecord]] = {}
    for attempt in attempts:
        if attempt.step.startswith(f"{step}["):
            branches.setdefault(attempt.step, []).append(attempt)
    seen = {path: number for number, path in enumerate(branches)}
    lines = []
    for path in sorted(branches, key=lambda path: branch_order(path, seen)):
        rows = branches[path]
        lines.append(f"       {path}: {_summary(rows)}")
        lines.extend(_problems(rows, "         ", sessions))
    return lines


def status_text(
    record: RunRecord,
    attempts: Sequence[AttemptRecord],
    *,
    verbose: bool = False,
    sessions: Sequence[SessionRecord] = (),
) -> str:
    """Render `adws status RUN`: the run, then each step's attempts, branches and errors.

    Steps are timed by the wall clock; branches are listed as declared
    (a fan-out's by index); what its checks proved follows (see
    `adws.render.proved`), then the run's error, whole (`verbose`: with the
    traceback of a step that raised). `sessions` are the run's
    agent sessions: each attempt says `session S (continued from attempt N)`.
    """
    said = _said(sessions, attempts) if sessions else {}
    status = record.held_elsewhere or run_word(record.status) + (
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
        if row_word(mine[-1]) == "skipped":
            reason = skip_reason(mine[-1])
            lines.append(f"  {index}. {name}: skipped" + (f" ({reason})" if reason else ""))
            continue
        lines.append(f"  {index}. {name}: {_summary(mine)}")
        lines.extend(_problems(mine, "       ", said))
        lines.extend(_branch_lines(name, attempts, said))
    lines += proved_lines(proofs_of(attempts, record.error))
    error = record.error
    if record.cancel is not None:
        lines.append(_cancel_line(record))
    if record.status == "parked":  # a wait, not a failure
        lines += _parked_lines(record)
    elif error is not None:
        if waits(error):  # a question, not a failure
            rest = error.message.strip().splitlines()[1:]
            lines += [waiting_for(error, where=True), *indent(rest, "  ")]
        else:
            where = f"error at {error.step_name}: " if error.step_name else "error: "
            lines.extend(whole_error(error, verbose=verbose, prefix=where))
    if record.usage is not None:
        lines.append(f"spent: {record.usage.describe()}")
    return "\n".join(lines)


def _cancel_line(record: RunRecord) -> str:
    """Say who cancelled the run (or asked to, while it still runs), when and why."""
    cancel = record.cancel
    assert cancel is not None  # noqa: S101 - asked only for a run with a cancel
    said = "cancel asked" if record.status != "cancelled" else "cancelled"
    why = f": {cancel.reason}" if cancel.reason else ""
    return f"{said} by {cancel.by} at {cancel.at}{why}"


def _parked_lines(record: RunRecord) -> list[str]:
    """Say until when and why the run is parked, what the agent said, and how it goes on."""
    error = record.error
    reason = record.parked_reason or (error.message if error is not None else "its agent's limit")
    lines = [parked_until(record.wake_at, reason)]
    if error is not None:
        where = f"at {error.step_name}: " if error.step_name else ""
        lines.append(f"  {where}{(error.message.strip().splitlines() or [''])[0]}")
    lines.append(
        f"  adws resume {record.run_id} goes on then (--now: before); adws resume --due "
        "resumes every parked run whose time has come"
    )
    return lines


def _text_lines(title: str, text: Text | None) -> list[str]:
    """Show one kept text under a title, whole; say so when it was cut or not kept."""
    if text is None:
        return []
    size = f"{text.size:,} bytes"
    if text.text is None:
        return [f"{title}: not kept ({size}, sha256 {text.digest}…; transcripts were off)"]
    lines = [f"{title} ({size}):", *indent(text.text.splitlines() or [""], "  ")]
    if text.cut:
        kept = len(text.text.encode("utf-8", "surrogatepass"))
        lines.append(f"  … cut: the journal keeps the first {kept:,} bytes (the step's output cap)")
    return lines


def call_facts(exchange: ExchangeRecord) -> list[str]:
    """Say who asked, how long the call took, how its process exited, its session and cost."""
    facts = [f"asked by {exchange.asked_by}", seconds(exchange.seconds)]
    if exchange.exit_code is not None:
        facts.append(f"exit {exchange.exit_code}")
    if exchange.session_id:
        facts.append(f"session {exchange.session_id}")
    if exchange.usage is not None:
        facts.append(exchange.usage.describe())
    return facts


def _exchange_lines(number: int, count: int, exchange: ExchangeRecord) -> list[str]:
    lines = [f"agent call {number} of {count}: {' · '.join(call_facts(exchange))}"]
    lines.extend(_text_lines("prompt", exchange.prompt))
    if exchange.answer is None:
        lines.append("answer: none (the agent gave no answer)")
    else:
        lines.extend(_text_lines("answer", exchange.answer))
    lines.extend(_text_lines("stderr", exchange.stderr))
    if exchange.error_type is not None:
        lines.append(f"this call ended: {exchange.error_type}: {exchange.error or ''}".rstrip())
    return lines


def attempt_text(  # noqa: PLR0913 - an attempt, what it asked, and how to show it
    record: RunRecord,
    path: str,
    rows: Sequence[AttemptRecord],
    exchanges: Sequence[ExchangeRecord],
    *,
    verbose: bool = False,
    others: Sequence[AttemptRecord] = (),
) -> str:
    """Render `adws status RUN --step S --attempt N`: one attempt whole.

    `rows` are the journal's rows of that attempt (the step or branch
    `path`), `exchanges` its agent calls: each prompt and answer whole,
    then the outputs the attempt added and its error. `others` are the
    path's other rows, to time a success by itself (see `own_seconds`).
    """
    last = rows[-1]
    took = seconds(own_seconds(last, others))
    head = f"step {path}, attempt {last.attempt}: {last.status} in {took}"
    if last.usage is not None:
        head += f" · {last.usage.describe()}"
    lines = [f"run {record.run_id} · {record.workflow} · {record.status}", head]
    for number, exchange in enumerate(exchanges, 1):
        lines.extend(["", *_exchange_lines(number, len(exchanges), exchange)])
    if not exchanges:
        lines.extend(["", "no agent call recorded for this attempt"])
    outputs = last.outputs()
    if outputs:
        shown = json.dumps(json_safe(outputs), indent=2, ensure_ascii=False, sort_keys=True)
        lines.extend(["", "outputs added:", *indent(shown.splitlines(), "  ")])
    for row in rows:
        if row.error is not None:
            label = f"{_label(row)}: " if row.status == "round_failed" else "error: "
            lines.extend(["", *whole_error(row.error, verbose=verbose, prefix=label)])
    return "\n".join(lines)
