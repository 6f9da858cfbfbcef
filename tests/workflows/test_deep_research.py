"""deep_research, end to end: the demo agent and ScriptedAgent variants."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from returns.io import IOResult, IOSuccess

from adws import PipelineError, Workflow, WorkflowContext, run_workflow, testing
from adws.agents import AgentRequest, AgentResponse
from adws.agents.swap import use_agent
from adws.cli import main
from adws.journal import Journal, JournalObserver, resume_point, stored_branches
from adws.testing import ScriptedAgent
from tests.conftest import failure, success
from tests.workflows.conftest import SHIPPED

RESEARCH = (
    'STATUS: done\nRESEARCH_PACKET_JSON: {"question": "q", "claims": ['
    '{"claim": "ROP chains results", "source": "https://rop.test"}, '
    '{"claim": "Errors are values", "source": "https://err.test"}]}'
)
WRITE = "STATUS: done\nFINAL_REPORT:\n# ROP\n\n- ROP chains results (https://rop.test)"


def verified(text: str, source: str, *, supported: bool = True) -> str:
    claim = {"text": text, "source": source, "supported": supported}
    return f"STATUS: done\nVERIFIED_CLAIM_JSON: {json.dumps(claim)}"


GOOD = {
    "ROP chains results": verified("ROP chains results", "https://rop.test"),
    "Errors are values": verified("Errors are values", "https://err.test"),
}


class ByStep:
    """Answer by step, and for verifiers by the claim in the prompt: branches run in any order."""

    def __init__(self, verify: dict[str, list[str]], write: str = WRITE) -> None:
        self.verify = {claim: list(answers) for claim, answers in verify.items()}
        self.write = write
        self.requests: list[AgentRequest] = []
        self.lock = threading.Lock()

    def __call__(self, request: AgentRequest) -> IOResult[AgentResponse, PipelineError]:
        with self.lock:
            self.requests.append(request)
            if request.step_name == "research":
                return IOSuccess(AgentResponse(RESEARCH))
            if request.step_name == "write":
                return IOSuccess(AgentResponse(self.write))
            claim = next(c for c in self.verify if f'"claim": "{c}"' in request.prompt)
            answer = self.verify[claim].pop(0)
        if answer == "interrupt":
            raise KeyboardInterrupt
        return IOSuccess(AgentResponse(answer))

    def asked(self, step: str) -> list[str]:
        return [r.prompt for r in self.requests if r.step_name == step]


def run(
    shipped: dict[str, Workflow], agent: ByStep, tmp_path: Path, **options: object
) -> IOResult[WorkflowContext, PipelineError]:
    flow = use_agent(shipped["deep_research"], agent)
    inputs = {"topic": "railway programming", "output_dir": str(tmp_path)}
    return run_workflow(flow, WorkflowContext(inputs=inputs), **options)  # type: ignore[arg-type] # observers, run_id and reuse as given


def report(tmp_path: Path) -> str:
    return (tmp_path / "deep_research-railway-programming-48a9b264.md").read_text()


def test_success_each_claim_is_verified_in_its_own_branch(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    agent = ByStep({claim: [answer] for claim, answer in GOOD.items()})
    final = success(run(shipped, agent, tmp_path))
    verify_prompts = agent.asked("verify")
    assert len(verify_prompts) == 2
    assert all(prompt.count('"claim": ') == 1 for prompt in verify_prompts)
    [write_prompt] = agent.asked("write")
    assert '"text": "ROP chains results"' in write_prompt
    assert '"text": "Errors are values"' in write_prompt
    assert final.inputs["claims"] == (
        {"claim": "ROP chains results", "source": "https://rop.test"},
        {"claim": "Errors are values", "source": "https://err.test"},
    )
    assert [branch["verified_claim_json"].text for branch in final.inputs["verify_claims"]] == [
        "ROP chains results",
        "Errors are values",
    ]
    assert final.inputs["verify_claims_failures"] == ()
    assert final.inputs["verified_claims"] == 2
    assert report(tmp_path) == "# ROP\n\n- ROP chains results (https://rop.test)\n"


def test_a_contract_violation_in_one_branch_is_fixed_by_its_retry(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    no_source = (
        'STATUS: done\nVERIFIED_CLAIM_JSON: {"text": "ROP chains results", "supported": true}'
    )
    agent = ByStep(
        {
            "ROP chains results": [no_source, GOOD["ROP chains results"]],
            "Errors are values": [GOOD["Errors are values"]],
        }
    )
    success(run(shipped, agent, tmp_path))
    retried = [p for p in agent.asked("verify") if "Feedback from earlier attempts" in p]
    assert len(retried) == 1
    assert (
        "attempt 1/3 failed: ContractViolation: VERIFIED_CLAIM_JSON does not match "
        "VerifiedClaim: $.source: required field missing"
    ) in retried[0]


def test_one_claim_failing_is_dropped_under_min_successes(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    agent = ByStep(
        {
            "ROP chains results": [GOOD["ROP chains results"]],
            "Errors are values": ["STATUS: blocked\nREASON: the source is paywalled"],
        }
    )
    final = success(run(shipped, agent, tmp_path))
    assert final.inputs["verify_claims"][1] is None
    [dropped] = final.inputs["verify_claims_failures"]
    assert (dropped["step_name"], dropped["error_type"], dropped["message"]) == (
        "verify_claims[1]",
        "Blocked",
        "the source is paywalled",
    )
    assert final.inputs["verified_claims"] == 1
    [write_prompt] = agent.asked("write")
    assert "Errors are values" not in write_prompt


def test_a_blocked_verifier_for_every_claim_ends_the_run_blocked(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    blocked = "STATUS: blocked\nREASON: the source is paywalled"
    agent = ByStep({"ROP chains results": [blocked], "Errors are values": [blocked]})
    error = failure(run(shipped, agent, tmp_path))
    assert (error.step_name, error.error_type, error.message) == (
        "verify_claims[0]",
        "Blocked",
        "the source is paywalled",
    )
    assert agent.asked("write") == []
    assert report(tmp_path) == (
        "# railway programming\n\nThe run did not finish: **Blocked** at `verify_claims[0]`."
        "\n\nthe source is paywalled\n"
    )


def test_an_unsupported_claim_stops_the_run_before_the_writer(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    agent = ByStep(
        {
            "ROP chains results": [GOOD["ROP chains results"]],
            "Errors are values": [
                verified("Errors are values", "https://err.test", supported=False)
            ],
        }
    )
    error = failure(run(shipped, agent, tmp_path))
    assert (error.step_name, error.error_type, error.message) == (
        "check_verdict",
        "Unverified",
        "verifier verdict is 'fail': Errors are values",
    )
    assert agent.asked("write") == []


def test_a_resume_re_verifies_only_the_claim_that_was_not_verified(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "runs.db")
    first = ByStep(
        {"ROP chains results": [GOOD["ROP chains results"]], "Errors are values": ["interrupt"]}
    )
    error = failure(
        run(shipped, first, tmp_path, observers=[JournalObserver(journal, "f")], run_id="r")
    )
    assert error.error_type == "Interrupted"
    workflow = shipped["deep_research"]
    names = [step.name for step in workflow.steps]
    attempts = journal.attempts("r")
    found = journal.find("r")
    assert not isinstance(found, str)
    resume_from, ctx = resume_point(names, attempts, found.inputs())
    assert resume_from == "verify_claims"
    reuse = stored_branches(attempts, "verify_claims")
    assert list(reuse) == ["verify_claims[0]"]
    second = ByStep({"Errors are values": [GOOD["Errors are values"]]})
    flow = use_agent(workflow, second)
    final = success(run_workflow(flow, ctx, resume_from=resume_from, reuse=reuse))
    assert [r.step_name for r in second.requests] == ["verify", "write"]
    assert '"claim": "Errors are values"' in second.requests[0].prompt
    assert final.inputs["verified_claims"] == 2


@pytest.mark.agent_process  # the demo agent runs
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
        ("split_claims", "succeeded", 1),
        ("verify_claims", "succeeded", 1),
        ("assemble", "succeeded", 1),
        ("check_verdict", "succeeded", 1),
        ("write", "succeeded", 1),
        ("save_report", "succeeded", 1),
    ]
    assert summary["steps"][2]["branches"] == {
        "verify_claims[0]": "succeeded",
        "verify_claims[1]": "succeeded",
    }
    assert (
        "[3/7] verify_claims[0] … attempt 1/3 failed: ContractViolation: VERIFIED_CLAIM_JSON does "
        "not match VerifiedClaim: $.source: required field missing; retrying"
    ) in captured.err
    assert "[3/7] verify_claims[0] … ok in" in captured.err
    assert " (2 attempts) · 2/2 done, 0 failed\n" in captured.err
    assert "report_path: reports/deep_research-railway-programming-48a9b264.md" in captured.err
    written = (in_tmp / "reports" / "deep_research-railway-programming-48a9b264.md").read_text()
    assert written.startswith("# railway programming\n\nVerified findings:\n")
    assert "([source](https://fsharpforfunandprofit.com/rop/))" in written


@pytest.mark.agent_process  # the demo agent runs
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
        "skipped",
        "skipped",
        "succeeded",
    ]


def test_the_kit_routes_answers_by_branch_and_drops_the_blocked_claim(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    """docs/guides/testing.md's example: each verifier branch has its own answers."""
    agent = ScriptedAgent.by_step(
        {
            "research": [RESEARCH],
            "verify_claims[0]": [GOOD["ROP chains results"]],
            "verify_claims[1]": ["STATUS: blocked\nREASON: source is down"],
            "write": [WRITE],
        }
    )
    inputs = {"topic": "rop", "output_dir": str(tmp_path)}
    report = testing.run(shipped["deep_research"], inputs, agent=agent)
    assert (report.status, report["verify_claims"].status) == ("succeeded", "succeeded")
    assert [f["step_name"] for f in report.inputs["verify_claims_failures"]] == ["verify_claims[1]"]
    branches = sorted(r.branch for r in report["verify_claims"].requests)
    assert branches == ["verify_claims[0]", "verify_claims[1]"]


def test_the_kit_stops_after_split_claims_and_resumes_without_asking_research_again(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    journal = tmp_path / "runs.db"
    inputs = {"topic": "rop", "output_dir": str(tmp_path)}
    first = testing.run(
        shipped["deep_research"],
        inputs,
        agent=ScriptedAgent.by_step({"research": [RESEARCH]}),
        journal=journal,
        stop_after="split_claims",
    )
    assert (first.status, first.inputs["report_path"].endswith(".md")) == ("interrupted", True)
    rest = ScriptedAgent.by_step({"verify": list(GOOD.values()), "write": [WRITE]})
    second = testing.resume(shipped["deep_research"], first.run_id, journal=journal, agent=rest)
    assert second.status == "succeeded"
    assert (second["research"].status, second["research"].requests) == ("carried_over", ())
    assert sorted(r.step_name for r in rest.requests) == ["verify", "verify", "write"]


def test_the_report_escapes_the_terminal_controls_a_writer_put_in_it(
    shipped: dict[str, Workflow], tmp_path: Path
) -> None:
    hostile = WRITE + "\x1b]52;c;ZXZpbA==\x07\x1b[2J"
    agent = ByStep({claim: [answer] for claim, answer in GOOD.items()}, write=hostile)
    success(run(shipped, agent, tmp_path))
    assert report(tmp_path) == (
        "# ROP\n\n- ROP chains results (https://rop.test)\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\n"
    )
