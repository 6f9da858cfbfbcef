"""Cost and author-kit figures: what metering and budgets add to an agent step, `adws check`.

Imported by `benchmarks/run.py`. The agent answers in-process (no process
start), so the figures are adws's own overhead, not an agent's.
"""

from __future__ import annotations

import cProfile
import pstats
from typing import Any

from timing import median_seconds

from adws import (
    AgentResponse,
    Budget,
    OutputContract,
    Step,
    Usage,
    Workflow,
    WorkflowContext,
    agent_step,
    run_workflow,
)
from adws.check import check_workflow
from adws.testing import FunctionAgent

STEPS = 1_000
REPEATS = 5
ROUNDS = 4


def _answering(i: int, *, usage: bool) -> FunctionAgent:
    reported = Usage(0.0001, 10, 2, 1) if usage else None
    text = f"STATUS: done\nNOTE_{i}: ok\n"
    return FunctionAgent(lambda _request: AgentResponse(text, {}, reported))


def _agent_steps(*, usage: bool, budget: Budget | None) -> Workflow:
    steps = tuple(
        agent_step(
            f"s{i}",
            prompt="p",
            agent=_answering(i, usage=usage),
            contract=OutputContract((f"NOTE_{i}",)),
        )
        for i in range(STEPS)
    )
    return Workflow("agents", steps, budget=budget)


def _per_step_us(workflow: Workflow) -> float:
    return median_seconds(lambda: run_workflow(workflow, WorkflowContext()), REPEATS) / STEPS * 1e6


def _check_ms() -> float:
    agent = FunctionAgent(lambda _request: "never asked")

    def pair(i: int) -> tuple[Step, Step]:
        python = Step(f"p{i}", print, reads=(f"k{i}",), writes=(f"k{i + 1}",))  # type: ignore[arg-type] # never run
        asks = agent_step(
            f"a{i}", prompt=f"{{k{i + 1}}}", agent=agent, contract=OutputContract((f"K{i + 2}",))
        )
        return python, asks

    steps = tuple(step for i in range(0, STEPS, 2) for step in pair(i))
    workflow = Workflow("big", steps, inputs=("k0",))
    return median_seconds(lambda: check_workflow(workflow), REPEATS) * 1e3


def measure() -> dict[str, Any]:
    """Time 1,000 agent steps bare, metered, and under a budget; and `adws check` of 1,000 steps."""
    workflows = {
        "bare_us": _agent_steps(usage=False, budget=None),
        "metered_us": _agent_steps(usage=True, budget=None),
        "budgeted_us": _agent_steps(usage=True, budget=Budget(max_cost_usd=1e6)),
    }
    # Interleaved rounds, the best median of each kept: the three differ by a few µs on a
    # machine whose noise is tens of µs, so each gets the same chances of a quiet moment.
    rounds: dict[str, list[float]] = {name: [] for name in workflows}
    for _ in range(ROUNDS):
        for name, workflow in workflows.items():
            rounds[name].append(_per_step_us(workflow))
    calls = {name.replace("_us", "_calls"): _calls_per_step(w) for name, w in workflows.items()}
    best = {name: min(times) for name, times in rounds.items()}
    return {**best, **calls, "check_ms": _check_ms()}


def _calls_per_step(workflow: Workflow) -> float:
    """Count the Python calls a step makes: deterministic, where wall time here is not."""
    profile = cProfile.Profile()
    profile.runcall(run_workflow, workflow, WorkflowContext())
    total: int = pstats.Stats(profile).total_calls  # type: ignore[attr-defined] # set by Stats.__init__, unannotated
    return total / STEPS


def render(k: dict[str, Any]) -> list[str]:
    """Table rows, each figure beside its target."""
    calls = f"{k['bare_calls']:.0f} / {k['metered_calls']:.0f} / {k['budgeted_calls']:.0f}"
    return [
        f"| agent step, in-process agent: bare / usage reported / under a budget | {k['bare_us']:.0f} / {k['metered_us']:.0f} / {k['budgeted_us']:.0f} µs | usage + budget ≤ 10 µs a step |",
        f"| the same, Python calls per step (deterministic) | {calls} | |",
        f"| `adws check` of a 1,000-step workflow | {k['check_ms']:.1f} ms | ≤ 100 ms |",
    ]
