"""Budget overshoot of a concurrent fan_out, with and without reservations.

Imported by `benchmarks/run.py` (or run alone: `python benchmarks/budget_bench.py`).
A `fan_out` of 20 branches starts at once, each branch one agent call that
takes 20 ms and costs $1; the cap is $3 (three calls' worth). With
reservations (adws today) a call starts only while spent + reserved + its
estimate fits. Without them (adws before issue 32, reproduced here by an
agent that checks the spend so far itself before answering, as the
executor used to, under no `Budget`) every call starts at $0 spent.
Figures: calls made and dollars spent beyond the cap, and the wall time.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from adws import (
    AgentResponse,
    Budget,
    OutputContract,
    Usage,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
    run_workflow,
)
from adws.testing import FunctionAgent

BRANCHES = 20
CAP = 3.0
COST = 1.0
PAUSE = 0.02
ANSWER = "STATUS: done\nANSWER: ok\n"


def _fan_out(*, reservations: bool) -> dict[str, float]:
    """Run the fan_out once; count the calls made and the spend past the cap."""
    lock = threading.Lock()
    spent = [0.0]
    calls = [0]

    def respond(_request: object) -> AgentResponse:
        with lock:
            if not reservations and spent[0] >= CAP:  # the old check: the spend so far
                return AgentResponse("STATUS: blocked\nREASON: budget\n", {}, None)
            calls[0] += 1
        time.sleep(PAUSE)
        with lock:
            spent[0] += COST
        return AgentResponse(ANSWER, {}, Usage(COST))

    step = agent_step(
        "call", prompt="{item}", agent=FunctionAgent(respond), contract=OutputContract(("ANSWER",))
    )
    budget = Budget(CAP) if reservations else None
    workflow = Workflow("bench", (fan_out("each", step, over="items"),), budget=budget)
    started = time.perf_counter()
    run_workflow(workflow, WorkflowContext({"items": list(range(BRANCHES))}))
    seconds = time.perf_counter() - started
    return {"calls": calls[0], "beyond_cap": max(spent[0] - CAP, 0.0), "seconds": seconds}


def measure() -> dict[str, Any]:
    """Measure the fan_out both ways."""
    return {
        "with": _fan_out(reservations=True),
        "without": _fan_out(reservations=False),
    }


def render(b: dict[str, Any]) -> list[str]:
    """Table rows, each figure beside its target."""
    rows = []
    for label, key in (
        ("with reservations", "with"),
        ("without (check before each call)", "without"),
    ):
        row = b[key]
        rows.append(
            f"| fan_out of {BRANCHES} calls at ${COST:.0f}, cap ${CAP:.0f}, {label} | "
            f"{row['calls']:.0f} calls, ${row['beyond_cap']:.2f} beyond the cap, "
            f"{row['seconds'] * 1000:.0f} ms | ≤ $0 beyond the cap with exact estimates |"
        )
    return rows


if __name__ == "__main__":
    print("\n".join(render(measure())))
