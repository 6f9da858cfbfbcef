"""`adws report`: one run, or a batch, as one self-contained HTML page.

The page holds the run's header (workflow, status, duration, spend), its
worktrees and approvals (branch, base, what became of each; who decided
what, when and why), a timeline of its steps, branches and attempts, the step diagram coloured
by outcome, and per step and branch each attempt: its error (open where
it failed), and its agent calls' prompts and answers, collapsed. Every
text is escaped (an agent's answer is data, never markup), and the page
loads nothing: its style and script are inline (see `adws.render._page`).
A batch's page has a row per run and, for each run that did not
succeed, the same sections, collapsed; runs that succeeded show their
steps without their prompts and answers, to keep the page small.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final, final

import attrs

from adws.engine.errors import json_safe
from adws.journal import AttemptRecord, RunRecord
from adws.journal.exchanges import ExchangeRecord
from adws.journal.workspaces import ApprovalRecord, WorktreeRecord
from adws.render._page import escape as _e
from adws.render._page import page
from adws.render._text import cost_cell, seconds, short, sum_usage
from adws.render.errors import whole_error
from adws.render.mermaid import step_outcomes
from adws.render.status import branch_order, call_facts, outcome, own_seconds
from adws.render.svg import Row, diagram, timeline
from adws.render.workspaces import workspaces_html

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.journal.exchanges import Text

__all__ = ["RunView", "batch_page", "run_page"]

_ATTEMPTS: Final = ("retried", "failed", "succeeded", "cancelled")


@final
@attrs.frozen
class RunView:
    """What a page shows of one run: its journal rows, agent exchanges, worktrees, approvals."""

    record: RunRecord
    attempts: tuple[AttemptRecord, ...]
    exchanges: tuple[ExchangeRecord, ...] = ()
    worktrees: tuple[WorktreeRecord, ...] = ()
    approvals: tuple[ApprovalRecord, ...] = ()


def _badge(status: str) -> str:
    kind = status.split(":", maxsplit=1)[0]
    return f'<span class="badge {_e(kind)}">{_e(status)}</span>'


def _pre(lines: Sequence[str] | str) -> str:
    text = lines if isinstance(lines, str) else "\n".join(lines)
    return f"<pre>{_e(text)}</pre>"


def _text(title: str, text: Text | None, css: str) -> str:
    if text is None:
        return ""
    size = f"{text.size:,} bytes"
    if text.text is None:
        return f'<p class="note">{_e(title)}: not kept ({size}; transcripts were off)</p>'
    cut = (
        '<p class="note">cut: the journal keeps the first bytes (the step\'s output cap)</p>'
        if text.cut
        else ""
    )
    return (
        f'<details class="{css}"><summary>{_e(title)} ({size})</summary>'
        f"{_pre(text.text)}{cut}</details>"
    )


def _call(number: int, call: ExchangeRecord) -> str:
    facts = [f"agent call {number}", *call_facts(call)]
    ended = ""
    if call.error_type is not None:
        ended = f'<p class="note">this call ended: {_e(call.error_type)}: {_e(call.error)}</p>'
    answer = (
        '<p class="note">answer: none (the agent gave no answer)</p>'
        if call.answer is None
        else _text("answer", call.answer, "answer")
    )
    return (
        f'<div class="call"><div class="facts">{_e(" · ".join(facts))}</div>'
        f"{_text('prompt', call.prompt, 'prompt')}{answer}"
        f"{_text('stderr', call.stderr, 'stderr')}{ended}</div>"
    )


def _attempt(
    anchor: str,
    number: int,
    rows: Sequence[AttemptRecord],
    calls: Sequence[ExchangeRecord],
    others: Sequence[AttemptRecord],
) -> str:
    last = rows[-1]
    head = f"attempt {number} — {last.status} in {seconds(own_seconds(last, others))}"
    if last.usage is not None:
        head += f" · {last.usage.describe()}"
    parts = [f'<div class="attempt {_e(last.status)}" id="{anchor}-{number}"><h4>{_e(head)}</h4>']
    for row in rows:
        if row.error is not None:
            round_number = row.error.context.get("round")
            label = f"round {round_number}: " if row.status == "round_failed" else ""
            parts.append(f'<div class="error">{_pre(whole_error(row.error, prefix=label))}</div>')
    parts.extend(_call(index, call) for index, call in enumerate(calls, 1))
    outputs = last.outputs()
    if outputs:
        shown = json.dumps(json_safe(outputs), indent=2, ensure_ascii=False, sort_keys=True)
        parts.append(
            f'<details class="outputs"><summary>outputs added</summary>{_pre(shown)}</details>'
        )
    parts.append("</div>")
    return "".join(parts)


def _section(  # noqa: PLR0913 - a step and what the page knows of it, by name
    path: str,
    *,
    title: str,
    anchor: str,
    rows: Sequence[AttemptRecord],
    calls: Sequence[ExchangeRecord],
    inner: str,
    branch: bool = False,
) -> str:
    status, facts = outcome(rows)
    status = "skipped" if status.startswith("skipped") else status
    attempts: dict[int, list[AttemptRecord]] = {}
    for row in rows:
        if row.status in _ATTEMPTS or row.status == "round_failed":
            attempts.setdefault(row.attempt, []).append(row)
    body = "".join(
        _attempt(anchor, number, mine, [c for c in calls if c.attempt == number], rows)
        for number, mine in attempts.items()
    )
    opened = " open" if status == "failed" else ""
    kind = "step branch" if branch else "step"
    return (
        f'<section class="{kind} {_e(status)}" id="{anchor}" data-path="{_e(path)}">'
        f"<details{opened}><summary>{_badge(status)} <b>{_e(title)}</b> — "
        f"{_e(' · '.join(facts))}</summary>{body}{inner}</details></section>"
    )


def _anchors(view: RunView, prefix: str) -> dict[str, str]:
    paths = list(view.record.steps) + sorted({row.step for row in view.attempts})
    return {path: f"{prefix}p{number}" for number, path in enumerate(dict.fromkeys(paths))}


def _branches(view: RunView) -> dict[str, list[str]]:
    """Each step's branch paths, in declaration order."""
    found: dict[str, list[str]] = {}
    seen = {row.step: number for number, row in reversed(list(enumerate(view.attempts)))}
    for step in view.record.steps:
        mine = {row.step for row in view.attempts if row.step.startswith(f"{step}[")}
        found[step] = sorted(mine, key=lambda path: branch_order(path, seen))
    return found


def _steps(view: RunView, anchors: dict[str, str], *, calls: bool) -> tuple[str, list[Row]]:
    """Build each step's section, and the timeline's rows, in order."""
    sections, rows = [], []
    branches = _branches(view)
    exchanges = view.exchanges if calls else ()
    for index, step in enumerate(view.record.steps, 1):
        mine = [row for row in view.attempts if row.step == step]
        if not mine:
            sections.append(
                f'<p class="note" id="{anchors[step]}">{index}. {_e(step)}: not run</p>'
            )
            continue
        step_calls = tuple(call for call in exchanges if call.step == step)
        rows.append(Row(step, f"{index}. {step}", tuple(mine), step_calls, anchors[step]))
        inner = []
        for path in branches[step]:
            path_rows = [row for row in view.attempts if row.step == path]
            path_calls = tuple(call for call in exchanges if call.step == path)
            rows.append(Row(path, path, tuple(path_rows), path_calls, anchors[path], depth=1))
            inner.append(
                _section(
                    path,
                    title=path,
                    anchor=anchors[path],
                    rows=path_rows,
                    calls=path_calls,
                    inner="",
                    branch=True,
                )
            )
        sections.append(
            _section(
                step,
                title=f"{index}. {step}",
                anchor=anchors[step],
                rows=mine,
                calls=step_calls,
                inner="".join(inner),
            )
        )
    return "".join(sections), rows


def _header(record: RunRecord) -> str:
    duration = "-" if record.seconds is None else seconds(record.seconds)
    spent = "nothing reported" if record.usage is None else record.usage.describe()
    resumed = f" · resumed {record.resumes}x" if record.resumes else ""
    return (
        f"<header><h1>{_e(record.workflow)} {_badge(record.status)}</h1>"
        f"<p>run <code>{_e(record.run_id)}</code> · started {_e(record.started)}"
        f"{'' if not record.finished else ' · finished ' + _e(record.finished)}{_e(resumed)}</p>"
        f"<p>duration {_e(duration)} · spent {_e(spent)}</p></header>"
    )


def _run_body(view: RunView, prefix: str = "", *, calls: bool = True) -> str:
    record = view.record
    anchors = _anchors(view, prefix)
    sections, rows = _steps(view, anchors, calls=calls)
    error = ""
    if record.error is not None:
        error = (
            f'<div class="error run-error"><h2>error</h2>'
            f"{_pre(whole_error(record.error, prefix=f'{record.error.step_name}: '))}</div>"
        )
    pictures = ""
    if rows:
        pictures = (
            f"<h2>timeline</h2>{timeline(rows)}<h2>steps</h2>"
            f"{diagram(record.steps, step_outcomes(view.attempts), _branches(view), anchors)}"
        )
    workspaces = workspaces_html(view.worktrees, view.approvals)
    return f"{error}{workspaces}{pictures}<h2>attempts</h2>{sections}"


def run_page(view: RunView) -> str:
    """Draw one run as a page."""
    record = view.record
    body = _header(record) + _run_body(view)
    return page(f"{record.workflow} {record.status} · run {record.run_id}", body)


def batch_page(batch_id: str, workflow: str, views: Sequence[RunView]) -> str:
    """Draw a batch as a page: a row per run, then each run's sections (collapsed)."""
    counts: dict[str, int] = {}
    for view in views:
        counts[view.record.status] = counts.get(view.record.status, 0) + 1
    spent = sum_usage(view.record.usage for view in views)
    seconds_all = sum(view.record.seconds or 0.0 for view in views)
    summary = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    rows = []
    for number, view in enumerate(views):
        record = view.record
        error = "" if record.error is None else short(record.error)
        rows.append(
            f'<tr><td><a href="#r{number}">{_e(record.run_id)}</a></td>'
            f"<td>{_badge(record.status)}</td>"
            f"<td>{_e('-' if record.seconds is None else seconds(record.seconds))}</td>"
            f"<td>{_e(cost_cell(record.usage))}</td><td>{_e(error)}</td></tr>"
        )
    runs = "".join(
        f'<section class="run" id="r{number}"><details><summary>{_badge(view.record.status)} '
        f"run {_e(view.record.run_id)}</summary>"
        f"{_run_body(view, f'r{number}', calls=view.record.status != 'succeeded')}"
        "</details></section>"
        for number, view in enumerate(views)
    )
    body = (
        f"<header><h1>batch {_e(batch_id)} · {_e(workflow)}</h1>"
        f"<p>{len(views)} runs: {_e(summary or 'none')}</p>"
        f"<p>run time {_e(seconds(seconds_all))} in all · spent "
        f"{_e('nothing reported' if spent is None else spent.describe())}</p></header>"
        "<h2>runs</h2><table><tr><th>run</th><th>status</th><th>duration</th><th>cost</th>"
        f"<th>error</th></tr>{''.join(rows)}</table><h2>each run</h2>"
        '<p class="note">prompts and answers are shown for the runs that did not succeed</p>'
        f"{runs}"
    )
    return page(f"batch {batch_id} · {workflow}", body)
