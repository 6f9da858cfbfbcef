"""run and resume: a test stops a run after a step and proves no finished step runs twice."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from returns.io import IOSuccess

from adws import OutputContract, Step, Workflow, WorkflowContext, agent_step
from adws.journal import Journal
from adws.testing import ScriptedAgent, resume, run
from adws.testing.runs import StepReport

if TYPE_CHECKING:
    from pathlib import Path

    from returns.io import IOResult

    from adws import PipelineError

CLEANED: list[str] = []


def cleanup(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    CLEANED.append("cleanup")
    return IOSuccess(ctx)


def three_steps(agent: ScriptedAgent) -> Workflow:
    def ask(name: str) -> Step:
        return agent_step(
            name, prompt=f"{name} {{topic}}", agent=agent, contract=OutputContract((name.upper(),))
        )

    return Workflow(
        "three",
        (ask("plan"), ask("draft"), ask("review"), Step("cleanup", cleanup, always_run=True)),
        inputs=("topic",),
    )


def answers() -> dict[str, list[str]]:
    return {
        name: [f"STATUS: done\n{name.upper()}: {name} done"] for name in ("plan", "draft", "review")
    }


def test_a_report_says_per_step_what_happened_and_what_the_agent_saw() -> None:
    report = run(
        three_steps(ScriptedAgent([])), {"topic": "t"}, agent=ScriptedAgent.by_step(answers())
    )
    assert report.status == "succeeded"
    assert report.inputs["review"] == "review done"
    assert [(s.name, s.status, s.attempts) for s in report.steps.values()] == [
        ("plan", "succeeded", 1),
        ("draft", "succeeded", 1),
        ("review", "succeeded", 1),
        ("cleanup", "succeeded", 1),
    ]
    assert report["draft"].requests[0].prompt.startswith("draft t\n")
    assert report["cleanup"] == StepReport("cleanup", "succeeded", 1, None, (), None)


def test_a_run_stopped_after_a_step_resumes_without_running_a_finished_step_twice(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "runs.db"
    CLEANED.clear()
    first_agent = ScriptedAgent.by_step({k: v for k, v in answers().items() if k != "review"})
    first = run(
        three_steps(ScriptedAgent([])),
        {"topic": "t"},
        agent=first_agent,
        journal=journal,
        stop_after="draft",
    )
    assert (first.status, first["review"].status, first.error.error_type) == (  # type: ignore[union-attr] # an error, checked by the status
        "interrupted",
        "failed",
        "Interrupted",
    )
    assert CLEANED == ["cleanup"]  # cleanup ran, as on a Ctrl-C
    second_agent = ScriptedAgent.by_step({"review": answers()["review"]})
    second = resume(
        three_steps(ScriptedAgent([])), first.run_id, journal=journal, agent=second_agent
    )
    assert second.status == "succeeded"
    assert [(s.name, s.status) for s in second.steps.values()] == [
        ("plan", "carried_over"),
        ("draft", "carried_over"),
        ("review", "succeeded"),
        ("cleanup", "succeeded"),
    ]
    assert [r.step_name for r in second_agent.requests] == ["review"]  # plan and draft: not again
    assert second.inputs["plan"] == "plan done"
    with pytest.raises(LookupError, match="already succeeded; nothing to resume"):
        resume(three_steps(ScriptedAgent([])), first.run_id, journal=Journal(journal))


def test_resuming_a_run_the_journal_does_not_know_is_a_lookup_error(tmp_path: Path) -> None:
    with pytest.raises(LookupError, match="no run 'nope'"):
        resume(three_steps(ScriptedAgent([])), "nope", journal=tmp_path / "runs.db")


@pytest.mark.parametrize("step", ["cleanup", "nope"])
def test_stop_after_must_name_a_step_with_one_after_it(step: str) -> None:
    with pytest.raises(ValueError, match=f"stop_after='{step}' must name a step of 'three'"):
        run(three_steps(ScriptedAgent([])), {"topic": "t"}, stop_after=step)


def test_without_an_agent_the_workflows_own_agents_answer() -> None:
    workflow = three_steps(ScriptedAgent.by_step(answers()))
    report = run(workflow, {"topic": "t"})
    assert (report.status, report["plan"].requests) == ("succeeded", ())
