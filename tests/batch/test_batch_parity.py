"""`adws batch` takes what `adws run` takes: agent, model, budgets, `--max-agents`; and more."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from adws.cli import main
from adws.cli.batch import DEFAULT_CONCURRENCY
from tests.batch.test_batch_safety import FLOWS, calls, finish, lines
from tests.conftest import start_adws, wait_for

pytestmark = pytest.mark.slow

AGENT = """
import json, os, sys, time
from pathlib import Path
prompt = sys.stdin.read()
Path("agent.log").open("a").write(prompt.splitlines()[0] + "\\n")
while Path("hold").exists() and not Path("go").exists():
    time.sleep(0.05)
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                  "result": "STATUS: done", "total_cost_usd": 0.01,
                  "usage": {"input_tokens": 10, "output_tokens": 2}}))
"""

ASKING = """
import time
from pathlib import Path

from returns.io import IOSuccess

from adws import CommandAgent, RetryPolicy, Step, Workflow, agent_step

DEFAULT = CommandAgent(["false"])
asking = Workflow(
    "asking",
    tuple(
        agent_step(f"s{i}", prompt="{n} s%d" % i, agent=DEFAULT, retry=RetryPolicy())
        for i in range(1, 4)
    ),
    inputs=("n",),
)


def pause(ctx):
    while not Path("go").exists():
        time.sleep(0.05)
    return IOSuccess(ctx)


paced = Workflow(
    "paced",
    (
        agent_step("s1", prompt="{n} s1", agent=DEFAULT, retry=RetryPolicy()),
        Step("pause", pause),
        agent_step("s3", prompt="{n} s3", agent=DEFAULT, retry=RetryPolicy()),
    ),
    inputs=("n",),
)
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "safety.py").write_text(FLOWS, encoding="utf-8")
    (in_tmp / "workflows" / "asking.py").write_text(ASKING, encoding="utf-8")
    (in_tmp / "agent.py").write_text(AGENT, encoding="utf-8")
    return in_tmp


def agent_argv() -> list[str]:
    return ["--agent", f"{sys.executable} agent.py", "--agent-output", "claude-json"]


def test_batch_runs_with_the_agent_and_limits_given_and_records_them(project: Path) -> None:
    lines(project, "a", "b")
    batch = start_adws(
        project,
        "batch",
        "asking",
        "inputs.jsonl",
        *agent_argv(),
        "--max-cost",
        "0.015",
        "--max-tokens",
        "1000",
        "--max-agents",
        "1",
        "-q",
        "--json",
    )
    out, err = finish(batch)
    assert batch.returncode == 1, err
    report = json.loads(out)
    for run in report["runs"]:
        # $0.01 spent and s2 estimated at $0.01 would pass $0.015: s2 never starts.
        assert run["error"]["error_type"] == "BudgetExceeded"
        assert run["error"]["step_name"] == "s2"
    listing = start_adws(project, "runs", "--batch", report["batch_id"], "--json")
    out, _ = finish(listing)
    (first, _) = json.loads(out)
    assert first["options"] == {
        "agent": f"{sys.executable} agent.py",
        "agent_output": "claude-json",
        "max_agents": 1,
        "max_cost": 0.015,
        "max_tokens": 1000,
        "workflows": str(project / "workflows"),
    }
    # `adws resume RUN` of a batch run uses them: the agent, and the budget (raised here).
    resume = start_adws(project, "resume", first["run_id"], "--max-cost", "1")
    _, err = finish(resume)
    assert resume.returncode == 0, err
    assert err.splitlines()[0] == (
        f"resuming run {first['run_id']} with agent: '{sys.executable} agent.py', "
        "agent_output: 'claude-json', max_cost: 1.0 (recorded: 0.015), max_tokens: 1000, "
        "max_agents: 1"
    )


def test_agent_options_no_worker_could_use_are_exit_2_before_anything_runs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a")
    assert main(["batch", "asking", "inputs.jsonl", "--model", "opus"]) == 2
    assert capsys.readouterr().err.startswith("adws: error: --model needs --agent")
    assert not (project / ".adws").exists()


@pytest.mark.parametrize("where", [[], ["--dask", "local:1"]], ids=["local", "dask"])
def test_batch_max_cost_starts_no_new_run_past_it_and_stops_those_in_flight(
    project: Path, where: list[str]
) -> None:
    lines(project, "a", "b", "c")
    batch = start_adws(
        project,
        "batch",
        "paced",
        "inputs.jsonl",
        *agent_argv(),
        "--batch-max-cost",
        "0.015",
        "--concurrency",
        "2",
        "-q",
        "--json",
        *where,
    )
    # Two runs in flight: their first calls spend $0.02, past the cap; both then pause.
    wait_for(lambda: spent(project) >= 0.02, 60)
    time.sleep(0.5)
    (project / "go").touch()
    out, err = finish(batch)
    assert batch.returncode == 1, err
    report = json.loads(out)
    assert report["over_budget"] == 0.015
    assert [run["status"] for run in report["runs"]] == ["failed", "failed", "queued"]
    for run in report["runs"][:2]:
        assert run["error"]["step_name"] == "s3"
        assert run["error"]["message"] == (
            "the batch has spent its $0.0150 budget (--batch-max-cost); the agent was not called"
        )
    assert spent(project) == 0.02
    assert len(agent_log(project)) == 2
    # The cap is recorded: a resume keeps it (and starts nothing more), unless raised.
    resumed = start_adws(project, "batch", "--resume", report["batch_id"], "-q")
    out, _ = finish(resumed)
    assert resumed.returncode == 1
    assert "the batch spent its $0.0150 budget (--batch-max-cost)" in out
    assert out.rstrip().endswith(f"adws batch --resume {report['batch_id']} --batch-max-cost USD")
    assert len(agent_log(project)) == 2
    raised = start_adws(
        project, "batch", "--resume", report["batch_id"], "--batch-max-cost", "1", "-q"
    )
    _, err = finish(raised)
    assert raised.returncode == 0, err


def spent(project: Path) -> float:
    try:
        db = sqlite3.connect(project / "runs.db")
        total = db.execute("SELECT SUM(cost_usd) FROM attempts").fetchone()[0]
        db.close()
    except sqlite3.Error:
        return 0.0
    return round(total or 0.0, 9)


def agent_log(project: Path) -> list[str]:
    path = project / "agent.log"
    return path.read_text().splitlines() if path.exists() else []


def test_the_default_concurrency_is_eight_runs_whatever_the_cpu_count(project: Path) -> None:
    assert DEFAULT_CONCURRENCY == 8
    lines(project, *"abcdefghij")
    batch = start_adws(project, "batch", "gated", "inputs.jsonl", "-q")
    wait_for(lambda: len(list(project.glob("waiting-*"))) == 8)
    time.sleep(0.5)
    assert len(list(project.glob("waiting-*"))) == 8
    (project / "fixed").touch()
    (project / "go").touch()
    _, err = finish(batch)
    assert batch.returncode == 0, err
    assert len(calls(project)) == 20


def test_runs_of_a_batch_are_filtered_by_status_and_workflow(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a")
    assert main(["batch", "holding", "inputs.jsonl", "-q"]) == 1
    batch_id = capsys.readouterr().out.split()[1]
    path = project / ".adws" / "runs.db"
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started,"
        " batch_id, line) SELECT 'q1', workflow, fingerprint, 'queued', steps, '', started,"
        " batch_id, 2 FROM runs"
    )
    db.commit()
    db.close()
    for argv, expected in [
        (["--status", "failed"], ["failed"]),
        (["--status", "queued"], ["queued"]),
        (["--workflow", "other"], []),
        ([], ["failed", "queued"]),
    ]:
        assert main(["runs", "--batch", batch_id, "--json", *argv]) == 0
        assert [run["status"] for run in json.loads(capsys.readouterr().out)] == expected
    assert main(["runs", "--status", "queued", "--json"]) == 0
    assert [run["run_id"] for run in json.loads(capsys.readouterr().out)] == ["q1"]
