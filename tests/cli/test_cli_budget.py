"""Budgets as users meet them: a run that asks for more, approve --max-cost, reject, plans.

Every command runs in its own `python -m adws` process (each with another
hash seed); history is crafted as journal rows with sqlite3.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from tests.conftest import start_adws

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

FLOWS = """
import time

from returns.io import IOSuccess

from adws import Budget, Step, Workflow, agent_step, fan_out
from adws.agents import AgentResponse
from adws.contract.validator import OutputContract
from adws.engine.usage import Usage


def respond(request):
    time.sleep(0.05)  # the branches' calls overlap
    return IOSuccess(AgentResponse("STATUS: done\\nANSWER: yes\\n", {}, Usage(1.0, 100, 0, 1, "m")))


def cleanup(ctx):
    with open("cleanup.log", "a") as log:
        log.write(("ok" if ctx.failure is None else ctx.failure.error_type) + "\\n")
    return IOSuccess(ctx)


def steps():
    one = agent_step("implement", prompt="{item}", agent=respond, contract=OutputContract(("ANSWER",)))
    return (
        fan_out("each", one, over="items"),
        Step("cleanup", cleanup, always_run=True, reads=(), writes=()),
    )


spend = Workflow("spend", steps(), inputs=("items",), budget=Budget(3.0, on_exceeded="ask"))
plain = Workflow("plain", steps(), inputs=("items",))
"""

QUESTION = "spent $3.00 of $3.00; step implement needs about $1.00"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    (tmp_path / "in.json").write_text(json.dumps({"items": list("abcdefgh")}))
    return tmp_path


def adws(project: Path, *argv: str, seed: int = 0) -> tuple[int, str, str]:
    process = start_adws(
        project, *argv, "--workflows", "workflows", env={"PYTHONHASHSEED": str(seed)}
    )
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def only_run(project: Path) -> str:
    db = sqlite3.connect(project / "runs.db")
    try:
        (run_id,) = [row[0] for row in db.execute("SELECT run_id FROM runs")]
    finally:
        db.close()
    return str(run_id)


def rows(project: Path, sql: str) -> list[tuple[object, ...]]:
    db = sqlite3.connect(project / "runs.db")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def spent_by_agents(project: Path, run_id: str) -> float:
    db = sqlite3.connect(project / "runs.db")
    try:
        sql = "SELECT SUM(cost_usd) FROM exchanges WHERE run_id = ?"
        (total,) = db.execute(sql, (run_id,)).fetchone()
    finally:
        db.close()
    assert isinstance(total, float)
    return total


def test_a_run_over_budget_asks_and_approve_raises_the_budget_in_another_process(
    project: Path,
) -> None:
    code, _, err = adws(project, "run", "spend", "--inputs", "in.json", seed=1)
    run_id = only_run(project)
    assert code == 3, err
    assert err.splitlines()[-1] == (
        f"spend waiting for a larger budget at {_step(project)} (run {run_id}); spent $3.0000, "
        f"300 tokens (budget $3.0000): {QUESTION}; adws approve {run_id} --max-cost USD "
        f"(or --max-tokens N) raises it, or adws reject {run_id} --reason TEXT"
    )
    assert rows(project, "SELECT status FROM runs") == [("waiting",)]
    assert spent_by_agents(project, run_id) == 3.0
    code, out, _ = adws(project, "approvals", seed=2)
    assert out.splitlines()[1:] == [
        f"  {QUESTION}",
        f"  (adws approve {run_id} --max-cost USD | adws reject {run_id} --reason ...)",
    ]
    code, _, err = adws(project, "approve", run_id, seed=3)
    assert (code, err) == (
        2,
        (
            f"adws: error: run {run_id} waits at step {_step(project)} for a larger budget "
            f"({QUESTION}): adws approve {run_id} --max-cost USD (or --max-tokens N) raises it, "
            f"adws reject {run_id} --reason TEXT ends the run\n"
        ),
    )
    code, _, err = adws(project, "approve", run_id, "--max-cost", "10", "--by", "ann", seed=4)
    assert code == 0, err
    assert err.splitlines()[-1].endswith(
        "spent $8.0000, 800 tokens (budget $10.0000); kept 0 steps and 3 branches, "
        "$3.00 not spent again"
    )
    assert rows(project, "SELECT verdict, decided_by, budget FROM approvals") == [
        ("approved", "ann", '{"max_cost_usd": 10.0, "max_tokens": null}')
    ]
    (options,) = rows(project, "SELECT options FROM runs")[0]
    assert json.loads(str(options))["max_cost"] == 10.0
    assert json.loads(str(options))["raised"] is True
    assert spent_by_agents(project, run_id) == 8.0
    code, out, _ = adws(project, "status", run_id, seed=5)
    assert out.splitlines()[-1] == (
        f"  {_step(project)}: asked {_asked(project)} · approved by ann at {_decided(project)}; "
        "budget raised to $10.0000"
    )
    assert (project / "cleanup.log").read_text() == "ok\n"


def _step(project: Path) -> str:
    (step,) = rows(project, "SELECT step FROM approvals")[0]
    assert str(step).startswith("each[")
    return str(step)


def _asked(project: Path) -> str:
    return str(rows(project, "SELECT asked FROM approvals")[0][0])


def _decided(project: Path) -> str:
    return str(rows(project, "SELECT decided FROM approvals")[0][0])


def test_reject_ends_a_run_that_asked_for_more_without_another_call(project: Path) -> None:
    code, _, _ = adws(project, "run", "spend", "--inputs", "in.json", "-q", seed=1)
    run_id = only_run(project)
    assert code == 3
    code, _, err = adws(project, "reject", run_id, "--reason", "too dear", "--by", "bob", seed=2)
    assert code == 1, err
    assert err.splitlines()[-1].startswith("spend failed in ")
    assert ": Rejected: rejected by bob: too dear (the budget was not raised)" in err
    assert rows(project, "SELECT status FROM runs") == [("failed",)]
    assert spent_by_agents(project, run_id) == 3.0
    assert (project / "cleanup.log").read_text() == "Rejected\n"


def test_on_budget_ask_is_a_recorded_run_option(project: Path) -> None:
    code, _, err = adws(
        project, "run", "plain", "--inputs", "in.json", "--max-cost", "3", "--on-budget", "ask"
    )
    run_id = only_run(project)
    assert code == 3, err
    (options,) = rows(project, "SELECT options FROM runs")[0]
    assert json.loads(str(options))["on_budget"] == "ask"
    code, _, err = adws(project, "approve", run_id, "--max-cost", "5", "-q", seed=2)
    # $3 spent; the next calls reserve $1 each: two more fit in $5, then it asks again.
    assert (code, rows(project, "SELECT status FROM runs")) == (3, [("waiting",)]), err
    assert spent_by_agents(project, run_id) == 5.0


def _history(project: Path, workflow: str, calls: list[float], steps: list[float]) -> None:
    """Record past runs: agent calls of `implement` and succeeded attempts of `each`."""
    Journal(project / "runs.db").close()
    db = sqlite3.connect(project / "runs.db")
    with db:
        for n, cost in enumerate(steps):
            run_id = f"old{n}"
            db.execute(
                "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
                " VALUES (?, ?, 'f', 'succeeded', '[]', '', '2026-01-01T00:00:00+00:00')",
                (run_id, workflow),
            )
            db.execute(
                "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded,"
                " seconds, cost_usd) VALUES (?, 'each', 0, 1, 'succeeded', '', 1.0, ?)",
                (run_id, cost),
            )
            db.execute(
                "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded,"
                " seconds) VALUES (?, 'cleanup', 1, 1, 'succeeded', '', 0.0)",
                (run_id,),
            )
        for cost in calls:
            db.execute(
                "INSERT INTO exchanges (run_id, step, attempt, asked_by, recorded, started,"
                " seconds, prompt, prompt_size, cost_usd, input_tokens) VALUES"
                " ('old0', 'each[0]', 1, 'implement', '', 0, 1, 'h', 1, ?, 100)",
                (cost,),
            )
    db.close()


def test_an_estimate_from_history_is_the_90th_percentile_of_the_steps_calls(
    project: Path,
) -> None:
    """Ten recorded calls, $0.10 to $1.00: the estimate is $0.90, so three calls fit in $3."""
    _history(project, "spend", [n / 10 for n in range(1, 11)], [1.0])
    code, _, err = adws(project, "run", "spend", "--inputs", "in.json", seed=1)
    assert code == 3, err
    (run_id,) = [
        r[0] for r in rows(project, "SELECT run_id FROM runs WHERE run_id NOT LIKE 'old%'")
    ]
    (message,) = rows(project, "SELECT message FROM approvals")[0]
    assert message == "spent $3.00 of $3.00; step implement needs about $0.90"
    assert spent_by_agents(project, str(run_id)) == 3.0


def test_run_plan_estimates_a_whole_run_from_history_and_runs_nothing(project: Path) -> None:
    """`each` cost $1, $2 and $4 in three runs; cleanup nothing: about $2, up to $4."""
    _history(project, "spend", [], [1.0, 2.0, 4.0])
    code, out, err = adws(project, "run", "spend", "--inputs", "in.json", "--plan", seed=1)
    assert (code, out, err) == (
        0,
        "to run spend (2 steps): about $2.00, up to $4.00 (from 3 runs)\n",
        "",
    )
    assert len(rows(project, "SELECT run_id FROM runs")) == 3
    code, out, _ = adws(project, "run", "plain", "--inputs", "in.json", "--plan", seed=2)
    assert (code, out) == (0, "to run plain (2 steps): no estimate: no history\n")


def test_run_plan_without_a_journal_has_no_history(project: Path) -> None:
    code, out, _ = adws(project, "run", "spend", "--inputs", "in.json", "--plan")
    assert (code, out) == (0, "to run spend (2 steps): no estimate: no history\n")
    assert not (project / "runs.db").exists()


def test_resume_plan_says_what_is_kept_and_what_finishing_costs(project: Path) -> None:
    _history(project, "spend", [], [1.0, 2.0, 4.0])
    code, _, _ = adws(project, "run", "spend", "--inputs", "in.json", "-q", seed=1)
    assert code == 3
    (run_id,) = [
        r[0] for r in rows(project, "SELECT run_id FROM runs WHERE run_id NOT LIKE 'old%'")
    ]
    code, out, _ = adws(project, "resume", str(run_id), "--plan", seed=2)
    assert out.splitlines()[1:] == [
        "  1. each: to run",
        "  2. cleanup: to run",
        "a resume starts at each",
        "kept 0 steps and 3 branches, $3.00 not spent again",
        "to finish: about $2.00, up to $4.00 (from 3 runs)",
        "options: none",
    ]


def test_a_budget_raised_from_another_host_is_recorded_for_the_runs_own_host(
    project: Path,
) -> None:
    """Approve --max-cost on a run of another host: decision and budget recorded, nothing runs."""
    code, _, err = adws(project, "run", "spend", "--inputs", "in.json", seed=1)
    assert code == 3, err
    run_id = only_run(project)
    db = sqlite3.connect(project / "runs.db")
    db.execute("UPDATE runs SET host = 'build-7'")
    db.commit()
    db.close()
    code, _, err = adws(project, "approve", run_id, "--max-cost", "10", "--by", "ann", seed=2)
    continues = f"run {run_id} continues on host build-7: adws worker there, or adws resume"
    assert (code, err) == (0, f"{continues} {run_id} on build-7\n")
    assert rows(project, "SELECT verdict, decided_by, budget FROM approvals") == [
        ("approved", "ann", '{"max_cost_usd": 10.0, "max_tokens": null}')
    ]
    (options,) = rows(project, "SELECT options FROM runs")[0]
    assert (json.loads(str(options))["max_cost"], json.loads(str(options))["raised"]) == (
        10.0,
        True,
    )
    assert rows(project, "SELECT status FROM runs") == [("waiting",)]
    assert spent_by_agents(project, run_id) == 3.0
