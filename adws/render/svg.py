"""The pictures of a report page, as inline SVG: a timeline of a run and its step diagram.

The timeline has one row per step and, under it, one per branch: each
attempt is a bar from its start to its end on the wall clock, coloured by
how it ended (a success's bar spans its step's earlier attempts, which
are drawn over it), each agent call a thin dark bar inside, each failed
verification round a mark. Every bar links to its attempt below and says
what it was when hovered. The diagram draws the steps top to bottom,
coloured by outcome, each parallel step's branches as small boxes under
it. Both come from the journal alone: no workflow needs to load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from adws.journal import AttemptRecord
from adws.journal.records.exchanges import ExchangeRecord
from adws.render._page import COLOURS
from adws.render._page import escape as _escape
from adws.render._text import seconds, short
from adws.render.mermaid import branch_outcome
from adws.render.words import row_word

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["Row", "diagram", "timeline"]

_LABEL: Final = 190
_PLOT: Final = 700
_ROW: Final = 22
_BOX: Final = (240, 30)
_SMALL: Final = (44, 18)
_PER_LINE: Final = 12


@attrs.frozen
class Row:
    """One row of the timeline: a step or a branch, its rows in the journal, its anchor."""

    path: str
    label: str
    rows: tuple[AttemptRecord, ...]
    calls: tuple[ExchangeRecord, ...]
    anchor: str
    depth: int = 0
    """0 for a step, 1 for a branch (drawn indented under its step)."""


def _bounds(rows: Sequence[Row]) -> tuple[float, float]:
    starts = [r.started for row in rows for r in row.rows if r.started is not None]
    ends = [r.started + r.seconds for row in rows for r in row.rows if r.started is not None]
    starts += [call.started for row in rows for call in row.calls]
    ends += [call.started + call.seconds for row in rows for call in row.calls]
    if not starts:
        return 0.0, 1.0
    return min(starts), max(*ends, min(starts) + 0.001)


def _bar(place: tuple[float, float, float, float], colour: str, title: str, href: str) -> str:
    x, y, width, height = place
    return (
        f'<a href="#{_escape(href)}"><rect x="{x:.1f}" y="{y:.1f}" width="{max(width, 2):.1f}" '
        f'height="{height}" fill="{colour}" rx="2"><title>{_escape(title)}</title></rect></a>'
    )


def _what(row: AttemptRecord) -> str:
    what = f"attempt {row.attempt}: {row_word(row)} in {seconds(row.seconds)}"
    return what if row.error is None else f"{what} — {short(row.error)}"


def _tick(value: float) -> str:
    """Label a time on the axis: milliseconds, seconds or minutes, whichever reads best.

    >>> _tick(0.0123), _tick(4.25), _tick(150)
    ('12ms', '4.2s', '2.5min')
    """
    if value < 1:
        return f"{value * 1000:.0f}ms"
    if value < 60:  # noqa: PLR2004 - a minute
        return seconds(value)
    return f"{value / 60:.1f}min"


def timeline(rows: Sequence[Row]) -> str:
    """Draw the timeline of a run's steps, branches, attempts and agent calls."""
    start, end = _bounds(rows)
    scale = _PLOT / (end - start)
    height = _ROW * len(rows) + 24
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="timeline" '
            f'width="{_LABEL + _PLOT + 10}" height="{height}" aria-label="timeline">'
        )
    ]
    for tick in range(5):
        x = _LABEL + _PLOT * tick / 4
        label = _tick((end - start) * tick / 4)
        parts.append(
            f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - 16}" stroke="#eeeeee"/>'
            f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle">{label}</text>'
        )
    for number, row in enumerate(rows):
        y = number * _ROW + 3
        parts.append(f'<text x="{4 + 12 * row.depth}" y="{y + 13}">{_escape(row.label)}</text>')
        timed = [r for r in row.rows if r.started is not None and row_word(r) != "skipped"]
        # A success spans the step's earlier attempts: draw it first, under them.
        for record in sorted(timed, key=lambda r: r.status != "succeeded"):
            assert record.started is not None  # noqa: S101 - filtered above
            x = _LABEL + (record.started - start) * scale
            colour = COLOURS[row_word(record)]
            if record.status == "round_failed":
                parts.append(_bar((x - 2, y, 4, 16), colour, _what(record), row.anchor))
                continue
            anchor = f"{row.anchor}-{record.attempt}"
            width = record.seconds * scale
            parts.append(_bar((x, y, width, 16), colour, _what(record), anchor))
        for call in row.calls:
            x = _LABEL + (call.started - start) * scale
            title = f"agent call by {call.asked_by}: {seconds(call.seconds)}"
            anchor = f"{row.anchor}-{call.attempt}"
            place = (x, y + 12, call.seconds * scale, 4)
            parts.append(_bar(place, COLOURS["call"], title, anchor))
    parts.append("</svg>")
    return "".join(parts)


def _box(place: tuple[float, float, int, int], outcome: str, label: str, href: str) -> str:
    x, y, width, height = place
    colour = COLOURS.get(outcome, COLOURS["not_run"])
    dashed = ' stroke-dasharray="4 3"' if outcome in {"not_run", "cancelled", "skipped"} else ""
    fill = "#ffffff" if outcome == "not_run" else colour
    text = "#212121" if outcome == "not_run" else "#ffffff"
    return (
        f'<a href="#{_escape(href)}"><rect x="{x:.1f}" y="{y:.1f}" width="{width}" '
        f'height="{height}" rx="4" fill="{fill}" stroke="{colour}"{dashed}>'
        f"<title>{_escape(label)}: {_escape(outcome)}</title></rect>"
        f'<text x="{x + width / 2:.1f}" y="{y + height / 2 + 4:.1f}" '
        f'text-anchor="middle" fill="{text}">{_escape(label[:34])}</text></a>'
    )


def diagram(
    steps: Sequence[str],
    outcomes: Mapping[str, str],
    branches: Mapping[str, Sequence[str]],
    anchors: Mapping[str, str],
) -> str:
    """Draw the steps top to bottom, coloured by outcome, with each step's branches under it."""
    width, height = _BOX
    small_width, small_height = _SMALL
    left = 20
    parts: list[str] = []
    y = 10.0
    for index, name in enumerate(steps):
        mine = branches.get(name, ())
        outcome = outcomes.get(name, "not_run")
        if outcome == "succeeded" and branch_outcome(name, outcomes) not in {None, "succeeded"}:
            outcome = "partial"
        if index:
            parts.append(
                f'<line x1="{left + width / 2}" y1="{y - 14}" x2="{left + width / 2}" y2="{y}" '
                'stroke="#9e9e9e"/>'
            )
        label = f"{index + 1}. {name}"
        parts.append(_box((left, y, *_BOX), outcome, label, anchors.get(name, "")))
        y += height + 6
        for number, path in enumerate(mine):
            column, line = number % _PER_LINE, number // _PER_LINE
            x = left + 16 + column * (small_width + 4)
            label = path[len(name) :].strip("[]")
            branch = outcomes.get(path, "not_run")
            branch = "succeeded" if branch == "reused" else branch
            top = y + line * (small_height + 4)
            parts.append(_box((x, top, *_SMALL), branch, label, anchors.get(path, "")))
        if mine:
            y += ((len(mine) - 1) // _PER_LINE + 1) * (small_height + 4) + 4
        y += 14
    total = left + 16 + _PER_LINE * (small_width + 4)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="diagram" '
        f'width="{max(total, left + width + 20)}" height="{y:.0f}" aria-label="steps">'
        + "".join(parts)
        + "</svg>"
    )
