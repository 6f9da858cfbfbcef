"""A parked run through the command line: status, runs, report, resume (--now, --due), batch.

The agent here is a workflow's own function that answers as a usage limit
would (`AgentUnavailable` with `resets_at`) while `limit.json` exists; the
real CLIs are in `tests/agents/test_parking.py`. The wall clock is faked
where adws reads it (`io_ops.wall_clock`).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Final

import pytest

from adws import io_ops
from adws.cli import main
from adws.journal import Journal
from tests.conftest import start_adws, wait_for

LIMITED: Final = """
import json
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import OutputContract, PipelineError, Workflow, agent_step, shell_step
from adws.agents import AgentResponse

STATE = Path("limit.json")


def agent(request):
    with open("calls.log", "a") as handle:
        handle.write(request.step_name + "\\n")
    if STATE.exists():
        limit = json.loads(STATE.read_text())
        context = {"resets_at": limit["resets_at"], "limit": "fake usage limit"}
        context["usage"] = {"cost_usd": 0.25}
        message = "fake: API error 429 (usage limit): try again later"
        return IOFailure(PipelineError("", "AgentUnavailable", message, context))
    return IOSuccess(AgentResponse("STATUS: done\\nSUMMARY: ok"))


workflow = Workflow(
    "limited",
    (
        agent_step("ask", prompt="go {n}", agent=agent, contract=OutputContract(("SUMMARY",))),
        shell_step("after", "sleep {pause}"),
    ),
    inputs=("n", "pause"),
)
"""

NOW: Final = 1_800_000_000.0


@pytest.fixture
def project(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "limited.py").write_text(LIMITED)
    monkeypatch.setattr(io_ops, "wall_clock", lambda: NOW)
    monkeypatch.delenv("ADWS_MAX_WAIT", raising=False)
    return in_tmp


def limit(project: Path, resets_at: float | None) -> None:
    state = project / "limit.json"
    if resets_at is None:
        state.unlink()
    else:
        state.write_text(json.dumps({"resets_at": resets_at}))


def parked_run(project: Path, capsys: pytest.CaptureFixture[str], n: int = 1) -> str:
    limit(project, NOW + 3600)
    assert main(["run", "limited", "-i", f"n={n}", "-i", "pause=0", "--json"]) == 75
    summary = json.loads(capsys.readouterr().out)
    assert (summary["status"], summary["wake_at"]) == ("parked", NOW + 3600)
    run_id: str = summary["run_id"]
    return run_id


def clock(moment: float) -> str:
    return time.strftime("%H:%M", time.localtime(moment))


def test_status_runs_and_the_report_show_until_when_and_why(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = parked_run(project, capsys)
    assert main(["status", run_id]) == 0
    shown = capsys.readouterr().out
    assert f"run {run_id} · limited · parked\n" in shown
    assert "  1. ask: parked (1 attempt, " in shown
    assert (
        f"\nparked until {clock(NOW + 3600)}: fake usage limit\n"
        "  at ask: fake: API error 429 (usage limit): try again later\n"
        f"  adws resume {run_id} goes on then (--now: before); adws resume --due resumes every "
        "parked run whose time has come\n"
    ) in shown
    assert main(["runs"]) == 0
    assert f"parked until {clock(NOW + 3600)}" in capsys.readouterr().out
    assert main(["runs", "--status", "parked", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["wake_at"], listed["parked_reason"]) == (NOW + 3600, "fake usage limit")
    assert main(["report", run_id, "-o", "page.html"]) == 0
    page = (project / "page.html").read_text()
    assert f"<h2>parked until {clock(NOW + 3600)}: fake usage limit</h2>" in page
    assert '<span class="badge parked">parked</span>' in page


def test_a_reset_seconds_away_is_said_in_seconds_wherever_the_parked_time_is_written(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`parked until 06:17` for a reset 20 s away read as the next quarter hour."""
    monkeypatch.setenv("ADWS_MAX_WAIT", "5")  # 20 s is past it: the run parks
    limit(project, NOW + 20)
    said = f"parked for 20 s, until {time.strftime('%H:%M:%S', time.localtime(NOW + 20))}"
    assert main(["run", "limited", "-i", "n=1", "-i", "pause=0"]) == 75
    progress = capsys.readouterr().err
    assert f"[1/2] ask … {said}: fake usage limit\n" in progress
    run_id = progress.split("(run ")[-1].split(")")[0]
    assert f"limited {said}: fake usage limit at ask (run {run_id})" in progress
    assert main(["status", run_id]) == 0
    assert f"\n{said}: fake usage limit\n" in capsys.readouterr().out
    assert main(["runs"]) == 0
    assert f" {said} " in capsys.readouterr().out
    assert main(["report", run_id, "-o", "page.html"]) == 0
    assert f"<h2>{said}: fake usage limit</h2>" in (project / "page.html").read_text()
    assert main(["resume", run_id]) == 75
    assert f"adws: run {run_id} is {said}: fake usage limit; " in capsys.readouterr().err


def test_resume_before_the_time_exits_75_and_now_goes_on(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = parked_run(project, capsys)
    assert main(["resume", run_id]) == 75
    assert capsys.readouterr().err == (
        f"adws: run {run_id} is parked until {clock(NOW + 3600)}: fake usage limit; adws resume "
        f"{run_id} --now goes on before (the agent may refuse again), adws resume --due once "
        "the time has come\n"
    )
    assert main(["resume", run_id, "--plan"]) == 0
    assert "a resume starts at ask" in capsys.readouterr().out
    limit(project, None)
    assert main(["resume", run_id, "--now", "-q"]) == 0
    assert (project / "calls.log").read_text() == "ask\nask\n"
    [record] = Journal(project / ".adws" / "runs.db").runs()
    assert (record.status, record.wake_at, record.parked_reason) == ("succeeded", None, None)
    assert record.usage is not None
    assert record.usage.cost_usd == 0.25  # the refused call's cost, counted once


def test_due_resumes_the_runs_whose_time_has_come_oldest_first(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = parked_run(project, capsys, 1)
    later = parked_run(project, capsys, 2)
    journal = Journal(project / ".adws" / "runs.db")
    journal.write("UPDATE runs SET wake_at = ? WHERE run_id = ?", (NOW + 7200, later))
    monkeypatch.setattr(io_ops, "wall_clock", lambda: NOW + 3600)
    limit(project, None)
    assert main(["resume", "--due", "-q"]) == 0
    assert capsys.readouterr().out == f"{first} limited: succeeded (exit 0)\n"
    assert main(["resume", "--due"]) == 0
    assert capsys.readouterr().out == "no run of this host is due in .adws/runs.db\n"
    # Its time comes, but the limit holds: it parks again (75), the worst of one.
    monkeypatch.setattr(io_ops, "wall_clock", lambda: NOW + 7200)
    limit(project, NOW + 9000)
    assert main(["resume", "--due", "-q"]) == 75
    assert capsys.readouterr().out == (
        f"{later} limited: parked until {clock(NOW + 9000)}: fake usage limit (exit 75)\n"
    )


def test_due_says_which_run_it_could_not_resume_and_goes_on(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = parked_run(project, capsys, 1)
    kept = parked_run(project, capsys, 2)
    journal = Journal(project / ".adws" / "runs.db")
    journal.write("UPDATE runs SET workflow = 'deleted' WHERE run_id = ?", (gone,))
    monkeypatch.setattr(io_ops, "wall_clock", lambda: NOW + 3600)
    limit(project, None)
    assert main(["resume", "--due", "-q"]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{gone} deleted: not resumed: ")
    assert out[1] == f"{kept} limited: succeeded (exit 0)"


@pytest.mark.parametrize(
    ("argv", "leave_out"),
    [
        (["resume", "--due", "abc"], "a run id"),
        (["resume", "--due", "--plan"], "--plan"),
        (["resume", "--due", "--from", "ask"], "--from"),
        (["resume", "--due", "-i", "n=2"], "-i and --inputs"),
    ],
)
def test_due_takes_no_run_plan_or_inputs(
    argv: list[str], leave_out: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"adws: error: --due resumes every run of this host that is due; leave out {leave_out}\n"
    )


def test_due_without_a_journal_says_where_it_looked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["resume", "--due", "--journal", str(project / "none.db")]) == 2
    assert f"no run journal at {project / 'none.db'}" in capsys.readouterr().err
    assert not (project / "none.db").exists()


def test_resume_names_a_run_or_is_due(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resume"]) == 2
    assert "name the run to resume (adws runs lists them), or pass --due" in (
        capsys.readouterr().err
    )


def test_max_wait_from_the_environment_is_recorded_and_a_bad_one_refused(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADWS_MAX_WAIT", "soon")
    assert main(["run", "limited", "-i", "n=1", "-i", "pause=0"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: ADWS_MAX_WAIT='soon': expected a number of seconds from 0 to 2,592,000,"
        " got 'soon'\n"
    )
    monkeypatch.setenv("ADWS_MAX_WAIT", "60")
    run_id = parked_run(project, capsys)
    assert main(["runs", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["run_id"], listed["options"]["max_wait"]) == (run_id, 60.0)
    assert main(["run", "limited", "--max-wait", "-1"]) == 2
    assert "expected a number of seconds from 0 to 2,592,000, got '-1'" in capsys.readouterr().err


def test_pruning_keeps_a_parked_run(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = parked_run(project, capsys)
    assert main(["runs", "--prune", "--keep", "0"]) == 0
    assert "deleted 0 runs" in capsys.readouterr().err
    assert main(["status", run_id]) == 0


def test_a_batch_counts_parked_runs_with_blocked_ones_and_exits_75(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    limit(project, time.time() + 3600)  # the workers read the real clock
    (project / "inputs.jsonl").write_text('{"n": 1, "pause": 0}\n{"n": 2, "pause": 0}\n')
    assert main(["batch", "limited", "inputs.jsonl", "--concurrency", "1", "--json"]) == 75
    report = json.loads(capsys.readouterr().out)
    assert (report["status"], report["counts"]) == ("parked", {"parked": 2})
    assert main(["batch", "limited", "inputs.jsonl", "--concurrency", "1"]) == 75
    printed = capsys.readouterr()
    assert "0 failed, 2 blocked" in printed.err
    lines = [line for line in printed.out.splitlines() if line.startswith("  line ")]
    assert len(lines) == 2
    assert all(": fake usage limit" in line and "parked until" in line for line in lines)


def test_batch_resume_continues_only_the_parked_runs_that_are_due(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    limit(project, NOW + 3600)
    (project / "inputs.jsonl").write_text('{"n": 1, "pause": 0}\n{"n": 2, "pause": 0}\n')
    assert main(["batch", "limited", "inputs.jsonl", "--concurrency", "1", "--json"]) == 75
    batch_id = json.loads(capsys.readouterr().out)["batch_id"]
    journal = Journal(project / ".adws" / "runs.db")
    first, second = (run.run_id for run in journal.runs(batch=batch_id))
    journal.write("UPDATE runs SET wake_at = ? WHERE run_id = ?", (NOW - 1, first))
    limit(project, None)
    assert main(["batch", "--resume", batch_id, "--json"]) == 75
    said = capsys.readouterr().err
    assert f"resuming batch {batch_id}: 1 run\n" in said
    assert (
        "left parked, not due yet: 1 run(s) (the first due "
        f"{time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime(NOW + 3600))}); adws worker, or "
        "adws batch --resume then, continues them\n"
    ) in said
    assert [journal.find(run_id).status for run_id in (first, second)] == [  # type: ignore[union-attr] # found
        "succeeded",
        "parked",
    ]
    assert (project / "calls.log").read_text().splitlines() == ["ask", "ask", "ask"]


@pytest.mark.slow
def test_a_ctrl_c_during_due_stops_the_round_and_leaves_the_rest_parked(in_tmp: Path) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "limited.py").write_text(LIMITED)
    env = {"ADWS_MAX_WAIT": "1"}
    resets = 0.0
    for n in (1, 2):
        # Each run's reset is well past its --max-wait even when a loaded machine is slow to
        # start it: a reset that came closer than that would be waited for, not parked on.
        resets = time.time() + 6
        (in_tmp / "limit.json").write_text(json.dumps({"resets_at": resets}))
        ran = start_adws(in_tmp, "run", "limited", "-i", f"n={n}", "-i", "pause=30", env=env)
        printed = ran.communicate(timeout=60)
        assert ran.returncode == 75, printed
    time.sleep(max(0.0, resets - time.time()) + 0.2)
    (in_tmp / "limit.json").unlink()
    due = start_adws(in_tmp, "resume", "--due", env=env)
    try:
        wait_for(lambda: (in_tmp / "calls.log").read_text().count("ask") == 3, 60)
        time.sleep(0.5)  # into the sleep of step `after`
        due.send_signal(signal.SIGINT)
        out, _ = due.communicate(timeout=30)
    finally:
        if due.poll() is None:
            due.kill()
            due.communicate()
    assert due.returncode == 130
    assert out.endswith(
        " limited: interrupted: after: Interrupted: interrupted by Ctrl-C (exit 130)\n"
    )
    statuses = sorted(run.status for run in Journal(in_tmp / "runs.db").runs())
    assert statuses == ["interrupted", "parked"]
