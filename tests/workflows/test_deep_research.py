"""deep_research, end to end: the demo agent and ScriptedAgent variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import PipelineError, Workflow, WorkflowContext, run_workflow
from adws.agent_steps import use_agent
from adws.agents import ScriptedAgent
from adws.cli import main
from tests.workflows.conftest import SHIPPED

RESEARCH = (
    'STATUS: done\nRESEARCH_PACKET_JSON: {"question": "q", "claims": '
    '[{"claim": "ROP chains results", "source": "https://rop.test"}]}'
)
VERIFY_OK = (
    'STATUS: done\nVERIFIED_PACKET_JSON: {"verdict": "pass", "claims": '
    '[{"text": "ROP chains results", "source": "https://rop.test", "supported": true}]}'
)
VERIFY_NO_SOURCE = (
    'STATUS: done\nVERIFIED_PACKET_JSON: {"verdict": "pass", "claims": '
    '[{"text": "ROP chains results", "supported": true}]}'
)
VERIFY_FAIL = (
    'STATUS: done\nVERIFIED_PACKET_JSON: {"verdict": "fail", "claims": '
    '[{"text": "ROP chains results", "source": "https://rop.test", "supported": false}]}'
)
WRITE = "STATUS: done\nFINAL_REPORT:\n# ROP\n\n- ROP chains results (https://rop.test)"


def run(
    shipped: dict[str, Workflow], agent: ScriptedAgent, tmp_path: Path
) -> IOResult[WorkflowContext, PipelineError]:
    flow = use_agent(shipped["deep_research"], agent)
    inputs = {"topic": "railway programming", "output_dir": str(tmp_path)}
    return run_workflow(flow, WorkflowContext(inputs=inputs))


def report(tmp_path: Path) -> str:
    return (tmp_path / "deep_research-railway-programming-48a9b264.md").read_text()


def test_success_each_step_sees_what_the_previous_one_proved(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    agent = ScriptedAgent([RESEARCH, VERIFY_OK, WRITE])
    result = run(shipped, agent, tmp_path)
    assert isinstance(result, IOSuccess)
    research_prompt, verify_prompt, write_prompt = agent.prompts
    assert "Research this topic: railway programming" in research_prompt
    assert '"claim": "ROP chains results"' in verify_prompt
    assert '"supported": true' in write_prompt
    assert "Write a short markdown report on: railway programming" in write_prompt
    final = unsafe_perform_io(result.unwrap())
    assert final.inputs["verified_claims"] == 1
    assert final.inputs["report_path"] == str(
        tmp_path / "deep_research-railway-programming-48a9b264.md"
    )
    assert report(tmp_path) == "# ROP\n\n- ROP chains results (https://rop.test)\n"


def test_a_contract_violation_is_fixed_by_the_retry(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    agent = ScriptedAgent([RESEARCH, VERIFY_NO_SOURCE, VERIFY_OK, WRITE])
    assert isinstance(run(shipped, agent, tmp_path), IOSuccess)
    assert [r.step_name for r in agent.requests] == ["research", "verify", "verify", "write"]
    assert (
        "attempt 1/3 failed: ContractViolation: VERIFIED_PACKET_JSON does not match "
        "VerifiedPacket: required field missing @ $.claims[0].source"
    ) in agent.prompts[2]


def test_a_blocked_verifier_ends_the_run_blocked_and_the_writer_never_runs(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    agent = ScriptedAgent([RESEARCH, "STATUS: blocked\nREASON: the source is paywalled"])
    result = run(shipped, agent, tmp_path)
    assert isinstance(result, IOFailure)
    error = unsafe_perform_io(result.failure())
    assert (error.step_name, error.error_type, error.message) == (
        "verify",
        "Blocked",
        "the source is paywalled",
    )
    assert [r.step_name for r in agent.requests] == ["research", "verify"]
    assert report(tmp_path) == (
        "# railway programming\n\nThe run did not finish: **Blocked** at `verify`.\n\n"
        "the source is paywalled\n"
    )


def test_exhausted_retries_never_let_the_writer_run(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    agent = ScriptedAgent([RESEARCH, VERIFY_NO_SOURCE, VERIFY_NO_SOURCE, VERIFY_NO_SOURCE])
    error = unsafe_perform_io(run(shipped, agent, tmp_path).failure())
    assert (error.step_name, error.error_type, error.context["attempts"]) == (
        "verify",
        "ContractViolation",
        3,
    )
    assert len(error.context["feedback"]) == 2
    assert "write" not in [r.step_name for r in agent.requests]


def test_a_failing_verdict_stops_the_run_before_the_writer(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    agent = ScriptedAgent([RESEARCH, VERIFY_FAIL])
    error = unsafe_perform_io(run(shipped, agent, tmp_path).failure())
    assert (error.step_name, error.error_type, error.message) == (
        "check_verdict",
        "Unverified",
        "verifier verdict is 'fail': ROP chains results",
    )
    assert len(agent.requests) == 2


def test_the_demo_agent_shows_the_rejected_then_fixed_verifier_answer(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "run",
        "deep_research",
        "--workflows",
        str(SHIPPED),
        "-i",
        "topic=railway programming",
        "--json",
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["status"] == "succeeded"
    assert [(s["name"], s["status"], s["attempts"]) for s in summary["steps"]] == [
        ("research", "succeeded", 1),
        ("verify", "succeeded", 2),
        ("check_verdict", "succeeded", 1),
        ("write", "succeeded", 1),
        ("save_report", "succeeded", 1),
    ]
    assert (
        "[2/5] verify … attempt 1/3 failed: ContractViolation: VERIFIED_PACKET_JSON does not match "
        "VerifiedPacket: required field missing @ $.claims[0].source; retrying"
    ) in captured.err
    assert "report_path: reports/deep_research-railway-programming-48a9b264.md" in captured.err
    written = (in_tmp / "reports" / "deep_research-railway-programming-48a9b264.md").read_text()
    assert written.startswith("# railway programming\n\nVerified findings:\n")
    assert "([source](https://fsharpforfunandprofit.com/rop/))" in written


def test_a_command_agent_that_blocks_exits_3(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = "sh -c 'cat >/dev/null; echo STATUS: blocked; echo REASON: no network here'"
    argv = [
        "run",
        "deep_research",
        "--workflows",
        str(SHIPPED),
        "-i",
        "topic=x",
        "--agent",
        agent,
        "--json",
    ]
    assert main(argv) == 3
    summary = json.loads(capsys.readouterr().out)
    assert (summary["status"], summary["error"]["message"]) == ("blocked", "no network here")
    assert [s["status"] for s in summary["steps"]] == [
        "failed",
        "skipped",
        "skipped",
        "skipped",
        "succeeded",
    ]
