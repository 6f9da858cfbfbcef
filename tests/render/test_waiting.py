"""A run waiting for approval is `waiting` everywhere: status, runs, the batch line, the report.

Each command runs in its own `python -m adws` process, as a person would
type them one after another.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import start_adws

pytestmark = pytest.mark.slow

WAITS = """
from returns.io import IOSuccess

from adws import Step, Workflow, approval_step


def plan(ctx):
    return IOSuccess(ctx.merge_outputs({"plan": "ship it"}))


def ship(ctx):
    return IOSuccess(ctx.merge_outputs({"shipped": True}))


workflow = Workflow(
    "asks",
    (
        Step("plan", plan, writes=("plan",)),
        approval_step("approve", message="Ship {plan}?"),
        Step("ship", ship, reads=("plan",), writes=("shipped",)),
    ),
)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "asks.py").write_text(WAITS)
    return tmp_path


def adws(project: Path, *argv: str) -> tuple[int, str, str]:
    process = start_adws(project, *argv)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def plain(text: str) -> str:
    """Hide what changes from run to run: times and durations."""
    text = re.sub(r"\d{4}-\d\d-\d\dT[\d:]+\+00:00", "TIME", text)
    return re.sub(r"\b\d+\.\ds\b", "Ns", text)


def waiting_run(project: Path) -> str:
    code, out, _ = adws(project, "run", "asks", "--workflows", "workflows", "--json", "-q")
    assert code == 3
    summary = json.loads(out)
    assert (summary["status"], [step["status"] for step in summary["steps"]]) == (
        "waiting",
        ["succeeded", "waiting", "not_run"],
    )
    return str(summary["run_id"])


def test_status_says_the_step_is_waiting_not_failed(project: Path) -> None:
    run_id = waiting_run(project)
    code, out, err = adws(project, "status", run_id)
    assert (code, err) == (0, "")
    assert plain(out).splitlines() == [
        f"run {run_id} · asks · waiting",
        "started TIME, finished TIME",
        "  1. plan: succeeded (1 attempt, Ns)",
        "  2. approve: waiting (1 attempt, Ns)",
        "       attempt 1: waiting for approval: Ship ship it?",
        "  3. ship: not run",
        "waiting for approval at approve: Ship ship it?",
        "approvals:",
        "  approve: asked TIME · waiting",
    ]


def test_runs_says_where_a_waiting_run_stopped_not_that_it_failed(project: Path) -> None:
    run_id = waiting_run(project)
    code, out, _ = adws(project, "runs")
    header, row = out.splitlines()
    assert code == 0
    assert header.split() == [
        "RUN",
        "WORKFLOW",
        "STATUS",
        "STARTED",
        "DURATION",
        "COST",
        "STOPPED",
        "AT",
    ]
    assert plain(row).split() == [run_id, "asks", "waiting", "TIME", "Ns", "-", "approve"]


def test_the_report_draws_the_waiting_step_as_waiting(project: Path) -> None:
    run_id = waiting_run(project)
    code, page, _ = adws(project, "report", run_id, "-o", "-")
    assert code == 0
    assert '<span class="badge waiting">waiting</span> <b>2. approve</b>' in page
    assert '<section class="step waiting" id="p1" data-path="approve"><details open>' in page
    assert "attempt 1 — waiting in" in page
    assert "<h2>waiting for approval</h2><pre>approve: Ship ship it?</pre>" in page
    assert "<title>2. approve: waiting</title>" in page  # the diagram's box
    assert "badge failed" not in page
    assert "step failed" not in page
    assert "AwaitingApproval" not in page


def test_a_batch_line_says_a_run_waits_for_approval(project: Path) -> None:
    (project / "lines.jsonl").write_text("{}\n")
    code, out, _ = adws(project, "batch", "asks", "lines.jsonl", "--workflows", "workflows", "-q")
    assert code == 3
    lines = out.splitlines()
    batch_id = lines[0].split()[1]
    run_id = lines[3].split()[3]
    assert lines == [
        f"batch {batch_id} · asks · blocked",
        "  waiting      1",
        "runs that did not succeed:",
        f"  line 1  run {run_id}  waiting for approval at approve: Ship ship it?",
        f"resume them with: adws batch --resume {batch_id}",
    ]
    code, page, _ = adws(project, "report", "--batch", batch_id, "-o", "-")
    assert code == 0
    assert "1 runs: 1 waiting" in page
    assert '<span class="badge waiting">waiting</span> <b>2. approve</b>' in page
    assert "badge failed" not in page
