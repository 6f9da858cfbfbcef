"""FunctionAgent and SchemaAgent, through agent steps and a shipped workflow."""

from __future__ import annotations

from pathlib import Path

import pytest

from adws import OutputContract, RetryPolicy, Workflow, agent_step, run_workflow
from adws.agents import AgentRequest, AgentResponse
from adws.discovery import discover_workflows
from adws.engine.usage import Usage
from adws.testing import FunctionAgent, SchemaAgent, run
from tests.conftest import failure, success
from tests.workflows.conftest import SHIPPED


def test_a_function_agent_answers_from_the_feedback_it_was_given() -> None:
    """The first answer is rejected; the second attempt sees the feedback and fixes it."""

    def answer(request: AgentRequest) -> str:
        if "Feedback from earlier attempts" not in request.prompt:
            return "no report"
        return "STATUS: done\nSUMMARY: fixed"

    agent = FunctionAgent(answer)
    step = agent_step("s", prompt="p", agent=agent, contract=OutputContract(("SUMMARY",)))
    done = success(run_workflow(Workflow("w", (step,))))
    assert done.inputs["summary"] == "fixed"
    assert [request.attempt for request in agent.requests] == [1, 2]


def test_a_function_agent_may_report_usage() -> None:
    agent = FunctionAgent(lambda _request: AgentResponse("STATUS: done", {}, Usage(0.5)))
    report = run(Workflow("w", (agent_step("s", prompt="p", agent=agent),)))
    assert report.usage == Usage(0.5)


def test_a_function_agent_needs_a_function() -> None:
    with pytest.raises(TypeError, match="FunctionAgent: fn must be callable, got 'STATUS: done'"):
        FunctionAgent("STATUS: done")  # type: ignore[arg-type] # the mistake under test


def test_a_schema_agent_runs_deep_research_end_to_end_without_written_answers(
    tmp_path: Path,
) -> None:
    """Every contract's example is a valid answer: the wiring of the workflow is proven."""
    workflow = discover_workflows(SHIPPED).workflows["deep_research"]
    agent = SchemaAgent({"FINAL_REPORT": "# A report"})
    report = run(workflow, {"topic": "t", "output_dir": str(tmp_path)}, agent=agent)
    assert report.status == "succeeded"
    assert report.inputs["final_report"] == "# A report"
    assert report.inputs["verified_claims"] == 1
    assert [r.step_name for r in agent.requests] == ["research", "verify", "write"]
    assert Path(report.inputs["report_path"]).read_text() == "# A report\n"


def test_a_schema_agent_without_a_contract_says_where_it_answers() -> None:
    error = failure(SchemaAgent()(AgentRequest("p", "s")))
    assert error.message == (
        "SchemaAgent needs the contract of step 's'; it answers requests agent_step makes,"
        " which carry it"
    )


def test_a_schema_agent_writes_json_for_overrides_that_are_not_text() -> None:
    contract = OutputContract(("COUNT", "PLAN_JSON"))
    step = agent_step(
        "s", prompt="p", agent=SchemaAgent({"COUNT": 3}), contract=contract, retry=RetryPolicy()
    )
    done = success(run_workflow(Workflow("w", (step,))))
    assert (done.inputs["count"], done.inputs["plan_json"]) == ("3", {})
