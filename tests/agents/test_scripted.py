"""ScriptedAgent replays answers and records requests."""

from __future__ import annotations

from returns.io import IOFailure, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws.agents import AgentRequest, AgentResponse, ScriptedAgent


def test_answers_come_in_order_and_requests_are_recorded() -> None:
    agent = ScriptedAgent(
        ["one", lambda r: f"two for {r.step_name}", lambda _r: AgentResponse("three", {"cost": 1})]
    )
    answers = [agent(AgentRequest(f"p{i}", "s", attempt=i)) for i in (1, 2, 3)]
    assert [unsafe_perform_io(a.unwrap()) for a in answers] == [
        AgentResponse("one"),
        AgentResponse("two for s"),
        AgentResponse("three", {"cost": 1}),
    ]
    assert agent.prompts == ("p1", "p2", "p3")
    assert [r.attempt for r in agent.requests] == [1, 2, 3]
    assert all(isinstance(a, IOSuccess) for a in answers)


def test_running_out_is_agent_failed_naming_the_step() -> None:
    agent = ScriptedAgent([])
    result = agent(AgentRequest("p", "write"))
    assert isinstance(result, IOFailure)
    error = unsafe_perform_io(result.failure())
    assert (error.step_name, error.error_type, error.message) == (
        "write",
        "AgentFailed",
        "ScriptedAgent has no answer left for step 'write' (it had 0)",
    )
