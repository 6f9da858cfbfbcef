"""`adws report`: one run, or a batch, as one self-contained HTML page.

The page holds the run's header (workflow, status, duration, spend), what
its checks proved (targets fixed, new failures, pre-existing ones left,
flaky ones; see `adws.render.proved`), its worktrees and approvals
(branch, base, what became of each; who decided what, when and why), a
timeline of its steps, branches and attempts, the step diagram coloured
by outcome, and per step and branch each attempt: its error (open where
it failed, or waits for approval), and its agent calls' prompts and
answers, and the diff each worktree attempt left (its added and removed
lines marked), collapsed. Every text is escaped (an agent's answer is data,
never markup), every status is shown as one of a few fixed words (see
`adws.render.words`), and the page loads nothing and runs nothing but its
own style and script, allowed by hash (see `adws.render._page`).

A page has a size bound: each text shows its first and last 16,000 bytes
when it is longer than 32,000 (`TEXT_CAP`), with a line between them,
"N bytes cut: `adws status RUN --step S --attempt A` shows all"; a field of
one line shows 1,000 characters; and a page holds at most 4,000,000
bytes (`PAGE_CAP`): past it, nothing more is drawn and the page ends
saying so. A run with more than 3,000 rows, attempts and calls has no
timeline or diagram (they would be most of the page).

A batch's page has a row per run and, for each run that did not
succeed, the same sections, collapsed; runs that succeeded show their
steps without their prompts, answers and diffs, to keep the page small.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Final, final

import attrs

from adws.engine.errors import json_safe
from adws.journal import AttemptRecord, RunRecord
from adws.journal.records.diffs import DiffRecord
from adws.journal.records.exchanges import ExchangeRecord
from adws.journal.records.workspaces import ApprovalRecord, WorktreeRecord
from adws.render._page import PAGE_CAP, SHELL, capped, escape, page, size_of
from adws.render._page import escape as _e
from adws.render._text import cost_cell, seconds, short, sum_usage
from adws.render.diffs import diff_heading, diff_html, shows_diff
from adws.render.errors import whole_error
from adws.render.mermaid import step_outcomes
from adws.render.proved import proofs_of, proved_html
from adws.render.status import branch_order, call_facts, outcome, own_seconds
from adws.render.svg import Row, diagram, timeline
from adws.render.words import parked_until, row_word, run_word, waits
from adws.render.workspaces import workspaces_html

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.journal.records.exchanges import Text

__all__ = ["RunView", "batch_page", "run_body", "run_page", "run_title"]


@final
@attrs.frozen
class RunView:
    """What a page shows of one run: its rows, agent exchanges, worktrees, approvals, diffs."""

    record: RunRecord
    attempts: tuple[AttemptRecord, ...]
    exchanges: tuple[ExchangeRecord, ...] = ()
    worktrees: tuple[WorktreeRecord, ...] = ()
    approvals: tuple[ApprovalRecord, ...] = ()
    diffs: tuple[DiffRecord, ...] = ()
    """Each worktree attempt's diff from the worktree's base (see `adws.journal.store.diffs`)."""


_RESERVE: Final = 16_384
"""Bytes kept back under the cap for what closes a page: its open tags and its last note."""
_DRAWN: Final = 3_000
"""Rows, attempts and calls a timeline draws at most (beyond, the pictures are left out)."""


@final
class _Page:
    """A page as it is written, part after part, with what is left under its cap.

    A part that does not fit fills the page: nothing more is added but the
    tags that close what is open (from the reserve), then a note saying
    where the page stopped.
    """

    def __init__(self, room: int) -> None:
        self.parts: list[str] = []
        self.left = room - _RESERVE
        self.full = False

    def add(self, part: str) -> bool:
        """Add a part if it fits; say whether it did (once one does not, none does)."""
        size = size_of(part)
        if self.full or size > self.left:
            self.full = True
            return False
        self.left -= size
        self.parts.append(part)
        return True

    def close(self, part: str) -> None:
        """Add what closes an open element, whether or not the page is full."""
        self.left -= size_of(part)
        self.parts.append(part)

    def body(self, shows: str, cap: int) -> str:
        """Join the parts; a full page ends saying where it stopped and what shows all."""
        if self.full:
            self.parts.append(
                f'<p class="cut">the page stops here: it holds at most {cap:,} bytes; '
                f"<code>{_e(shows)}</code> shows all</p>"
            )
        return "".join(self.parts)


def _badge(status: str) -> str:
    """Draw a status (one of the fixed words) as a badge."""
    return f'<span class="badge {_e(status)}">{_e(status)}</span>'


def _shows(run_id: str, path: str, attempt: object) -> str:
    """Name the command that shows one attempt's texts whole."""
    return f"adws status {run_id} --step {shlex.quote(path)} --attempt {attempt}"


def _text(page: _Page, title: str, text: Text | None, css: str, shows: str) -> None:
    if text is None:
        return
    size = f"{text.size:,} bytes"
    if text.text is None:
        page.add(f'<p class="note">{_e(title)}: not kept ({size}; transcripts were off)</p>')
        return
    cut = (
        '<p class="note">cut: the journal keeps the first bytes (the step\'s output cap)</p>'
        if text.cut
        else ""
    )
    page.add(
        f'<details class="{css}"><summary>{_e(title)} ({size})</summary>'
        f"{capped(text.text, shows)}{cut}</details>"
    )


def _call(page: _Page, number: int, call: ExchangeRecord, shows: str) -> None:
    facts = [f"agent call {number}", *call_facts(call)]
    if not page.add(f'<div class="call"><div class="facts">{_e(" · ".join(facts))}</div>'):
        return
    _text(page, "prompt", call.prompt, "prompt", shows)
    if call.answer is None:
        page.add('<p class="note">answer: none (the agent gave no answer)</p>')
    else:
        _text(page, "answer", call.answer, "answer", shows)
    _text(page, "stderr", call.stderr, "stderr", shows)
    if call.error_type is not None:
        page.add(f'<p class="note">this call ended: {_e(call.error_type)}: {_e(call.error)}</p>')
    page.close("</div>")


def _diff(page: _Page, record: DiffRecord, run_id: str) -> None:
    """Draw one worktree attempt's diff, collapsed, or say why it cannot be shown."""
    heading = diff_heading(record, f"attempt {record.attempt}")
    if record.problems or not record.diff.text:
        page.add(f'<p class="note">{_e(heading)}</p>')
        return
    cut = (
        '<p class="note">cut: the journal keeps the first bytes of a diff</p>'
        if record.diff.cut
        else ""
    )
    shows = shows_diff(run_id, record.step, record.attempt)
    page.add(
        f'<details class="diff"><summary>{_e(heading)}</summary>'
        f"{diff_html(record.diff.text, shows)}{cut}</details>"
    )


def _attempt(  # noqa: PLR0913 - an attempt, where it is, and what the page knows of it
    page: _Page,
    anchor: str,
    *,
    rows: Sequence[AttemptRecord],
    calls: Sequence[ExchangeRecord],
    others: Sequence[AttemptRecord],
    shows: str,
    diffs: Sequence[DiffRecord],
    run_id: str,
) -> None:
    last = rows[-1]
    word = row_word(last)
    head = f"attempt {last.attempt} — {word} in {seconds(own_seconds(last, others))}"
    if last.usage is not None:
        head += f" · {last.usage.describe()}"
    opened = (
        f'<div class="attempt {word}" id="{_e(f"{anchor}-{last.attempt}")}"><h4>{_e(head)}</h4>'
    )
    if not page.add(opened):
        return
    for row in rows:
        if row.error is not None:
            round_number = row.error.context.get("round")
            label = f"round {round_number}: " if row.status == "round_failed" else ""
            lines = "\n".join(whole_error(row.error, prefix=label))
            page.add(f'<div class="error">{capped(lines, shows)}</div>')
    for index, call in enumerate(calls, 1):
        _call(page, index, call, shows)
    outputs = last.outputs()
    if outputs:
        shown = json.dumps(json_safe(outputs), indent=2, ensure_ascii=False, sort_keys=True)
        page.add(
            '<details class="outputs"><summary>outputs added</summary>'
            f"{capped(shown, shows)}</details>"
        )
    for found in diffs:
        _diff(page, found, run_id)
    page.close("</div>")


@final
@attrs.frozen
class _Place:
    """Where a step or branch is drawn: its path, its title and anchor, the run it is in."""

    path: str
    title: str
    anchor: str
    run_id: str
    branch: bool = False


def _section(  # noqa: PLR0913 - a step, where, and what the page knows of it
    page: _Page,
    place: _Place,
    rows: Sequence[AttemptRecord],
    calls: Sequence[ExchangeRecord],
    inner: Callable[[], None] = lambda: None,
    *,
    diffs: Sequence[DiffRecord],
) -> None:
    status, facts = outcome(rows)
    attempts: dict[object, list[AttemptRecord]] = {}
    for row in rows:
        if row_word(row) != "skipped":
            attempts.setdefault(row.attempt, []).append(row)
    opened = " open" if status in {"failed", "waiting", "parked"} else ""
    kind = "step branch" if place.branch else "step"
    head = (
        f'<section class="{kind} {status}" id="{place.anchor}" data-path="{_e(place.path)}">'
        f"<details{opened}><summary>{_badge(status)} <b>{_e(place.title)}</b> — "
        f"{_e(' · '.join(facts))}</summary>"
    )
    if not page.add(head):
        return
    for number, mine in attempts.items():
        if page.full:
            break
        shows = _shows(place.run_id, place.path, number)
        mine_calls = [call for call in calls if call.attempt == number]
        _attempt(
            page,
            place.anchor,
            rows=mine,
            calls=mine_calls,
            others=rows,
            shows=shows,
            diffs=[found for found in diffs if found.attempt == number],
            run_id=place.run_id,
        )
    inner()
    page.close("</details></section>")


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


def _rows(view: RunView, anchors: dict[str, str], *, calls: bool) -> list[Row]:
    """Build the timeline's rows: each step that ran, then its branches, in order."""
    rows = []
    branches = _branches(view)
    exchanges = view.exchanges if calls else ()
    for index, step in enumerate(view.record.steps, 1):
        mine = tuple(row for row in view.attempts if row.step == step)
        if not mine:
            continue
        step_calls = tuple(call for call in exchanges if call.step == step)
        rows.append(Row(step, f"{index}. {step}", mine, step_calls, anchors[step]))
        for path in branches[step]:
            path_rows = tuple(row for row in view.attempts if row.step == path)
            path_calls = tuple(call for call in exchanges if call.step == path)
            rows.append(Row(path, path, path_rows, path_calls, anchors[path], depth=1))
    return rows


def _steps(page: _Page, view: RunView, anchors: dict[str, str], *, calls: bool) -> None:
    """Draw each step's section, its branches' inside it, in order, while the page has room."""
    branches = _branches(view)
    exchanges = view.exchanges if calls else ()
    diffs = view.diffs if calls else ()
    run_id = view.record.run_id
    for index, step in enumerate(view.record.steps, 1):
        if page.full:
            return
        mine = [row for row in view.attempts if row.step == step]
        if not mine:
            page.add(f'<p class="note" id="{anchors[step]}">{index}. {_e(step)}: not run</p>')
            continue

        def inner(step: str = step) -> None:
            for path in branches[step]:
                if page.full:
                    return
                path_rows = [row for row in view.attempts if row.step == path]
                path_calls = [call for call in exchanges if call.step == path]
                path_diffs = [found for found in diffs if found.step == path]
                place = _Place(path, path, anchors[path], run_id, branch=True)
                _section(page, place, path_rows, path_calls, diffs=path_diffs)

        step_calls = [call for call in exchanges if call.step == step]
        step_diffs = [found for found in diffs if found.step == step]
        place = _Place(step, f"{index}. {step}", anchors[step], run_id)
        _section(page, place, mine, step_calls, inner, diffs=step_diffs)


def _header(record: RunRecord) -> str:
    duration = "-" if record.seconds is None else seconds(record.seconds)
    spent = "nothing reported" if record.usage is None else record.usage.describe()
    resumed = f" · resumed {record.resumes}x" if record.resumes else ""
    elsewhere = record.held_elsewhere
    held = "" if elsewhere is None else f"<p>{_e(elsewhere)}</p>"
    return (
        f"<header><h1>{_e(record.workflow)} {_badge(run_word(record.status))}</h1>"
        f"<p>run <code>{_e(record.run_id)}</code> · started {_e(record.started)}"
        f"{'' if not record.finished else ' · finished ' + _e(record.finished)}{_e(resumed)}</p>"
        f"<p>duration {_e(duration)} · spent {_e(spent)}</p>{held}</header>"
    )


def _run_error(record: RunRecord) -> str:
    """Draw how the run stopped: its error whole, or the question it waits on."""
    error = record.error
    if error is None:
        return ""
    shows = f"adws status {record.run_id}"
    if record.status == "parked":
        until = parked_until(record.wake_at, record.parked_reason or error.message)
        said = f"{error.step_name}: {error.message}"
        return f'<div class="parked run-parked"><h2>{_e(until)}</h2>{capped(said, shows)}</div>'
    if waits(error):
        question = f"{error.step_name}: {error.message}"
        return (
            '<div class="waiting run-waiting"><h2>waiting for approval</h2>'
            f"{capped(question, shows)}</div>"
        )
    lines = "\n".join(whole_error(error, prefix=f"{error.step_name}: "))
    return f'<div class="error run-error"><h2>error</h2>{capped(lines, shows)}</div>'


def _pictures(view: RunView, rows: Sequence[Row], anchors: dict[str, str]) -> str:
    """Draw the timeline and the diagram, unless the run has more than a page draws."""
    if not rows:
        return ""
    drawn = sum(1 + len(row.rows) + len(row.calls) for row in rows)
    if drawn > _DRAWN:
        return (
            f'<p class="cut">the timeline and the step diagram are left out: they would draw '
            f"{drawn:,} rows, attempts and calls (a page draws {_DRAWN:,}); "
            f"<code>{_e(f'adws status {view.record.run_id}')}</code> lists them</p>"
        )
    outcomes = step_outcomes(view.attempts)
    return (
        f"<h2>timeline</h2>{timeline(rows)}<h2>steps</h2>"
        f"{diagram(view.record.steps, outcomes, _branches(view), anchors)}"
    )


def _run_body(page: _Page, view: RunView, prefix: str = "", *, calls: bool = True) -> None:
    record = view.record
    anchors = _anchors(view, prefix)
    page.add(_run_error(record))
    page.add(proved_html(proofs_of(view.attempts, record.error)))
    shows = f"adws status {record.run_id} --json"
    page.add(workspaces_html(view.worktrees, view.approvals, shows))
    page.add(_pictures(view, _rows(view, anchors, calls=calls), anchors))
    page.add("<h2>attempts</h2>")
    _steps(page, view, anchors, calls=calls)


def run_title(record: RunRecord) -> str:
    """Name a run's page: its workflow, status and id (not escaped)."""
    return f"{record.workflow} {run_word(record.status)} · run {record.run_id}"


def run_body(view: RunView, *, room: int = PAGE_CAP, cap: int = PAGE_CAP) -> str:
    """Draw one run's header and sections in at most `room` bytes, without the document.

    `cap` is the bound the page says it stopped at when it is full (`adws
    serve` puts the body in its own page).
    """
    record = view.record
    drawn = _Page(room)
    drawn.add(_header(record))
    _run_body(drawn, view)
    return drawn.body(f"adws status {record.run_id}", cap)


def run_page(view: RunView, *, cap: int = PAGE_CAP) -> str:
    """Draw one run as a page of at most `cap` bytes."""
    title = run_title(view.record)
    return page(title, run_body(view, room=cap - SHELL - size_of(escape(title)), cap=cap))


def _batch_row(number: int, record: RunRecord) -> str:
    error = "" if record.error is None else short(record.error)
    return (
        f'<tr><td><a href="#r{number}">{_e(record.run_id)}</a></td>'
        f"<td>{_badge(run_word(record.status))}</td>"
        f"<td>{_e('-' if record.seconds is None else seconds(record.seconds))}</td>"
        f"<td>{_e(cost_cell(record.usage))}</td><td>{_e(error)}</td></tr>"
    )


def batch_page(
    batch_id: str, workflow: str, views: Sequence[RunView], *, cap: int = PAGE_CAP
) -> str:
    """Draw a batch as a page: a row per run, then each run's sections (collapsed).

    At most `cap` bytes: rows and runs past it are left out, and the page
    says so.
    """
    counts: dict[str, int] = {}
    for view in views:
        word = run_word(view.record.status)
        counts[word] = counts.get(word, 0) + 1
    spent = sum_usage(view.record.usage for view in views)
    seconds_all = sum(view.record.seconds or 0.0 for view in views)
    summary = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    title = f"batch {batch_id} · {workflow}"
    drawn = _Page(cap - SHELL - size_of(escape(title)))
    header = (
        f"<header><h1>batch {_e(batch_id)} · {_e(workflow)}</h1>"
        f"<p>{len(views)} runs: {_e(summary or 'none')}</p>"
        f"<p>run time {_e(seconds(seconds_all))} in all · spent "
        f"{_e('nothing reported' if spent is None else spent.describe())}</p></header>"
        "<h2>runs</h2><table><tr><th>run</th><th>status</th><th>duration</th><th>cost</th>"
        "<th>error</th></tr>"
    )
    if drawn.add(header):
        for number, view in enumerate(views):
            if not drawn.add(_batch_row(number, view.record)):
                break
        drawn.close("</table>")
    drawn.add(
        "<h2>each run</h2>"
        '<p class="note">prompts and answers are shown for the runs that did not succeed</p>'
    )
    for number, view in enumerate(views):
        word = run_word(view.record.status)
        head = (
            f'<section class="run" id="r{number}"><details><summary>{_badge(word)} '
            f"run {_e(view.record.run_id)}</summary>"
        )
        if not drawn.add(head):
            break
        _run_body(drawn, view, f"r{number}", calls=word != "succeeded")
        drawn.close("</details></section>")
    return page(title, drawn.body(f"adws runs --batch {batch_id}", cap))
