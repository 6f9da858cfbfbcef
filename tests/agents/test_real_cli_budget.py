"""The claude CLI and the Agent SDK cap a call with no estimate at the room left in the budget.

Checked against the real CLIs (pinned) and the fake model API: the CLI
checks `--max-budget-usd` after each model reply, so a call stops after the
reply that passed it, and its cost is charged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adws import Budget, OutputContract, RetryPolicy, Workflow, agent_step, run_workflow
from adws.testing import FakeModelAPI, Reply
from tests.agents.clis import backend, git_repo, needs, on_path
from tests.conftest import FakeSleep, failure

pytestmark = [pytest.mark.agent_process, pytest.mark.agent_cli]


@pytest.fixture(autouse=True)
def clis_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", on_path())


@pytest.mark.parametrize(
    "kind", [pytest.param(k, marks=needs(k)) for k in ("claude", "claude-sdk")]
)
def test_a_call_with_no_estimate_stops_after_the_reply_that_passes_the_room_left(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path
) -> None:
    work = git_repo(tmp_path / "work")
    (work / "notes.txt").write_text("notes\n")
    read = Reply.tool("Read", {"file_path": str(work / "notes.txt")}, input_tokens=20_000)
    fake_model_api.script(read, read, Reply.text("STATUS: done\nSUMMARY: ok"))
    ask = agent_step(
        "ask",
        prompt="Read the notes twice.",
        agent=backend(kind, fake_model_api, tmp_path / "home"),
        contract=OutputContract(("SUMMARY",)),
        retry=RetryPolicy(max_attempts=3),
        cwd=str(work),
    )
    error = failure(run_workflow(Workflow("w", (ask,)), budget=Budget(0.01), sleep=FakeSleep()))
    # The CLI made one model call ($0.0801 at its list price), then stopped
    # (`error_max_budget_usd`); the retry, now estimated at that cost, never starts.
    assert (error.error_type, len(fake_model_api.requests)) == ("BudgetExceeded", 1)
    assert error.message == (
        "the run has spent $0.0801 of its $0.0100 budget (max_cost_usd); the agent was not called"
    )
