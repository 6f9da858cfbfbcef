"""Parallel figures: 16 agent branches of 0.2 s each, beside LangGraph's `Send` fan-out.

Imported by `benchmarks/run.py`. Each agent is a real process (`sh -c 'sleep 0.2'`),
as a CLI agent would be.
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

from timing import median_seconds

from adws import (
    CommandAgent,
    RetryPolicy,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
    run_workflow,
)

BRANCHES = 16
SECONDS = 0.2
AGENT = CommandAgent(["sh", "-c", f"cat >/dev/null; sleep {SECONDS}; echo STATUS: done"])


class LangGraphState(TypedDict):
    """The peer's state: the items to fan out over, and what each node reported."""

    items: list[int]
    done: Annotated[list[int], operator.add]


def _wall(max_concurrency: int | None) -> float:
    step = agent_step("ask", prompt="{item}", agent=AGENT, retry=RetryPolicy())
    workflow = Workflow(
        "fan", (fan_out("all", step, over="items", max_concurrency=max_concurrency),)
    )
    start = WorkflowContext(inputs={"items": list(range(BRANCHES))})
    return median_seconds(lambda: run_workflow(workflow, start), 3, warm_up=False)


def _startup() -> float:
    """One 0-second agent call: what a branch costs beyond its own work."""
    quick = CommandAgent(["sh", "-c", "cat >/dev/null; echo STATUS: done"])
    workflow = Workflow("one", (agent_step("ask", prompt="p", agent=quick),))
    return median_seconds(lambda: run_workflow(workflow), 5, warm_up=False)


def langgraph_send() -> float | None:
    """Wall time of LangGraph fanning out the same 16 sleeping nodes with `Send`."""
    try:
        from langgraph.graph import END, START, StateGraph  # noqa: PLC0415 - optional peer
        from langgraph.types import Send  # noqa: PLC0415 - optional peer
    except ImportError:
        return None

    def work(state: dict[str, Any]) -> dict[str, list[int]]:
        time.sleep(SECONDS)
        return {"done": [state["item"]]}

    def spread(state: LangGraphState) -> list[Any]:
        return [Send("work", {"item": item}) for item in state["items"]]

    graph: Any = StateGraph(LangGraphState)
    graph.add_node("work", work)
    graph.add_conditional_edges(START, spread, ["work"])
    graph.add_edge("work", END)
    app = graph.compile()
    return median_seconds(
        lambda: app.invoke({"items": list(range(BRANCHES)), "done": []}), 3, warm_up=False
    )


def measure() -> dict[str, float | None]:
    """Measure the parallel figures."""
    return {
        "startup_s": _startup(),
        "all_s": _wall(None),
        "four_s": _wall(4),
        "sequential_s": _wall(1),
        "langgraph_s": langgraph_send(),
    }


def render(p: dict[str, Any]) -> list[str]:
    """Table rows, each figure beside its target."""
    start = p["startup_s"]
    rows = [
        f"| 16 agent branches of 0.2 s, all at once | {p['all_s']:.2f} s (one 0 s agent call: {start:.2f} s) | ≤ 1.25 x 0.2 s + start-up = {0.25 + start:.2f} s |",
        f"| the same, max_concurrency=4 | {p['four_s']:.2f} s | ≤ 1.25 x 0.8 s + start-up = {1.0 + start:.2f} s |",
        f"| the same, one at a time | {p['sequential_s']:.2f} s | (sequential: 3.2 s of work) |",
    ]
    if p["langgraph_s"] is None:
        rows.append("| LangGraph `Send` fan-out of 16 sleeping nodes | not installed | |")
    else:
        rows.append(
            f"| LangGraph `Send` fan-out of 16 sleeping nodes | {p['langgraph_s']:.2f} s | side by side |"
        )
    return rows
