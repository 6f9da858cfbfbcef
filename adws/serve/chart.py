"""Cost over time as an inline SVG: a bar per day, stacked by workflow, and a legend.

Drawn on the server: no script, no style but attributes, every label
escaped. Workflows past `PALETTE`'s colours are summed as "other".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.render._page import escape

if TYPE_CHECKING:
    from adws.serve.reading import Spend

__all__ = ["PALETTE", "cost_chart"]

PALETTE: Final = (
    "#1565c0",
    "#2e7d32",
    "#ef6c00",
    "#6a1b9a",
    "#00838f",
    "#ad1457",
    "#8d6e63",
    "#546e7a",
)
"""A colour per workflow, the most spending first; the rest are one bar part, "other"."""
_WIDTH: Final = 900
_HEIGHT: Final = 220
_LEFT: Final = 60
_BOTTOM: Final = 30


def _series(spend: Spend) -> list[tuple[str, tuple[float, ...]]]:
    """Keep the workflows that spent most (one colour each), the rest summed as "other"."""
    ranked = sorted(spend.per_workflow, key=lambda row: (-sum(row[1]), row[0]))
    kept = ranked[: len(PALETTE) - 1] if len(ranked) > len(PALETTE) else ranked
    rest = ranked[len(kept) :]
    if rest:
        summed = tuple(sum(values) for values in zip(*(row[1] for row in rest), strict=True))
        kept = [*kept, (f"other ({len(rest)} workflows)", summed)]
    return kept


def cost_chart(spend: Spend) -> str:
    """Draw dollars per day, stacked by workflow, as an SVG with a legend under it.

    >>> from adws.serve.reading import Spend
    >>> "no agent call reported a cost" in cost_chart(Spend(("2026-01-01",), ()))
    True
    """
    series = _series(spend)
    totals = [sum(values[day] for _, values in series) for day in range(len(spend.days))]
    top = max(totals, default=0.0)
    if top <= 0:
        return '<p class="note">no agent call reported a cost in these days</p>'
    step = (_WIDTH - _LEFT) / len(spend.days)
    scale = (_HEIGHT - _BOTTOM - 10) / top
    parts = [
        (
            f'<svg class="chart" role="img" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" '
            f'height="{_HEIGHT}" xmlns="http://www.w3.org/2000/svg">'
            f'<text x="4" y="14">${top:.2f}</text><text x="4" y="{_HEIGHT - _BOTTOM}">$0</text>'
        )
    ]
    for day, name in enumerate(spend.days):
        x = _LEFT + day * step
        y = float(_HEIGHT - _BOTTOM)
        for (workflow, values), colour in zip(series, PALETTE, strict=False):
            height = values[day] * scale
            if height <= 0:
                continue
            y -= height
            parts.append(
                f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{step - 2:.1f}" height="{height:.1f}" '
                f'fill="{colour}"><title>{escape(name)} · {escape(workflow)}: '
                f"${values[day]:.4f}</title></rect>"
            )
        if day % 7 == 0 or day == len(spend.days) - 1:
            parts.append(f'<text x="{x:.1f}" y="{_HEIGHT - 8}">{escape(name[5:])}</text>')
    parts.append("</svg>")
    legend = "".join(
        f'<li><svg width="10" height="10"><rect width="10" height="10" fill="{colour}"/></svg> '
        f"{escape(workflow)}: ${sum(values):.2f}</li>"
        for (workflow, values), colour in zip(series, PALETTE, strict=False)
    )
    return "".join(parts) + f'<ul class="legend">{legend}</ul>'
