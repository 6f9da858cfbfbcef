"""Spend through the command line: run --max-cost, runs, status, cost, resume, --agent-output."""

from __future__ import annotations

import json
import sqlite3
import sys
from typing import TYPE_CHECKING

import pytest

from adws import io_ops
from adws.cli import main
from adws.journal import MIGRATIONS
from adws.journal.store.sqlite import WORDS

if TYPE_CHECKING:
    from pathlib import Path

PRICED = """
from adws import Workflow
from adws.agents.step import agent_step
from adws.agents import AgentResponse, ScriptedAgent
from adws.contract.validator import OutputContract
from adws.engine.usage import Usage


def priced(cost):
    def respond(request):
        text = f"STATUS: done\\n{request.step_name.upper()}: yes\\n"
        if request.step_name == "draft" and request.attempt == 1:
            text = "no status"  # rejected: the retry costs too
        return AgentResponse(text, {}, Usage(cost, 100, 10, 1, "m"))
    return respond


def ask(name, cost):
    agent = ScriptedAgent([priced(cost)] * 3)
    return agent_step(name, prompt=name, agent=agent, contract=OutputContract((name.upper(),)))


workflow = Workflow("priced", (ask("plan", 0.1), ask("draft", 0.05), ask("review", 0.1)))
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "priced.py").write_text(PRICED)
    return in_tmp


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    code = main([*argv, "--json", "-q"])
    return code, json.loads(capsys.readouterr().out)


def test_a_run_reports_its_spend_per_step_and_in_total(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, summary = run_json(["run", "priced"], capsys)
    assert code == 0
    assert summary["usage"] == {
        "cost_usd": 0.3,
        "input_tokens": 400,
        "output_tokens": 40,
        "turns": 4,
        "model": "m",
    }
    steps = summary["steps"]
    assert isinstance(steps, list)
    assert [step["usage"]["cost_usd"] for step in steps] == [0.1, 0.1, 0.1]
    run_id = str(summary["run_id"])

    assert main(["runs"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[5] == "$0.3000"
    assert main(["status", run_id]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "  1. plan: succeeded (1 attempt, 0.0s, $0.1000, 110 tokens)",
        "  2. draft: succeeded (2 attempts, 0.0s, $0.1000, 220 tokens)",
        "       attempt 1: ContractViolation: STATUS missing",
        "  3. review: succeeded (1 attempt, 0.0s, $0.1000, 110 tokens)",
        "spent: $0.3000, 440 tokens",
    ]
    assert main(["status", run_id, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [a["usage"]["cost_usd"] for a in status["attempts"]] == [0.1, 0.05, 0.05, 0.1]
    assert status["usage"]["cost_usd"] == 0.3


def test_adws_cost_sums_the_journal_by_step_workflow_and_day(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_json(["run", "priced"], capsys)
    run_json(["run", "priced"], capsys)
    assert main(["cost"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "WORKFLOW  STEP    RUNS  ATTEMPTS  COST     INPUT TOKENS  OUTPUT TOKENS",
        "priced    draft   2     4         $0.2000  400           40",
        "priced    plan    2     2         $0.2000  200           20",
        "priced    review  2     2         $0.2000  200           20",
        "TOTAL                   8         $0.6000  800           80",
    ]
    assert main(["cost", "--by", "workflow"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "priced    2     8         $0.6000  800           80",
        "TOTAL     2     8         $0.6000  800           80",
    ]
    today = io_ops.utc_now()[:10]
    assert main(["cost", "--by", "day", "--json", "--since", today]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {
            "day": today,
            "runs": 2,
            "attempts": 8,
            "cost_usd": 0.6,
            "input_tokens": 800,
            "output_tokens": 80,
            "turns": 8,
            "model": None,
        }
    ]


@pytest.mark.parametrize("argv", [["--since", "2999-01-01"], ["--workflow", "other"]])
def test_adws_cost_with_nothing_to_sum_says_so(
    project: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    run_json(["run", "priced"], capsys)
    assert main(["cost", *argv]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        "no agent usage recorded in .adws/runs.db\n",
    )


def test_a_budget_from_the_command_line_stops_the_run_and_says_what_was_spent(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "priced", "--max-cost", "0.2"]) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("priced failed in ")
    # $0.15 spent, draft's retry estimated at the largest call ($0.10): it never starts.
    assert last.endswith(
        " at draft: BudgetExceeded: the run has spent $0.1500, 220 tokens of its $0.2000 budget"
        " and a call of step 'draft' is estimated at $0.1000, 110 tokens; the agent was not"
        f" called (run {last.split('(run ')[1].split(')')[0]});"
        " spent $0.1500, 220 tokens (budget $0.2000)"
    )


def test_a_resume_counts_what_the_run_spent_before(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first = run_json(["run", "priced", "--max-tokens", "300"], capsys)
    assert (code, first["error"]["error_type"]) == (1, "BudgetExceeded")  # type: ignore[index] # a dict
    run_id = str(first["run_id"])
    code, again = run_json(["resume", run_id, "--max-tokens", "300"], capsys)
    assert (code, again["usage"]["input_tokens"]) == (1, 300)  # type: ignore[index] # a dict
    # The recorded --max-tokens 300 still holds unless the resume gives another.
    code, done = run_json(["resume", run_id, "--max-cost", "1", "--max-tokens", "1000"], capsys)
    # plan $0.10, review $0.10 and draft four times $0.05: each session began it again.
    assert (code, done["usage"]["cost_usd"]) == (0, 0.4)  # type: ignore[index] # a dict
    assert done["options"] == {
        "max_cost": 1.0,
        "max_tokens": 1000,
        "workflows": str((project / "workflows").resolve()),
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        *(
            (
                ["--max-cost", amount],
                f"argument --max-cost: expected an amount in US dollars from 0 to 1,000,000,000, got '{amount}'",
            )
            for amount in ("free", "nan", "1e10")
        ),
        *(
            (
                ["--max-tokens", count],
                f"argument --max-tokens: expected a whole number of tokens from 0 to 1,000,000,000,000, got '{count}'",
            )
            for count in ("9" * 40, "-1")
        ),
    ],
)
def test_impossible_limits_are_usage_errors(
    project: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "priced", *argv]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"adws run: error: {message}"


def test_a_bad_since_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_json(["run", "priced"], capsys)
    assert main(["cost", "--since", "last week"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: --since: expected a date such as 2026-11-01, got 'last week'\n"
    )


FAKE_CLAUDE_JSON = """
import json, sys
sys.stdin.read()
print(json.dumps({"type": "result", "is_error": False, "result": "STATUS: done\\nASKED: yes",
                  "total_cost_usd": 0.07, "num_turns": 1}))
"""

ASKING = """
from adws import Workflow
from adws.agents.step import agent_step
from adws.agents import ScriptedAgent
from adws.contract.validator import OutputContract

workflow = Workflow("asking", (agent_step("asked", prompt="p", agent=ScriptedAgent([]), contract=OutputContract(("ASKED",))),))
"""


@pytest.mark.agent_process  # a real command answers
def test_agent_output_reads_a_command_of_your_own_as_claude_json(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "workflows" / "asking.py").write_text(ASKING)
    (project / "fake.py").write_text(FAKE_CLAUDE_JSON)
    agent = f"{sys.executable} fake.py"
    code, summary = run_json(
        ["run", "asking", "--agent", agent, "--agent-output", "claude-json"], capsys
    )
    assert (code, summary["usage"]["cost_usd"]) == (0, 0.07)  # type: ignore[index] # a dict


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--agent-output", "claude-json"],
            "--agent-output needs --agent (claude-sdk, a preset such as claude, or a command)",
        ),
        (
            ["--agent", "claude", "--agent-output", "text"],
            "--agent-output is for a command of your own; --agent claude reads its own format",
        ),
    ],
)
def test_agent_output_without_a_command_of_your_own_is_a_usage_error(
    project: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "priced", *argv]) == 2
    assert capsys.readouterr().err == f"adws: error: {message}\n"


def test_a_journal_from_before_usage_is_read_without_costs(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A schema-4 journal opened read-only (never migrated) lists runs and has no spend."""
    path = in_tmp / "old.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for number, statements in enumerate(MIGRATIONS[:4], 1):
        for statement in statements:
            db.execute(statement.format_map(WORDS))
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))
    db.execute(
        "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
        " VALUES ('r1', 'w', 'f', 'succeeded', '[\"s\"]', '', '2026-01-01T00:00:00+00:00')"
    )
    db.commit()
    db.close()
    path.chmod(0o444)
    assert main(["runs", "--journal", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["usage"] is None
    assert main(["cost", "--journal", str(path)]) == 0
    assert capsys.readouterr().err == f"no agent usage recorded in {path}\n"


@pytest.mark.agent_process
def test_usage_a_journal_cannot_hold_is_refused_at_the_agent(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "huge.py").write_text(
        "import json\n"
        "print(json.dumps({'type': 'result', 'is_error': False, 'result': 'STATUS: done',"
        f" 'usage': {{'input_tokens': {2**62}}}}}))\n"
    )
    agent = f"{sys.executable} huge.py"
    code, summary = run_json(
        ["run", "priced", "--agent", agent, "--agent-output", "claude-json"], capsys
    )
    error = summary["error"]
    assert isinstance(error, dict)
    assert (code, error["error_type"]) == (1, "AgentFailed")
    assert f"input_tokens must be at most 1,000,000,000,000, got {2**62}" in error["message"]


def corrupt(project: Path, run_id: str) -> None:
    """Write usage no adws would: two attempts of 2**62 tokens and $1e308 each."""
    db = sqlite3.connect(project / ".adws" / "runs.db")
    with db:
        db.execute(
            "UPDATE attempts SET input_tokens = ?, cost_usd = 1e308 WHERE run_id = ?"
            " AND step IN ('plan', 'draft')",
            (2**62, run_id),
        )
    db.close()


def test_a_journal_holding_overflowing_usage_is_read_and_stays_over_budget(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first = run_json(["run", "priced", "--max-tokens", "300"], capsys)
    run_id = str(first["run_id"])
    corrupt(project, run_id)
    for argv in (
        ["runs", "--json"],
        ["status", run_id, "--json"],
        ["cost", "--by", "workflow", "--json"],
    ):
        assert main(argv) == 0
        text = capsys.readouterr().out
        assert "Infinity" not in text
        json.loads(text)
    assert main(["runs"]) == 0
    assert "over $1,000,000,000" in capsys.readouterr().out
    assert main(["resume", run_id, "--plan"]) == 0
    capsys.readouterr()
    code, resumed = run_json(
        ["resume", run_id, "--max-cost", "0.5", "--max-tokens", "1000"], capsys
    )
    error = resumed["error"]
    assert isinstance(error, dict)
    assert (code, error["error_type"]) == (1, "BudgetExceeded")
    assert error["message"].startswith("the run has spent $1000000000.0000 of its $0.5000 budget")
