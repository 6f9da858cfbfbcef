"""The page of an evaluation (`adws report --eval ID`): one bar per variant, with its interval.

Each variant's bar is its pass rate (or mean metric, capped at 1 for the
bar) from 0 to 1, the whisker its 95% Wilson interval; a table under it
gives the figures and the verdict of Fisher's exact test. The page is
self-contained (inline SVG, no script of its own); every name is escaped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.render._page import escape, page

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["eval_page"]

_LABEL: Final = 160
_PLOT: Final = 500
_ROW: Final = 34


def _bar(index: int, row: Mapping[str, object]) -> str:
    top = 10 + index * _ROW
    rate = min(1.0, max(0.0, float(str(row["rate"]))))
    low, high = float(str(row["low"])), float(str(row["high"]))
    width = round(rate * _PLOT, 1)
    x1, x2 = _LABEL + round(low * _PLOT, 1), _LABEL + round(high * _PLOT, 1)
    middle = top + 10
    name = escape(row["variant"], 40)
    return (
        f'<text x="{_LABEL - 8}" y="{middle + 4}" text-anchor="end">{name}</text>'
        f'<rect x="{_LABEL}" y="{top}" width="{width}" height="20" fill="#4c8bf5">'
        f"<title>{name}: {rate:.3f} [{low:.3f}, {high:.3f}]</title></rect>"
        f'<line x1="{x1}" y1="{middle}" x2="{x2}" y2="{middle}" stroke="#222" stroke-width="2"/>'
        f'<line x1="{x1}" y1="{top + 3}" x2="{x1}" y2="{top + 17}" stroke="#222"/>'
        f'<line x1="{x2}" y1="{top + 3}" x2="{x2}" y2="{top + 17}" stroke="#222"/>'
    )


def _money(value: object) -> str:
    return "-" if value is None else f"${float(str(value)):.4f}"


def _time(value: object) -> str:
    return "-" if value is None else f"{float(str(value)):.2f}s"


def eval_page(
    batch_id: str, workflow: str, scores: Sequence[Mapping[str, object]], verdict: str | None
) -> str:
    """Draw an evaluation: a bar and interval per variant, its figures, and the test's verdict."""
    height = 20 + _ROW * len(scores)
    axis = "".join(
        f'<text x="{_LABEL + tick * _PLOT / 4}" y="{height + 4}" text-anchor="middle">'
        f"{tick / 4:.2f}</text>"
        for tick in range(5)
    )
    bars = "".join(_bar(index, row) for index, row in enumerate(scores))
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_LABEL + _PLOT + 40}"'
        f' height="{height + 14}" role="img" aria-label="pass rate per variant">{bars}{axis}</svg>'
    )
    rows = "".join(
        f"<tr><td>{escape(row['variant'], 40)}</td><td>{row['runs']}</td><td>{row['passed']}</td>"
        f"<td>{float(str(row['rate'])):.3f}</td>"
        f"<td>[{float(str(row['low'])):.3f}, {float(str(row['high'])):.3f}]</td>"
        f"<td>{_money(row['mean_cost_usd'])}</td><td>{_time(row['mean_seconds'])}</td></tr>"
        for row in scores
    )
    table = (
        "<table><tr><th>variant</th><th>runs</th><th>passed</th><th>rate</th>"
        f"<th>95% interval</th><th>mean cost</th><th>mean time</th></tr>{rows}</table>"
    )
    said = "" if verdict is None else f"<p>Fisher's exact test: {escape(verdict)}</p>"
    title = f"eval {batch_id} · {workflow}"
    return page(title, f"<h1>{escape(title)}</h1>\n{svg}\n{table}\n{said}")
