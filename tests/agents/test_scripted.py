"""ScriptedAgent replays answers (in order, or routed by step and branch) and records requests."""

from __future__ import annotations

from returns.io import IOFailure, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import RetryPolicy, Workflow, WorkflowContext, agent_step, fan_out, run_workflow
from adws.agents import AgentRequest, AgentResponse, ScriptedAgent
from adws.contract.validator import OutputContract
from tests.conftest import failure, success


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
        "ScriptedAgent has no answer left for step 'write' at attempt 1 (it had 0)",
    )


def test_by_step_routes_answers_by_step_and_by_branch_path() -> None:
    """A branch's own queue wins over its step's shared one; every branch is answered."""
    agent = ScriptedAgent.by_step(
        {
            "research": ["STATUS: done\nTOPICS: a"],
            "each[1]": ["STATUS: done\nFACT: from the branch's own queue"],
            "fact": ["STATUS: done\nFACT: from the shared queue"],
        }
    )
    research = agent_step("research", prompt="r", agent=agent, contract=OutputContract(("TOPICS",)))
    each = fan_out(
        "each",
        agent_step("fact", prompt="{item}", agent=agent, contract=OutputContract(("FACT",))),
        over="items",
        max_concurrency=1,
    )
    workflow = Workflow("w", (research, each), inputs=("items",))
    done = success(run_workflow(workflow, WorkflowContext({"items": ["x", "y"]})))
    assert [branch["fact"] for branch in done.inputs["each"]] == [
        "from the shared queue",
        "from the branch's own queue",
    ]
    assert [(r.step_name, r.branch) for r in agent.requests] == [
        ("research", ""),
        ("fact", "each[0]"),
        ("fact", "each[1]"),
    ]
    assert agent.unused == {}


def test_by_step_names_the_step_and_attempt_that_ran_out() -> None:
    agent = ScriptedAgent.by_step({"write": ["no report here"]})
    step = agent_step("write", prompt="w", agent=agent, retry=RetryPolicy(max_attempts=2))
    error = failure(run_workflow(Workflow("w", (step,))))
    assert (
        error.message == "ScriptedAgent has no answer left for step 'write' at attempt 2 (it had 1)"
    )


def test_by_step_without_answers_for_a_step_lists_the_steps_it_has() -> None:
    agent = ScriptedAgent.by_step({"plan": [], "write": []})
    error = failure(agent(AgentRequest("p", "review", branch="reviews[2]")))
    assert error.message == (
        "ScriptedAgent has no answers for step 'review' (reviews[2]); it has answers for: plan, write"
    )
    assert agent.unused == {}
