"""A budget holds for calls made one at a time: spent + the call's estimate must fit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from returns.io import IOResult, IOSuccess

from adws import ErrorType, PipelineError, Workflow, run_workflow
from adws._exceptions import DefinitionError
from adws.agents import AgentRequest, AgentResponse, ScriptedAgent
from adws.agents.claude import ClaudeAgent
from adws.agents.command import CommandAgent
from adws.agents.presets import PRESETS
from adws.agents.step import agent_step
from adws.contract.validator import OutputContract
from adws.engine.usage import Budget, Usage
from tests.conftest import failure, success

if TYPE_CHECKING:
    from adws.engine.step import Step


def answer(name: str, cost: float) -> AgentResponse:
    return AgentResponse(f"STATUS: done\n{name.upper()}: yes\n", {}, Usage(cost, 100, 0, 1, "m"))


def scripted(cost: float) -> ScriptedAgent:
    return ScriptedAgent([lambda request: answer(request.step_name, cost)])


class SelfCapping:
    """A backend that caps its own spend: it keeps the requests it was sent."""

    caps_cost = True

    def __init__(self, cost: float) -> None:
        self.cost = cost
        self.requests: list[AgentRequest] = []

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        self.requests.append(request)
        return IOSuccess(answer(request.step_name, self.cost))


def step(name: str, agent: object) -> Step:
    contract = OutputContract((name.upper(),))
    return agent_step(name, prompt=f"{name}?", agent=agent, contract=contract)  # type: ignore[arg-type] # the protocol, structurally


def history(step_name: str) -> Usage | None:
    """The journal's estimate: nothing for `plan`, $0.026 for `implement` (the issue's figures)."""
    return Usage(0.026) if step_name == "implement" else None


def test_the_issues_sequential_run_at_two_cents_asks_instead_of_spending_past_it() -> None:
    """$0.016 spent, a call estimated at $0.026: the run asks and never passes $0.02."""
    plan, implement = scripted(0.016), scripted(0.026)
    workflow = Workflow("w", (step("plan", plan), step("implement", implement)))
    budget = Budget(0.02, on_exceeded="ask", unestimated="allow")
    error = failure(run_workflow(workflow, budget=budget, estimate=history))
    assert (error.error_type, error.message) == (
        ErrorType.AWAITING_APPROVAL,
        "spent $0.0160 of $0.02; step implement needs about $0.0260",
    )
    assert (len(plan.requests), implement.requests) == (1, ())


def test_a_call_estimated_past_a_failing_budget_fails_before_calling() -> None:
    plan, implement = scripted(0.016), scripted(0.026)
    workflow = Workflow("w", (step("plan", plan), step("implement", implement)))
    error = failure(run_workflow(workflow, budget=Budget(0.02), estimate=history))
    assert (error.error_type, error.step_name, error.message) == (
        ErrorType.BUDGET_EXCEEDED,
        "implement",
        (
            "the run has spent $0.0160, 100 tokens of its $0.0200 budget and a call of step"
            " 'implement' is estimated at $0.0260; the agent was not called"
        ),
    )
    assert implement.requests == ()


def test_a_call_with_no_estimate_under_a_budget_that_asks_asks_first() -> None:
    agent = scripted(0.01)
    workflow = Workflow("w", (step("plan", agent),), budget=Budget(0.02, on_exceeded="ask"))
    error = failure(run_workflow(workflow))
    assert (error.error_type, error.message) == (
        ErrorType.AWAITING_APPROVAL,
        "spent $0.00 of $0.02; step plan needs more to call its agent",
    )
    assert agent.requests == ()


def test_a_call_with_no_estimate_starts_once_a_person_raised_the_budget() -> None:
    agent = scripted(0.01)
    workflow = Workflow("w", (step("plan", agent),), budget=Budget(0.02, on_exceeded="ask"))
    success(run_workflow(workflow, raised=Budget(0.05)))
    assert len(agent.requests) == 1


def test_a_backend_that_caps_itself_is_sent_the_room_left_when_nothing_estimates_it() -> None:
    first, second = SelfCapping(0.005), SelfCapping(0.001)
    workflow = Workflow("w", (step("plan", first), step("review", second)))
    success(run_workflow(workflow, budget=Budget(0.02, on_exceeded="ask")))
    # The first call has no estimate: it gets the whole $0.02; the second is estimated.
    assert [r.max_cost_usd for r in (*first.requests, *second.requests)] == [0.02, None]


def test_a_backend_that_caps_itself_under_a_token_budget_alone_is_asked_about() -> None:
    agent = SelfCapping(0.01)
    workflow = Workflow("w", (step("plan", agent),))
    error = failure(run_workflow(workflow, budget=Budget(max_tokens=50, on_exceeded="ask")))
    assert (error.error_type, agent.requests) == (ErrorType.AWAITING_APPROVAL, [])


def test_the_claude_preset_passes_the_room_as_max_budget_usd() -> None:
    agent = PRESETS["claude"].agent()
    argv = agent.argv_for(AgentRequest("p", "s", max_cost_usd=0.0125))
    assert (agent.caps_cost, argv[-2:]) == (True, ("--max-budget-usd", "0.012500"))
    assert "--max-budget-usd" not in agent.argv_for(AgentRequest("p", "s"))


def test_a_command_without_a_budget_flag_does_not_cap_itself() -> None:
    agent = CommandAgent("cat")
    assert (agent.caps_cost, agent.argv_for(AgentRequest("p", "s", max_cost_usd=1.0))) == (
        False,
        ("cat",),
    )


def test_the_agent_sdk_is_given_max_budget_usd() -> None:
    agent = ClaudeAgent()
    options = agent.session_options(AgentRequest("p", "s", max_cost_usd=0.5))
    assert (ClaudeAgent.caps_cost, options["max_budget_usd"]) == (True, 0.5)
    assert "max_budget_usd" not in agent.session_options(AgentRequest("p", "s"))


def test_unestimated_takes_only_ask_or_allow() -> None:
    with pytest.raises(DefinitionError, match="unestimated must be 'ask' or 'allow', got 'yes'"):
        Budget(1.0, unestimated="yes")  # type: ignore[arg-type] # the bad value under test


def test_the_tighter_budget_allows_unestimated_calls_only_when_both_do() -> None:
    allow, ask = Budget(1.0, unestimated="allow"), Budget(2.0)
    assert allow.tighter(Budget(2.0, unestimated="allow")).unestimated == "allow"
    assert (allow.tighter(ask).unestimated, ask.tighter(allow).unestimated) == ("ask", "ask")
    assert allow.raised_to(Budget(3.0)) == Budget(3.0, unestimated="allow")
