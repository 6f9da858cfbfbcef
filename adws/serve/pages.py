"""The pages of `adws serve`, drawn on the server: every text escaped, nothing inline that runs.

A page is a document around a `<main>`: a bar of links, who is signed in,
then what the page shows. Its style and its one script are files the
server serves itself (`/static/serve.css`, `/static/serve.js`), allowed by
the `Content-Security-Policy` as `'self'`: no inline style or script, no
handler attribute, nothing from anywhere else. The script keeps `<main>`
live (see `adws.serve.live`); without it every page still works.

Every form that changes something carries a form token of its own
(`mint()` makes one), good once (see `adws.serve.access`); the runs
filter changes nothing and carries none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.render._page import escape
from adws.render._text import cost_cell, seconds
from adws.render.diffs import diff_heading, diff_html, shows_diff
from adws.render.report import run_body, run_title
from adws.render.words import RUN_WORDS, run_word
from adws.serve.chart import cost_chart

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.journal import RunRecord
    from adws.journal.records.workers import WorkerRecord
    from adws.journal.store.caps import CapState
    from adws.render.report import RunView
    from adws.serve.reading import Spend, Waiting

__all__ = [
    "ENDED",
    "SCRIPT",
    "SERVE_STYLE",
    "Filters",
    "approvals_page",
    "caps_page",
    "cost_page",
    "document",
    "login_page",
    "run_page",
    "runs_page",
    "said_page",
    "workers_page",
]

Filters = tuple[str | None, str | None, str | None]
"""The runs page's filters: status, workflow, ticket (None: any)."""

ENDED: Final = frozenset({"succeeded", "cancelled"})
"""Statuses a run never leaves: no cancel is offered."""

SERVE_STYLE: Final = """
nav{display:flex;gap:14px;align-items:center;border-bottom:1px solid #e0e0e0;padding:4px 0 8px}
nav .who{margin-left:auto;color:#616161}nav form{display:inline}
form.decide{display:inline-block;margin:4px 12px 4px 0;vertical-align:top}
form.decide textarea{display:block;width:320px;height:48px}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:12px}
.said{border:1px solid #e0e0e0;border-radius:6px;padding:8px 12px}
.refused{border-color:#c62828}
"""
"""What `adws serve` adds to the report page's stylesheet."""

SCRIPT: Final = """
(function(){
var main=document.getElementById('live');
if(!main||!window.EventSource){return;}
var busy=false,again=false;
function editing(){var a=document.activeElement;return a&&main.contains(a)&&a.form;}
function refresh(){
if(busy||editing()){again=true;return;}busy=true;
fetch(location.href,{credentials:'same-origin',headers:{'X-Live':'1'}})
.then(function(r){return r.ok?r.text():null;})
.then(function(t){busy=false;if(t===null){return;}
var d=new DOMParser().parseFromString(t,'text/html'),m=d.getElementById('live');
if(m){var open={};main.querySelectorAll('details[id]').forEach(function(x){open[x.id]=x.open;});
main.innerHTML=m.innerHTML;main.querySelectorAll('details[id]').forEach(function(x){
if(x.id in open){x.open=open[x.id];}});}
if(again){again=false;refresh();}})
.catch(function(){busy=false;});}
var source=new EventSource('/events');
source.addEventListener('change',refresh);
document.addEventListener('focusout',function(){if(again){again=false;setTimeout(refresh,0);}});
})();
"""
"""Keep `<main>` live: on each `change` event, fetch this page again and swap its `<main>` in.

Not while a form field in it has the focus (a note half typed is kept);
the swap happens once it is left.
"""

_NAV: Final = (
    ("/", "runs"),
    ("/approvals", "approvals"),
    ("/cost", "cost"),
    ("/workers", "workers"),
    ("/caps", "caps"),
)


def _badge(status: object) -> str:
    word = run_word(status)
    return f'<span class="badge {word}">{word}</span>'


def _hidden(token: str) -> str:
    return f'<input type="hidden" name="csrf" value="{escape(token)}">'


def document(
    title: str,
    body: str,
    who: str | None = None,
    mint: Callable[[], str] | None = None,
    *,
    live: bool = True,
) -> str:
    """Wrap `body` (escaped by its makers) in a page: links, who is signed in, a `<main>`.

    The `<main>` of a signed-in page is kept live, unless `live` is False
    (the answer to a change: its address is the form's, not a page's).
    """
    nav, kept = "", ""
    if who is not None and mint is not None:
        kept = ' id="live"' if live else ""
        links = "".join(f'<a href="{href}">{name}</a>' for href, name in _NAV)
        nav = (
            f'<nav><strong>adws</strong>{links}<span class="who">signed in as {escape(who)}</span>'
            f'<form method="post" action="/logout">{_hidden(mint())}'
            '<button type="submit">log out</button></form></nav>'
        )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel="stylesheet" href="/static/serve.css"></head>\n'
        f"<body>{nav}\n<main{kept}>{body}</main>\n"
        '<script src="/static/serve.js"></script>\n</body></html>\n'
    )


def login_page(token: str, problem: str | None = None) -> str:
    """Ask for the server's token and a name (the decisions made here are recorded under it)."""
    said = "" if problem is None else f'<p class="said refused">{escape(problem)}</p>'
    body = (
        f"<h1>adws · log in</h1>{said}"
        "<p>The token is in <code>.adws/serve-token</code> on the host that runs "
        "<code>adws serve</code> (the server printed where).</p>"
        f'<form method="post" action="/login">{_hidden(token)}'
        '<p><label>token <input type="password" name="token" autocomplete="off" required>'
        "</label></p>"
        '<p><label>your name <input type="text" name="name" maxlength="64" required></label>'
        '</p><p><button type="submit">log in</button></p></form>'
    )
    return document("adws · log in", body)


def _filters(chosen: Filters) -> str:
    status, workflow, ticket = chosen
    options = "".join(
        f'<option value="{word}"{" selected" if word == status else ""}>{word}</option>'
        for word in ("", *sorted(RUN_WORDS))
    )
    return (
        '<form method="get" action="/" class="filters">'
        f'<label>status <select name="status">{options}</select></label> '
        f'<label>workflow <input name="workflow" value="{escape(workflow or "")}"></label> '
        f'<label>ticket <input name="ticket" value="{escape(ticket or "")}"></label> '
        '<button type="submit">filter</button></form>'
    )


def _run_row(record: RunRecord) -> str:
    duration = "-" if record.seconds is None else seconds(record.seconds)
    return (
        f'<tr><td><a href="/runs/{escape(record.run_id)}">{escape(record.run_id)}</a></td>'
        f"<td>{escape(record.workflow)}</td><td>{_badge(record.status)}</td>"
        f"<td>{escape(record.started)}</td><td>{escape(duration)}</td>"
        f"<td>{escape(cost_cell(record.usage))}</td><td>{escape(record.host or '-')}</td></tr>"
    )


def runs_page(records: Sequence[RunRecord], chosen: Filters) -> str:
    """List runs, newest first, under the filters that chose them."""
    rows = "".join(_run_row(record) for record in records)
    table = (
        "<table><tr><th>run</th><th>workflow</th><th>status</th><th>started</th>"
        f"<th>duration</th><th>cost</th><th>host</th></tr>{rows}</table>"
        if records
        else '<p class="note">no run matches</p>'
    )
    return f"<h1>runs</h1>{_filters(chosen)}{table}"


def _decide_forms(record: RunRecord, token: Callable[[], str], *, budget: bool) -> str:
    """Draw approve and reject (a waiting run), then cancel (a run that may still change)."""
    run = escape(record.run_id)
    forms = []
    if record.status == "waiting":
        raise_budget = (
            '<label>new budget, USD <input name="max_cost" inputmode="decimal" required></label>'
            if budget
            else ""
        )
        forms.append(
            f'<form class="decide approve" method="post" action="/runs/{run}/approve">'
            f'{_hidden(token())}<label>note<textarea name="note"></textarea></label>'
            f'{raise_budget}<button type="submit">approve</button></form>'
            f'<form class="decide reject" method="post" action="/runs/{run}/reject">'
            f'{_hidden(token())}<label>reason<textarea name="reason" required></textarea></label>'
            '<button type="submit">reject</button></form>'
        )
    if record.status not in ENDED:
        forms.append(
            f'<form class="decide cancel" method="post" action="/runs/{run}/cancel">'
            f'{_hidden(token())}<label>reason<textarea name="reason"></textarea></label>'
            '<button type="submit">cancel the run</button></form>'
        )
    return "".join(forms)


def run_page(view: RunView, token: Callable[[], str], *, budget: bool) -> tuple[str, str]:
    """Draw one run as `adws report` does, with what may be decided on it; return title and body."""
    record = view.record
    actions = _decide_forms(record, token, budget=budget)
    decide = f"<section><h2>decide</h2>{actions}</section>" if actions else ""
    return run_title(record), decide + run_body(view)


def _diff(record: Waiting, index: int) -> str:
    parts = []
    for number, diff in enumerate(record.diffs):
        heading = diff_heading(diff, f"step {diff.step}, attempt {diff.attempt}")
        if diff.problems or not diff.diff.text:
            parts.append(f'<p class="note">{escape(heading)}</p>')
            continue
        shows = shows_diff(record.record.run_id, diff.step, diff.attempt)
        parts.append(
            f'<details class="diff" id="d{index}-{number}"><summary>{escape(heading)}</summary>'
            f"{diff_html(diff.diff.text, shows)}</details>"
        )
    return "".join(parts)


def approvals_page(waiting: Sequence[Waiting], token: Callable[[], str]) -> str:
    """List the runs waiting for a person: the question, the diffs, approve and reject."""
    if not waiting:
        return '<h1>approvals</h1><p class="note">no run waits for approval</p>'
    parts = ["<h1>approvals</h1>"]
    for index, item in enumerate(waiting):
        record = item.record
        error = record.error
        question = "" if error is None else f"{error.step_name}: {error.message}"
        parts.append(
            f'<section class="step waiting"><h2><a href="/runs/{escape(record.run_id)}">'
            f"{escape(record.run_id)}</a> · {escape(record.workflow)}</h2>"
            f"<pre>{escape(question, 4_000)}</pre>{_diff(item, index)}"
            f"{_decide_forms(record, token, budget=item.budget)}</section>"
        )
    return "".join(parts)


def cost_page(spend: Spend) -> str:
    """Draw what agent calls cost per day, stacked by workflow."""
    return (
        f"<h1>cost over time</h1><p>dollars per day, {escape(spend.days[0])} to "
        f"{escape(spend.days[-1])}, by workflow (<code>adws cost --by day</code>)</p>"
        f"{cost_chart(spend)}"
    )


def workers_page(workers: Sequence[WorkerRecord]) -> str:
    """List the live `adws worker` processes."""
    if not workers:
        return '<h1>workers</h1><p class="note">no live adws worker</p>'
    rows = "".join(
        f"<tr><td>{escape(worker.host)}</td><td>{worker.pid}</td><td>{escape(worker.since)}</td>"
        f"<td>{escape(' '.join(worker.runs) or '-')}</td></tr>"
        for worker in workers
    )
    return (
        "<h1>workers</h1><table><tr><th>host</th><th>pid</th><th>since</th><th>runs</th></tr>"
        f"{rows}</table>"
    )


def _cap_row(state: CapState) -> str:
    cap = state.cap
    if cap is None:
        return f'<tr><td>{escape(state.name)}</td><td colspan="5">{escape(state.error)}</td></tr>'
    scope = " ".join(
        part
        for part in (
            cap.workflow and f"workflow {cap.workflow}",
            cap.agent and f"agent {cap.agent}",
        )
        if part
    )
    resets = "-" if state.resets is None else state.resets.isoformat(timespec="seconds")
    return (
        f"<tr><td>{escape(state.name)}</td><td>{escape(f'{cap.amount:g} {cap.currency}')} per "
        f"{escape(cap.per)}</td><td>{escape(scope or 'all runs')}</td>"
        f"<td>{state.spent:g}</td><td>{state.remaining:g}</td><td>{escape(resets)}</td></tr>"
    )


def caps_page(states: Sequence[CapState]) -> str:
    """List the caps and their current windows (`adws caps`)."""
    if not states:
        return '<h1>caps</h1><p class="note">no cap is set (<code>adws caps set</code>)</p>'
    rows = "".join(_cap_row(state) for state in states)
    return (
        "<h1>caps</h1><table><tr><th>name</th><th>amount</th><th>for</th><th>spent</th>"
        f"<th>left</th><th>resets</th></tr>{rows}</table>"
    )


def said_page(title: str, said: str, *, refused: bool, back: str) -> str:
    """Say what a change did (or why not), with a link back."""
    css = "said refused" if refused else "said"
    return (
        f'<h1>{escape(title)}</h1><pre class="{css}">{escape(said, 8_000)}</pre>'
        f'<p><a href="{escape(back)}">back</a></p>'
    )
