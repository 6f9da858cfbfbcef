"""A batch as safe as a run: each finding of issue 22, tried with real processes on the local pool."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from adws import io_ops
from adws.agents.offline import OFFLINE
from adws.cli import main
from tests.batch.test_batch import batch_json, runs_of
from tests.conftest import start_adws, wait_for

pytestmark = pytest.mark.slow

FLOWS = """
import json
import multiprocessing
import os
import signal
import time
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import (
    AgentResponse,
    Budget,
    ErrorType,
    PipelineError,
    Step,
    Usage,
    Workflow,
    agent_step,
    shell_step,
)


def log(line):
    with open("calls.log", "a") as handle:
        handle.write(line + "\\n")


def priced(request):
    log(f"agent {request.step_name}")
    return IOSuccess(AgentResponse("STATUS: done", usage=Usage(cost_usd=0.6)))


def gate(ctx):
    log(f"gate {ctx.inputs['n']}")
    if not Path("fixed").exists():
        return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "not fixed yet"))
    return IOSuccess(ctx)


def die_once(ctx):
    log(f"die_once {ctx.inputs['n']}")
    if not Path("died").exists():
        Path("died").touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return IOSuccess(ctx)


def crash(ctx):
    log(f"crash {ctx.inputs['n']}")
    os._exit(3)


def cleanup(ctx):
    Path(f"cleaned-{ctx.inputs['n']}").write_text(str(ctx.failure))
    return IOSuccess(ctx)


def pooled(ctx):
    with multiprocessing.Pool(2) as pool:
        doubled = pool.map(abs, [-1, -2, -3])
    return IOSuccess(ctx.merge_outputs({"doubled": doubled}))


def held(ctx):
    log(f"held {ctx.inputs['n']}")
    if not Path("fixed").exists():
        return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "not fixed yet"))
    Path(f"waiting-{ctx.inputs['n']}").touch()
    while not Path("go").exists():
        time.sleep(0.05)
    return IOSuccess(ctx)


def wait_go(ctx):
    Path(f"waiting-{ctx.inputs['n']}").touch()
    while not Path("go").exists() and not Path(f"go-{ctx.inputs['n']}").exists():
        time.sleep(0.05)
    log(f"went {ctx.inputs['n']}")
    return IOSuccess(ctx)


ASK = {"agent": priced, "prompt": "{n}"}
budgeted = Workflow(
    "budgeted",
    (agent_step("s1", **ASK), Step("s2", gate), agent_step("s3", **ASK), agent_step("s4", **ASK)),
    inputs=("n",),
    budget=Budget(max_cost_usd=1.0),
)
lost_budget = Workflow(
    "lost_budget",
    (agent_step("s1", **ASK), Step("s2", die_once), agent_step("s3", **ASK), agent_step("s4", **ASK)),
    inputs=("n",),
    budget=Budget(max_cost_usd=1.0),
)
crashing = Workflow(
    "crashing",
    (Step("crash", crash), Step("cleanup", cleanup, always_run=True)),
    inputs=("n",),
)
holding = Workflow("holding", (Step("held", held),), inputs=("n",))
pooling = Workflow("pooling", (Step("pooled", pooled),), inputs=("n",))
gated = Workflow("gated", (Step("wait", wait_go), Step("gate", gate)), inputs=("n",))
sleeping = Workflow(
    "sleeping",
    (
        shell_step("work", "echo $$ > work-{n}.pid; [ -e go ] || exec sleep 60"),
        Step("cleanup", cleanup, always_run=True),
    ),
    inputs=("n",),
)
overlapping = Workflow(
    "overlapping",
    (
        shell_step(
            "work",
            "if [ -f child.pid ] && grep -q '^State:.[^Z]' /proc/$(cat child.pid)/status "
            "2>/dev/null; then touch overlap; fi; echo $$ > child.pid; [ -e died ] || exec sleep 60",
        ),
    ),
    inputs=("n",),
)
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "safety.py").write_text(FLOWS, encoding="utf-8")
    return in_tmp


def lines(project: Path, *values: str) -> Path:
    path = project / "inputs.jsonl"
    path.write_text("".join(json.dumps({"n": value}) + "\n" for value in values))
    return path


def calls(project: Path) -> list[str]:
    path = project / "calls.log"
    return sorted(path.read_text().splitlines()) if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    return "State:\tZ" not in status


def gone(*pids: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(pid) for pid in pids)


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()]


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    return int(stat.rsplit(")", 1)[1].split()[1])


def journal_rows(project: Path, sql: str) -> list[tuple[object, ...]]:
    db = sqlite3.connect(project / "runs.db")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def finish(process: subprocess.Popen[str], seconds: float = 90) -> tuple[str, str]:
    return process.communicate(timeout=seconds)


# -- 1. exclusive ------------------------------------------------------------------------------


def test_two_batch_resumes_at_once_run_each_step_once_and_one_is_refused(project: Path) -> None:
    lines(project, "a", "b")
    first = start_adws(project, "batch", "holding", "inputs.jsonl", "-q", "--json")
    out, _ = finish(first)
    assert first.returncode == 1  # not fixed yet
    batch_id = json.loads(out)["batch_id"]
    (project / "calls.log").unlink()
    (project / "fixed").touch()
    resumes = [start_adws(project, "batch", "--resume", batch_id, "-q") for _ in range(2)]
    wait_for(lambda: any(resume.poll() is not None for resume in resumes))
    (project / "go").touch()
    ended = [(*finish(resume), resume.returncode) for resume in resumes]
    assert sorted(code for _, _, code in ended) == [0, 2]
    refused = next(err for _, err, code in ended if code == 2)
    assert refused.startswith(f"adws: error: batch {batch_id} is being run by process ")
    assert refused.rstrip().endswith("; pass --force if it is not")
    assert calls(project) == ["held a", "held b"]  # run again once, not twice


def test_adws_resume_of_a_queued_or_running_run_of_a_live_batch_is_refused(project: Path) -> None:
    lines(project, "a", "b")
    batch = start_adws(project, "batch", "gated", "inputs.jsonl", "--concurrency", "1", "-q")
    wait_for(lambda: len(list(project.glob("waiting-*"))) == 1)
    runs = {
        str(status): str(run)
        for status, run in journal_rows(project, "SELECT status, run_id FROM runs")
    }
    for status in ("queued", "running"):
        resume = start_adws(project, "resume", runs[status])
        _, err = finish(resume)
        assert resume.returncode == 2, err
        assert err.startswith(f"adws: error: run {runs[status]} belongs to batch b"), err
        assert f", which process {batch.pid} on " in err
    (project / "fixed").touch()
    (project / "go").touch()
    _, err = finish(batch)
    assert batch.returncode == 0, err
    assert calls(project) == ["gate a", "gate b", "went a", "went b"]


# -- 2. workers stop when the coordinator dies -------------------------------------------------


def test_a_killed_coordinator_leaves_nothing_running_and_resume_continues(project: Path) -> None:
    lines(project, "a", "b")
    batch = start_adws(project, "batch", "sleeping", "inputs.jsonl", "-q", "--json")
    wait_for(lambda: len(list(project.glob("work-*.pid"))) == 2)
    time.sleep(0.2)
    workers = [worker for server in children(batch.pid) for worker in children(server)]
    assert len(workers) == 2  # forked by the forkserver the coordinator started
    steps = [int(path.read_text()) for path in project.glob("work-*.pid")]
    batch.kill()
    finish(batch)
    assert gone(*workers, *steps)
    assert not list(project.glob("cleaned-*"))  # nothing ran on, unrecorded, after it died
    batch_id = journal_rows(project, "SELECT batch_id FROM batches")[0][0]
    (project / "go").touch()
    resumed = start_adws(project, "batch", "--resume", str(batch_id), "-q", "--json")
    out, err = finish(resumed)
    assert resumed.returncode == 0, err
    assert json.loads(out)["counts"] == {"succeeded": 2}
    assert sorted(path.name for path in project.glob("cleaned-*")) == ["cleaned-a", "cleaned-b"]


# -- 3. a dead worker's children are stopped before its run resumes ----------------------------


def test_a_dead_workers_child_is_stopped_before_its_run_resumes(project: Path) -> None:
    lines(project, "a")
    batch = start_adws(project, "batch", "overlapping", "inputs.jsonl", "-q", "--json")
    wait_for((project / "child.pid").exists)
    time.sleep(0.3)
    child = int((project / "child.pid").read_text())
    os.kill(parent_of(child), signal.SIGKILL)  # the worker running the step
    (project / "died").touch()
    out, err = finish(batch)
    assert batch.returncode == 0, err
    assert json.loads(out)["counts"] == {"succeeded": 1}
    assert not (project / "overlap").exists()  # the old child was gone when the step ran again
    assert gone(child, seconds=0)


# -- 4 and 6. a journal the coordinator cannot write -------------------------------------------


def test_a_journal_locked_past_the_busy_timeout_ends_the_batch_cleanly(project: Path) -> None:
    lines(project, "a", "b", "c")
    batch = start_adws(
        project,
        "batch",
        "gated",
        "inputs.jsonl",
        "--concurrency",
        "2",
        "-q",
        env={"ADWS_JOURNAL_BUSY_TIMEOUT": "0.2"},
    )
    wait_for(lambda: len(list(project.glob("waiting-*"))) == 2)
    holder = sqlite3.connect(project / "runs.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    (project / "go").touch()
    try:
        out, err = finish(batch)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert batch.returncode == 1, err
    assert "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith("adws: the journal ")
    assert "did not record this batch completely (the step statements of run " in last
    assert "OperationalError: database is locked" in last
    assert "`adws batch --resume b" in last
    assert out.splitlines()[0].endswith(" · gated · failed")
    assert "went c" not in calls(project)  # no run started after the journal failed
    # Nothing could be recorded, so the runs say `running`, held by a coordinator now gone.
    (project / "fixed").touch()
    batch_id = journal_rows(project, "SELECT batch_id FROM batches")[0][0]
    resumed = start_adws(project, "batch", "--resume", str(batch_id), "-q", "--json")
    out, err = finish(resumed)
    assert resumed.returncode == 0, err
    assert json.loads(out)["counts"] == {"succeeded": 3}


def test_a_journal_that_cannot_grow_ends_the_batch_cleanly(project: Path) -> None:
    lines(project, "a", "b")

    def ignore_file_size_signal() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead

    batch = start_adws(
        project,
        "batch",
        "gated",
        "inputs.jsonl",
        "-q",
        "--concurrency",
        "2",
        preexec_fn=ignore_file_size_signal,
    )
    wait_for(lambda: len(list(project.glob("waiting-*"))) == 2)
    size = max(path.stat().st_size for path in project.glob("runs.db*"))
    resource.prlimit(batch.pid, resource.RLIMIT_FSIZE, (size, size))  # the disk is full
    (project / "go").touch()
    _, err = finish(batch)
    assert batch.returncode == 1, err
    # Under coverage, coverage itself cannot save its data past the limit either: not ours.
    ours = err.split("Exception ignored in atexit callback")[0]
    assert "Traceback" not in ours
    assert ours.splitlines()[-1].startswith("adws: the journal ")
    assert "did not record this batch completely" in ours.splitlines()[-1]


# -- 5. both resume paths go through prepare_resume ---------------------------------------------


def test_batch_resume_counts_the_earlier_spend_against_the_budget(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a")
    code, report = batch_json(["budgeted", "inputs.jsonl"], capsys)
    assert code == 1
    (project / "fixed").touch()
    code, resumed = batch_json(["--resume", str(report["batch_id"])], capsys)
    assert code == 1
    (run,) = runs_of(resumed)
    assert run["error"]["error_type"] == "BudgetExceeded"
    assert run["error"]["step_name"] == "s4"
    assert calls(project) == ["agent s1", "agent s3", "gate a", "gate a"]


def test_a_lost_workers_run_resumes_with_its_earlier_spend(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a")
    code, report = batch_json(["lost_budget", "inputs.jsonl"], capsys)
    assert code == 1
    (run,) = runs_of(report)
    assert (run["error"]["error_type"], run["error"]["step_name"]) == ("BudgetExceeded", "s4")
    assert calls(project) == ["agent s1", "agent s3", "die_once a", "die_once a"]


def test_batch_resume_refuses_a_changed_finished_step_unless_told(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a")
    code, report = batch_json(["budgeted", "inputs.jsonl"], capsys)
    batch_id = str(report["batch_id"])
    source = project / "workflows" / "safety.py"
    source.write_text(source.read_text().replace('"prompt": "{n}"', '"prompt": "n={n}"'))
    (project / "fixed").touch()
    assert main(["batch", "--resume", batch_id, "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"adws: error: cannot resume batch {batch_id}: line 1: step 's1' of run ")
    assert "changed since it finished; pass --keep-changed to keep the outputs" in err
    code, _ = batch_json(["--resume", batch_id, "--rerun-changed"], capsys)
    assert code == 1  # s1 ran again, so s3 finds the budget spent
    assert calls(project) == ["agent s1", "agent s1", "gate a", "gate a"]


def test_batch_resume_keep_changed_keeps_the_step_and_makes_it_the_baseline(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`batch --resume --keep-changed` runs no changed step again, and records today's definition."""
    lines(project, "a")
    code, report = batch_json(["budgeted", "inputs.jsonl"], capsys)
    batch_id = str(report["batch_id"])
    source = project / "workflows" / "safety.py"
    source.write_text(source.read_text().replace('"prompt": "{n}"', '"prompt": "n={n}"'))
    (project / "fixed").touch()
    code, resumed = batch_json(["--resume", batch_id, "--keep-changed"], capsys)
    (run,) = runs_of(resumed)
    assert (code, run["error"]["step_name"]) == (1, "s4")  # s1 kept: s3 ran within the budget
    assert calls(project) == ["agent s1", "agent s3", "gate a", "gate a"]
    assert main(["resume", str(run["run_id"]), "--plan"]) == 0
    assert "  1. s1: kept" in capsys.readouterr().out


def test_a_batch_run_that_changed_since_the_batch_read_it_is_not_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The batch's claim of each run is compare-and-set on what `batch --resume` read of it."""
    from adws.journal import Journal  # noqa: PLC0415 - only this test
    from adws.journal.store.batches import claim_batch_run  # noqa: PLC0415 - as above

    lines(project, "a")
    _, report = batch_json(["budgeted", "inputs.jsonl"], capsys)
    (run,) = runs_of(report)
    run_id = str(run["run_id"])
    journal = Journal(project / ".adws" / "runs.db")
    record = journal.find(run_id)
    assert not isinstance(record, str)
    journal.write("UPDATE runs SET resumes = resumes + 1 WHERE run_id = ?", (run_id,))
    assert claim_batch_run(journal, run_id, seen=record.seen) == (
        f"run {run_id} changed since this command read it (now failed); "
        f"look again: adws status {run_id}; it was not run"
    )
    fresh = journal.find(run_id)
    assert not isinstance(fresh, str)
    assert claim_batch_run(journal, run_id, seen=fresh.seen) is None
    journal.close()


# -- 7. a run that kills its worker twice ------------------------------------------------------


def test_a_run_that_kills_its_worker_twice_ends_worker_lost_after_its_cleanup(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a", "b")
    code, report = batch_json(["crashing", "inputs.jsonl", "--concurrency", "1"], capsys)
    assert code == 1
    assert report["counts"] == {"failed": 2}
    for run in runs_of(report):
        assert run["error"]["error_type"] == "WorkerLost"
        assert run["error"]["message"] == (
            "the worker running step 'crash' died twice (exit status 3); not tried again"
        )
    assert calls(project) == ["crash a", "crash a", "crash b", "crash b"]
    for name in ("a", "b"):
        assert (project / f"cleaned-{name}").read_text() == (
            "crash: WorkerLost: the worker running step 'crash' died twice (exit status 3); "
            "not tried again"
        )


# -- 8. the offline switch reaches workers -----------------------------------------------------


def test_the_offline_switch_reaches_the_workers(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """This test is offline (the plugin's default): a worker starts no agent process either."""
    (project / "workflows" / "touching.py").write_text(TOUCHING, encoding="utf-8")
    lines(project, "a")
    code, report = batch_json(["touching", "inputs.jsonl"], capsys)
    assert code == 1
    assert not (project / "ran").exists()
    (run,) = runs_of(report)
    assert run["error"]["message"].startswith("offline: CommandAgent(")
    assert OFFLINE.refused == (run["error"]["message"],)  # noted here, so the plugin fails a test
    OFFLINE.reset(enabled=True)  # this test expected the refusal: it must not fail it


TOUCHING = """
from adws import CommandAgent, RetryPolicy, Workflow, agent_step

AGENT = CommandAgent(["sh", "-c", "touch ran; echo STATUS: done"])
touching = Workflow(
    "touching", (agent_step("ask", prompt="{n}", agent=AGENT, retry=RetryPolicy()),), inputs=("n",)
)
"""


# -- 10. workers are not daemonic --------------------------------------------------------------


def test_a_step_using_a_multiprocessing_pool_works_in_a_batch(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a")
    code, report = batch_json(["pooling", "inputs.jsonl"], capsys)
    assert (code, report["counts"]) == (0, {"succeeded": 1})


# -- 11. prune during a batch ------------------------------------------------------------------


def test_prune_during_a_batch_keeps_its_runs_and_a_vanished_run_is_not_run(project: Path) -> None:
    lines(project, "a", "b", "c")
    (project / "fixed").touch()
    batch = start_adws(project, "batch", "gated", "inputs.jsonl", "--concurrency", "1", "-q")
    wait_for(lambda: len(list(project.glob("waiting-*"))) == 1)
    prune = start_adws(project, "runs", "--prune", "--keep", "0")
    _, err = finish(prune)
    assert (prune.returncode, err) == (0, f"deleted 0 runs from {project / 'runs.db'}\n")
    # An older adws (or a hand) deletes a queued run all the same.
    doomed = journal_rows(project, "SELECT run_id FROM runs WHERE line = 3")[0][0]
    db = sqlite3.connect(project / "runs.db")
    db.execute("DELETE FROM runs WHERE run_id = ?", (doomed,))
    db.commit()
    db.close()
    (project / "go").touch()
    _, err = finish(batch)
    assert batch.returncode == 1
    assert f"adws: run {doomed} is no longer in the journal (pruned?); it was not run" in err
    assert calls(project) == ["gate a", "gate b", "went a", "went b"]
    db = sqlite3.connect(project / "runs.db")
    left = db.execute("SELECT COUNT(*) FROM attempts WHERE run_id = ?", (doomed,)).fetchone()
    db.close()
    assert left == (0,)


# -- what a crashed batch left: a live child, a run held elsewhere -----------------------------


def _failed_batch(project: Path) -> tuple[str, str]:
    lines(project, "a")
    first = start_adws(project, "batch", "holding", "inputs.jsonl", "-q", "--json")
    out, _ = finish(first)
    report = json.loads(out)
    return report["batch_id"], report["runs"][0]["run_id"]


def _set(project: Path, sql: str, *params: object) -> None:
    db = sqlite3.connect(project / "runs.db")
    db.execute(sql, params)
    db.commit()
    db.close()


def test_batch_resume_refuses_a_run_whose_child_still_runs_unless_forced(project: Path) -> None:
    batch_id, run_id = _failed_batch(project)
    child = subprocess.Popen(
        ["sleep", "60"], start_new_session=True, env={**os.environ, "ADWS_RUN_ID": run_id}
    )
    try:
        _set(project, "UPDATE runs SET children = ?", json.dumps([child.pid]))
        refused = start_adws(project, "batch", "--resume", batch_id)
        _, err = finish(refused)
        assert refused.returncode == 2
        assert err == (
            f"adws: error: cannot resume batch {batch_id}: line 1: run {run_id} left child "
            f"process group {child.pid} running; pass --force to stop it and resume\n"
        )
        (project / "fixed").touch()
        (project / "go").touch()
        forced = start_adws(project, "batch", "--resume", batch_id, "--force", "-q")
        _, err = finish(forced)
        assert forced.returncode == 0, err
        assert child.wait(timeout=10) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()


def test_batch_resume_refuses_a_run_another_process_holds_unless_forced(project: Path) -> None:
    batch_id, run_id = _failed_batch(project)
    holder = subprocess.Popen(["sleep", "60"])
    try:
        started = io_ops.process_started(holder.pid)  # its holder, as a claim records it
        _set(
            project,
            "UPDATE runs SET status = 'running', pid = ?, holder_started = ?",
            holder.pid,
            started,
        )
        refused = start_adws(project, "batch", "--resume", batch_id, "-q")
        _, err = finish(refused)
        assert refused.returncode == 2
        assert err.startswith(
            f"adws: error: cannot resume batch {batch_id}: line 1: run {run_id} is being run by "
            f"process {holder.pid} on "
        )
        (project / "fixed").touch()
        (project / "go").touch()
        forced = start_adws(project, "batch", "--resume", batch_id, "--force")
        _, err = finish(forced)
        assert forced.returncode == 0, err
        assert err.splitlines()[0].startswith(f"resuming batch {batch_id}: 1 run")
    finally:
        holder.kill()
        holder.wait()


def test_runs_taken_with_resume_force_are_left_to_it_by_the_batch(project: Path) -> None:
    lines(project, "a", "b", "c")
    (project / "fixed").touch()
    batch = start_adws(project, "batch", "gated", "inputs.jsonl", "--concurrency", "1", "-q")
    wait_for(lambda: len(list(project.glob("waiting-*"))) == 1)
    rows = journal_rows(project, "SELECT line, run_id FROM runs WHERE status = 'queued'")
    queued = {int(str(line)): str(run_id) for line, run_id in rows}
    taken = {
        line: start_adws(project, "resume", str(queued[line]), "--force", "-q") for line in (2, 3)
    }
    wait_for(lambda: len(list(project.glob("waiting-*"))) == 3)
    (project / "go-c").touch()  # the resume of c ends: c succeeded
    finish(taken[3])
    (project / "go-a").touch()  # the batch's run ends; it comes to b (taken) and c (done)
    _, err = finish(batch)
    assert batch.returncode == 1
    assert f"adws: run {queued[2]} is being run by process {taken[2].pid} on " in err
    assert f"adws: run {queued[3]} succeeded meanwhile (resumed elsewhere)" in err
    (project / "go-b").touch()
    _, err = finish(taken[2])
    assert taken[2].returncode == 0, err
    assert calls(project) == ["gate a", "gate b", "gate c", "went a", "went b", "went c"]


def test_batch_options_that_need_resume_and_a_bad_busy_timeout_are_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines(project, "a")
    assert main(["batch", "holding", "inputs.jsonl", "--force"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: --rerun-changed, --force, --keep-changed and --accept-drift go with "
        "--resume BATCH\n"
    )
    monkeypatch.setenv("ADWS_JOURNAL_BUSY_TIMEOUT", "soon")
    assert main(["batch", "holding", "inputs.jsonl"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: ADWS_JOURNAL_BUSY_TIMEOUT='soon': expected a number of seconds of at least 0\n"
    )
