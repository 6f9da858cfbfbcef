"""Cost over time drawn as an SVG: stacked per day, a colour per workflow, the rest summed."""

from __future__ import annotations

from adws.serve.chart import PALETTE, cost_chart
from adws.serve.reading import Spend


def test_bars_stack_per_day_and_the_legend_sums_each_workflow() -> None:
    drawn = cost_chart(
        Spend(("2026-11-01", "2026-11-02"), (("fix", (1.0, 0.0)), ("<b>review</b>", (0.5, 2.0))))
    )
    assert drawn.count("<rect x=") == 3
    assert "<title>2026-11-02 · &lt;b&gt;review&lt;/b&gt;: $2.0000</title>" in drawn
    assert "<li>" in drawn
    assert "&lt;b&gt;review&lt;/b&gt;: $2.50</li>" in drawn
    assert "fix: $1.00</li>" in drawn
    assert '<text x="4" y="14">$2.00</text>' in drawn


def test_workflows_past_the_palette_are_one_other() -> None:
    names = [(f"w{index}", (float(index + 1),)) for index in range(len(PALETTE) + 2)]
    drawn = cost_chart(Spend(("2026-11-01",), tuple(names)))
    assert "other (3 workflows): $6.00</li>" in drawn
    assert drawn.count("<li>") == len(PALETTE)


def test_a_day_is_labelled_every_week_and_the_last() -> None:
    days = tuple(f"2026-11-{day:02d}" for day in range(1, 10))
    drawn = cost_chart(Spend(days, (("fix", (1.0,) * 9),)))
    labels = [part.split("</text>")[0] for part in drawn.split('y="212">')[1:]]
    assert labels == ["11-01", "11-08", "11-09"]
