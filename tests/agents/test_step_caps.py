"""An agent call passes the run's caps gate: reserved before, settled after, parked or refused."""

from __future__ import annotations

import attrs
from returns.io import IOResult

from adws import ErrorType, PipelineError, Workflow, run_workflow
from adws.agents import AgentRequest, AgentResponse, ScriptedAgent
from adws.agents.step import agent_step
from adws.contract.validator import OutputContract
from adws.engine.caps import CapFull, CapSettle
from adws.engine.concurrency import fan_out
from adws.engine.context import WorkflowContext
from adws.engine.usage import Budget, Usage
from tests.conftest import failure, success


def answer(cost: float) -> AgentResponse:
    return AgentResponse("STATUS: done\n", {}, Usage(cost, 100, 0, 1, "m"))


def ask(name: str, agent: object) -> object:
    return agent_step(name, prompt=name, agent=agent, contract=OutputContract())  # type: ignore[arg-type] # the protocol, structurally


@attrs.define
class Gate:
    """A caps gate at the boundary: it answers from a script and keeps what it was told."""

    refusals: list[CapFull | None]
    asked: list[tuple[str, Usage | None]] = attrs.field(factory=list)
    settled: list[Usage | None] = attrs.field(factory=list)

    def __call__(self, step: str, estimate: Usage | None) -> CapSettle | CapFull:
        self.asked.append((step, estimate))
        refusal = self.refusals.pop(0) if self.refusals else None
        return self.settled.append if refusal is None else refusal


def test_each_call_is_reserved_with_its_estimate_and_settled_to_its_spend() -> None:
    gate = Gate([])
    agent = ScriptedAgent([lambda _request: answer(0.1), lambda _request: answer(0.2)])
    workflow = Workflow("w", (ask("one", agent), ask("two", agent)))
    success(run_workflow(workflow, caps=gate))
    assert gate.asked == [("one", None), ("two", Usage(0.1, 100))]
    assert gate.settled == [Usage(0.1, 100, 0, 1, "m"), Usage(0.2, 100, 0, 1, "m")]


def test_a_full_cap_parks_the_run_before_the_call_and_an_unreadable_one_refuses_it() -> None:
    calls: list[str] = []

    def respond(request: AgentRequest) -> AgentResponse:
        calls.append(request.step_name)
        return answer(0.1)

    parked = "parked until 00:00 UTC: cap day, $1.00 of $1.00"
    gate = Gate([CapFull(parked, 1800000000.0)])
    workflow = Workflow("w", (ask("one", ScriptedAgent([respond])),))
    error = failure(run_workflow(workflow, caps=gate))
    assert (error.error_type, error.message) == (ErrorType.PARKED, parked)
    assert (error.context["wake_at"], error.context["reason"]) == (1800000000.0, parked)
    refused = Gate([CapFull("cap day: its journal row is unreadable")])
    error = failure(run_workflow(workflow, caps=refused))
    assert (error.error_type, error.message) == (
        ErrorType.BUDGET_EXCEEDED,
        "cap day: its journal row is unreadable",
    )
    assert calls == []
    assert (gate.settled, refused.settled) == ([], [])


def test_a_branch_the_caps_park_gives_its_budget_reservation_back() -> None:
    gate = Gate([CapFull("cap day is full", 1800000000.0)])
    agent = ScriptedAgent([lambda _request: answer(0.1)] * 2)
    step = fan_out("each", ask("one", agent), over="items", max_concurrency=1)  # type: ignore[arg-type] # a step
    workflow = Workflow("w", (step,), inputs=("items",), budget=Budget(1.0))
    error = failure(run_workflow(workflow, WorkflowContext({"items": ["a", "b"]}), caps=gate))
    assert (error.error_type, error.message) == (
        ErrorType.PARKED,
        "cap day is full (1 of 2 branches parked: each[0])",
    )
    assert gate.settled == [Usage(0.1, 100, 0, 1, "m")]


def test_a_call_that_raises_releases_its_caps_reservation() -> None:
    gate = Gate([])

    def explode(_request: AgentRequest) -> IOResult[AgentResponse, PipelineError]:
        raise KeyboardInterrupt

    workflow = Workflow("w", (ask("one", explode),))
    error = failure(run_workflow(workflow, caps=gate))
    assert error.error_type == ErrorType.INTERRUPTED
    assert gate.settled == [None]
