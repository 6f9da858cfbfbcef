"""A team's queue: `adws submit` queues, `adws worker` runs what is due, `adws workers` lists.

Every command is a real `python -m adws` process (a worker's runs are
processes of their own); the journal is a SQLite file or a real PostgreSQL
server (`journal_at`). A second host is a UTS namespace (`unshare --uts`,
as root), as in `test_hosts.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from adws import io_ops
from adws.journal import Journal
from tests.conftest import REPO, dead_pid, wait_for

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

FLOWS = """
import os
import time

from returns.io import IOFailure, IOSuccess

from adws import PipelineError, Step, Workflow, approval_step, shell_step


def note(ctx):
    with open("ran.log", "a") as log:
        log.write(ctx.inputs["n"] + "\\n")
    return IOSuccess(ctx)


def slow(ctx):
    with open("started.log", "a") as log:
        log.write(ctx.inputs["n"] + "\\n")
    while os.path.exists("hold"):
        time.sleep(0.05)
    return note(ctx)


def flaky(ctx):
    if os.path.exists("fail"):
        return IOFailure(PipelineError("flaky", "Failed", "on purpose"))
    return note(ctx)


noted = Workflow("noted", (Step("note", note, reads=("n",), writes=()),), inputs=("n",))
held = Workflow("held", (Step("slow", slow, reads=("n",), writes=()),), inputs=("n",))
shaky = Workflow("shaky", (Step("flaky", flaky, reads=("n",), writes=()),), inputs=("n",))
gated = Workflow(
    "gated",
    (approval_step("ship", message="ship {n}?"), Step("note", note, reads=("n",), writes=())),
    inputs=("n",),
)
appends = Workflow(
    "appends",
    (shell_step("append", "echo started >> begun.log; sleep 3; echo once >> appended.log"),),
)
"""

SEEDS = iter(range(1, 10_000))


def command(argv: tuple[str, ...], host: str | None) -> list[str]:
    """Run `adws` on this host, or on `host` (a UTS namespace of that name)."""
    line = [sys.executable, "-m", "adws", *argv]
    if host is None:
        return line
    return ["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$@"', "sh", *line]


def environment(journal: str) -> dict[str, str]:
    """A process's environment: the journal, this checkout, its own hash seed."""
    env = {
        **os.environ,
        "ADWS_JOURNAL": journal,
        "PYTHONPATH": str(REPO),
        "PYTHONHASHSEED": str(next(SEEDS)),
    }
    env.pop("ADWS_WORKFLOWS", None)
    return env


def adws(
    project: Path, journal: str, *argv: str, host: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `adws` to its end."""
    return subprocess.run(
        command(argv, host),
        cwd=project,
        env=environment(journal),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def start(
    project: Path, journal: str, *argv: str, host: str | None = None
) -> subprocess.Popen[str]:
    """Start `adws` and leave it running."""
    return subprocess.Popen(
        command(argv, host),
        cwd=project,
        env=environment(journal),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    return tmp_path


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def submit(project: Path, journal: str, workflow: str, n: str) -> str:
    done = adws(project, journal, "submit", workflow, "-i", f"n={n}")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_submitted_run_is_queued_then_run_once_by_a_worker_in_another_process(
    project: Path, journal_at: str
) -> None:
    done = adws(project, journal_at, "submit", "noted", "-i", "n=1", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    assert json.loads(done.stdout) == {"run_id": run_id, "workflow": "noted", "status": "queued"}
    queued = Journal(journal_at).find(run_id)
    assert (queued.status, queued.host, queued.pid) == ("queued", None, None)  # type: ignore[union-attr] # found
    worker = adws(
        project, journal_at, "worker", "--once", "--poll", "0.2", "--workflows", "workflows"
    )
    assert (worker.returncode, worker.stdout) == (0, f"{run_id} noted: succeeded (exit 0)\n")
    again = adws(project, journal_at, "worker", "--once", "--poll", "0.2")
    assert (again.returncode, again.stdout) == (0, "")
    assert lines(project / "ran.log") == ["1"]
    record = Journal(journal_at).find(run_id)
    assert (record.status, record.host, record.resumes) == ("succeeded", socket.gethostname(), 0)  # type: ignore[union-attr] # found
    assert Journal(journal_at).query("SELECT COUNT(*) FROM workers") == [(0,)]


def test_submit_prints_the_id_and_refuses_what_adws_run_refuses(
    project: Path, journal_at: str
) -> None:
    run_id = submit(project, journal_at, "noted", "7")
    assert len(run_id) == 12
    done = adws(project, journal_at, "submit", "noted")
    assert (done.returncode, done.stderr) == (
        2,
        "adws: error: workflow 'noted' needs input n: add -i n=...\n",
    )
    assert [run.run_id for run in Journal(journal_at).runs()] == [run_id]


def test_a_failed_run_does_not_stop_the_worker_and_the_exit_is_the_worst(
    project: Path, journal_at: str
) -> None:
    (project / "fail").touch()
    failing = submit(project, journal_at, "shaky", "1")
    fine = submit(project, journal_at, "noted", "2")
    worker = adws(project, journal_at, "worker", "--once", "--poll", "0.2", "--concurrency", "2")
    assert worker.returncode == 1, worker.stderr
    assert sorted(worker.stdout.splitlines()) == sorted(
        [
            f"{failing} shaky: failed: flaky: Failed: on purpose (exit 1)",
            f"{fine} noted: succeeded (exit 0)",
        ]
    )
    assert lines(project / "ran.log") == ["2"]


def test_a_run_its_worker_cannot_load_is_taken_back_once_then_left_interrupted_and_resumable(
    project: Path, journal_at: str
) -> None:
    run_id = submit(project, journal_at, "noted", "3")
    (project / "workflows" / "flows.py").rename(project / "flows.py")
    worker = adws(project, journal_at, "worker", "--once", "--poll", "0.2")
    assert (worker.returncode, worker.stdout) == (2, f"{run_id} noted: interrupted (exit 2)\n" * 2)
    (project / "flows.py").rename(project / "workflows" / "flows.py")
    resumed = adws(project, journal_at, "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert lines(project / "ran.log") == ["3"]


def test_an_interrupted_run_is_taken_back_by_the_next_worker_and_runs_once(
    project: Path, journal_at: str
) -> None:
    run_id = submit(project, journal_at, "noted", "8")
    (project / "workflows" / "flows.py").rename(project / "flows.py")
    adws(project, journal_at, "worker", "--once", "--poll", "0.2")
    assert Journal(journal_at).find(run_id).status == "interrupted"  # type: ignore[union-attr] # found
    (project / "flows.py").rename(project / "workflows" / "flows.py")
    worker = adws(project, journal_at, "worker", "--once", "--poll", "0.2", "--journal-wait", "5")
    assert (worker.returncode, worker.stdout) == (0, f"{run_id} noted: succeeded (exit 0)\n")
    assert lines(project / "ran.log") == ["8"]


def test_a_worker_killed_just_after_its_claim_leaves_a_run_the_next_worker_takes_back(
    project: Path, journal_at: str
) -> None:
    run_id = submit(project, journal_at, "noted", "9")
    claim = (
        "import sys; from adws.journal import Journal; from adws.journal.store.queue import "
        "take_queued; print(take_queued(Journal(sys.argv[1])))"
    )
    claimed = subprocess.run(
        [sys.executable, "-c", claim, journal_at],
        env=environment(journal_at),
        capture_output=True,
        text=True,
        check=True,
    )
    assert claimed.stdout == f"{run_id}\n"  # the claiming process has ended: its claim is orphaned
    record = Journal(journal_at).find(run_id)
    assert (record.status, record.stale) == ("running", True)  # type: ignore[union-attr] # found
    worker = adws(project, journal_at, "worker", "--once", "--poll", "0.2")
    assert (worker.returncode, worker.stdout) == (0, f"{run_id} noted: succeeded (exit 0)\n")
    assert lines(project / "ran.log") == ["9"]


def test_resume_due_takes_back_interrupted_runs_and_runs_whose_holder_died(
    project: Path, journal_at: str
) -> None:
    dead = submit(project, journal_at, "noted", "10")
    journal = Journal(journal_at)
    journal.write(
        "UPDATE runs SET status = 'running', pid = ?, host = ? WHERE run_id = ?",
        (dead_pid(), socket.gethostname(), dead),
    )
    done = adws(project, journal_at, "resume", "--due")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{dead} noted: succeeded (exit 0)\n"
    assert lines(project / "ran.log") == ["10"]
    again = adws(project, journal_at, "resume", "--due")
    assert (again.returncode, again.stdout) == (
        0,
        f"no run of this host is due in {journal.path}\n",
    )


def test_resume_due_takes_back_a_run_whose_holder_pid_was_reused_by_a_later_process(
    project: Path, journal_at: str
) -> None:
    reused = submit(project, journal_at, "noted", "11")
    held = submit(project, journal_at, "noted", "12")
    other = subprocess.Popen(["sleep", "60"])  # alive: the pid a dead holder had, say
    try:
        started = io_ops.process_started(other.pid)
        assert started is not None
        boot = started.split(":")[0]
        journal = Journal(journal_at)
        for run_id, when in ((reused, f"{boot}:1"), (held, started)):
            journal.write(
                "UPDATE runs SET status = 'running', pid = ?, host = ?, holder_started = ?"
                " WHERE run_id = ?",
                (other.pid, socket.gethostname(), when, run_id),
            )
        done = adws(project, journal_at, "resume", "--due")
    finally:
        other.kill()
        other.wait()
    assert (done.returncode, done.stdout) == (0, f"{reused} noted: succeeded (exit 0)\n"), (
        done.stderr
    )
    assert lines(project / "ran.log") == ["11"]  # the run its live holder holds was left to it


def test_held_run_refuses_a_run_no_worker_handed_to_it(project: Path, journal_at: str) -> None:
    run_id = submit(project, journal_at, "noted", "4")
    done = adws(project, journal_at, "held-run", run_id, "--kind", "queued")
    assert (done.returncode, done.stderr) == (
        2,
        (
            f"adws: error: run {run_id} is queued, not held for this process by an adws "
            f"worker; nothing was run here (adws resume {run_id} continues it)\n"
        ),
    )
    assert Journal(journal_at).find(run_id).status == "queued"  # type: ignore[union-attr] # found


def test_sigterm_stops_the_worker_and_leaves_its_run_interrupted_and_resumable(
    project: Path, journal_at: str
) -> None:
    (project / "hold").touch()
    run_id = submit(project, journal_at, "held", "5")
    worker = start(project, journal_at, "worker", "--poll", "0.2")
    wait_for(lambda: lines(project / "started.log") == ["5"])
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=60)
    assert (worker.returncode, out) == (
        143,
        f"{run_id} held: interrupted: slow: Interrupted: interrupted by SIGTERM (exit 143)\n",
    ), err
    assert err.splitlines()[-1] == (
        f"adws worker: process {worker.pid} stopped by SIGTERM after 1 run(s); 1 run(s) it held "
        f"stopped: {run_id} (adws resume RUN continues each); exit 143"
    )
    assert Journal(journal_at).find(run_id).status == "interrupted"  # type: ignore[union-attr] # found
    assert Journal(journal_at).query("SELECT COUNT(*) FROM workers") == [(0,)]
    (project / "hold").unlink()
    resumed = adws(project, journal_at, "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert lines(project / "ran.log") == ["5"]


def test_a_held_run_killed_is_taken_back_by_its_worker_and_its_step_finishes_once(
    project: Path, journal_at: str
) -> None:
    (project / "hold").touch()
    run_id = submit(project, journal_at, "held", "6")
    worker = start(project, journal_at, "worker", "--once", "--poll", "0.2")
    wait_for(lambda: lines(project / "started.log") == ["6"])
    pid = Journal(journal_at).find(run_id).pid  # type: ignore[union-attr] # found
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    (project / "hold").unlink()
    out, err = worker.communicate(timeout=60)
    assert (worker.returncode, out) == (
        1,
        f"{run_id} held: running (exit 1)\n{run_id} held: succeeded (exit 0)\n",
    ), err
    assert lines(project / "ran.log") == ["6"]  # the killed attempt never got there
    assert lines(project / "started.log") == ["6", "6"]


def test_a_held_run_sigkilled_mid_step_is_taken_back_after_its_step_group_is_stopped(
    project: Path, journal_at: str
) -> None:
    run_id = submit_appends(project, journal_at)
    worker = start(project, journal_at, "worker", "--once", "--poll", "0.2")
    wait_for(lambda: lines(project / "begun.log") == ["started"])
    record = Journal(journal_at).find(run_id)
    assert not isinstance(record, str)
    wait_for(lambda: Journal(journal_at).find(run_id).children != ())  # type: ignore[union-attr] # found
    groups = Journal(journal_at).find(run_id).children  # type: ignore[union-attr] # found
    assert record.pid is not None
    os.kill(record.pid, signal.SIGKILL)  # the runner dies; its step's group runs on, sleeping
    out, err = worker.communicate(timeout=60)
    assert (worker.returncode, out) == (
        1,
        f"{run_id} appends: running (exit 1)\n{run_id} appends: succeeded (exit 0)\n",
    ), err
    said = f"adws: stopped process group {groups[0]} left by run {run_id} before taking it back"
    assert said in err.splitlines()
    time.sleep(3.5)  # long enough for a step group left running to have appended
    assert lines(project / "begun.log") == ["started", "started"]
    assert lines(project / "appended.log") == ["once"]


def test_resume_due_stops_the_step_group_a_sigkilled_run_left_then_appends_once(
    project: Path, journal_at: str
) -> None:
    running = start(project, journal_at, "run", "appends")
    wait_for(lambda: lines(project / "begun.log") == ["started"])
    (run_id,) = (run.run_id for run in Journal(journal_at).runs())
    wait_for(lambda: Journal(journal_at).find(run_id).children != ())  # type: ignore[union-attr] # found
    groups = Journal(journal_at).find(run_id).children  # type: ignore[union-attr] # found
    running.send_signal(signal.SIGKILL)  # the runner dies; its step's group runs on, sleeping
    running.communicate(timeout=60)
    done = adws(project, journal_at, "resume", "--due")
    assert (done.returncode, done.stdout) == (0, f"{run_id} appends: succeeded (exit 0)\n"), (
        done.stderr
    )
    said = f"adws: stopped process group {groups[0]} left by run {run_id} before taking it back"
    assert said in done.stderr.splitlines()
    time.sleep(3.5)  # long enough for a step group left running to have appended
    assert lines(project / "appended.log") == ["once"]


def submit_appends(project: Path, journal: str) -> str:
    done = adws(project, journal, "submit", "appends")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_workers_lists_a_live_worker_and_not_a_dead_or_silent_one(
    project: Path, journal_at: str
) -> None:
    worker = start(project, journal_at, "worker", "--poll", "0.2")
    try:
        wait_for(lambda: Journal(journal_at).query("SELECT COUNT(*) FROM workers") == [(1,)])
        journal = Journal(journal_at)
        now = time.time()
        for worker_id, host, pid, at in (
            ("dead", socket.gethostname(), dead_pid(), now),
            ("silent", "elsewhere", 1, now - 60),
            ("forged", "elsewhere", 1, now),
        ):
            journal.write(
                "INSERT INTO workers (worker_id, host, pid, since, beat, poll, runs)"
                " VALUES (?, ?, ?, '2026-11-27T09:00:00+00:00', ?, 5, ?)",
                (worker_id, host, pid, at, "{" if worker_id == "forged" else "[]"),
            )
        # The live worker prunes the heartbeats of the dead and the silent at its next beat.
        wait_for(
            lambda: (
                {row[0] for row in Journal(journal_at).query("SELECT worker_id FROM workers")}
                & {"dead", "silent"}
                == set()
            )
        )
        listed = adws(project, journal_at, "workers", "--json")
        live = json.loads(listed.stdout)
        assert [(item["host"], item["pid"], item["runs"]) for item in live] == [
            ("elsewhere", 1, []),
            (socket.gethostname(), worker.pid, []),
        ]
        table = adws(project, journal_at, "workers").stdout.splitlines()
        assert table[0].split() == ["HOST", "PID", "SINCE", "RUNS"]
        assert [row.split()[:2] for row in table[1:]] == [
            ["elsewhere", "1"],
            [socket.gethostname(), str(worker.pid)],
        ]
    finally:
        worker.send_signal(signal.SIGINT)
        _, err = worker.communicate(timeout=60)
    assert worker.returncode == 130
    assert err.splitlines()[-1] == (
        f"adws worker: process {worker.pid} stopped by SIGINT after 0 run(s); it held no run; "
        "exit 130"
    )
    journal.write("DELETE FROM workers WHERE worker_id = 'forged'", ())
    assert adws(project, journal_at, "workers").stdout == (
        f"no live adws worker in {Journal(journal_at).path}\n"
    )


def test_a_run_held_on_another_host_is_not_checked_from_here(
    project: Path, journal_at: str
) -> None:
    run_id = submit(project, journal_at, "noted", "8")
    Journal(journal_at).write(
        "UPDATE runs SET status = 'running', host = 'far', pid = 4242 WHERE run_id = ?", (run_id,)
    )
    said = "running on far, pid 4242: not checked from here"
    assert said in adws(project, journal_at, "runs").stdout
    assert said in adws(project, journal_at, "status", run_id).stdout
    listed = json.loads(adws(project, journal_at, "runs", "--json").stdout)
    assert [(run["run_id"], run["held_elsewhere"]) for run in listed] == [(run_id, said)]
    cost = adws(project, journal_at, "cost")
    assert cost.stderr.splitlines()[-1] == (
        f"note: these runs count as far as they recorded: {run_id} {said}"
    )
    report = adws(project, journal_at, "report", run_id, "-o", str(project / "r.html"))
    assert report.returncode == 0, report.stderr
    assert f"<p>{said}</p>" in (project / "r.html").read_text()
    Journal(journal_at).write(
        "UPDATE runs SET status = 'waiting', failed_step = 'ship' WHERE run_id = ?", (run_id,)
    )
    Journal(journal_at).write(
        "INSERT INTO approvals (run_id, step, message, asked) VALUES (?, 'ship', 'ship?', ?)",
        (run_id, "2026-11-29T09:00:00+00:00"),
    )
    waiting = adws(project, journal_at, "approvals", "--json")
    assert [(item["run_id"], item["waits_elsewhere"]) for item in json.loads(waiting.stdout)] == [
        (run_id, "waiting on far: not checked from here")
    ], waiting.stderr
    text = adws(project, journal_at, "approvals").stdout.splitlines()[0]
    assert text.endswith(" · waiting on far: not checked from here")


def test_a_parked_run_whose_time_came_is_continued_by_worker_once(
    project: Path, journal_at: str
) -> None:
    (project / "fail").touch()
    for n in ("9", "10", "13", "14"):
        assert adws(project, journal_at, "run", "shaky", "-i", f"n={n}").returncode == 1
    journal = Journal(journal_at)
    [batched, later_id, second, first] = [run.run_id for run in journal.runs()]
    now = time.time()
    for run_id, wake in ((first, now - 2), (second, now - 1), (later_id, now + 3600)):
        journal.write(
            "UPDATE runs SET status = 'parked', wake_at = ? WHERE run_id = ?", (wake, run_id)
        )
    # A due run of a batch a live coordinator holds is the batch's: the worker leaves it.
    journal.write(
        "INSERT INTO batches (batch_id, workflow, source, total, status, started, pid, host)"
        " VALUES ('b1', 'shaky', 'in.jsonl', 1, 'running', 'now', ?, ?)",
        (os.getpid(), socket.gethostname()),
    )
    journal.write(
        "UPDATE runs SET status = 'parked', wake_at = ?, batch_id = 'b1' WHERE run_id = ?",
        (now - 3, batched),
    )
    (project / "fail").unlink()
    worker = adws(project, journal_at, "worker", "--once", "--poll", "0.2")
    assert (worker.returncode, worker.stdout) == (
        0,
        f"{first} shaky: succeeded (exit 0)\n{second} shaky: succeeded (exit 0)\n",
    )
    assert lines(project / "ran.log") == ["9", "10"]
    assert Journal(journal_at).find(later_id).status == "parked"  # type: ignore[union-attr] # found
    assert Journal(journal_at).find(batched).status == "parked"  # type: ignore[union-attr] # found


needs_hosts = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a second host is a UTS namespace: `unshare --uts` needs root",
)


@needs_hosts
def test_an_approval_from_another_host_is_continued_by_this_hosts_worker(
    project: Path, journal_at: str
) -> None:
    done = adws(project, journal_at, "run", "gated", "-i", "n=11")
    assert done.returncode == 3, done.stderr
    [run] = Journal(journal_at).runs(status="waiting")
    approved = adws(project, journal_at, "approve", run.run_id, "--by", "rev", host="laptop")
    assert approved.returncode == 0, approved.stderr
    elsewhere = adws(project, journal_at, "worker", "--once", "--poll", "0.2", host="laptop")
    assert (elsewhere.returncode, elsewhere.stdout, lines(project / "ran.log")) == (0, "", [])
    worker = adws(project, journal_at, "worker", "--once", "--poll", "0.2")
    assert (worker.returncode, worker.stdout) == (0, f"{run.run_id} gated: succeeded (exit 0)\n")
    assert lines(project / "ran.log") == ["11"]


@needs_hosts
def test_two_workers_on_two_hosts_drain_a_queue_running_every_run_once(
    project: Path, postgres_url: str
) -> None:
    submitted = {submit(project, postgres_url, "noted", str(n)) for n in range(10)}
    workers = [
        start(project, postgres_url, "worker", "--once", "--poll", "0.2", host=host)
        for host in ("alpha", "beta")
    ]
    outputs = [worker.communicate(timeout=120) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], outputs
    reported = [line.split()[0] for out, _ in outputs for line in out.splitlines()]
    assert sorted(reported) == sorted(submitted)
    assert sorted(lines(project / "ran.log"), key=int) == [str(n) for n in range(10)]
    runs = Journal(postgres_url).runs()
    assert {run.status for run in runs} == {"succeeded"}
    assert {run.host for run in runs} <= {"alpha", "beta"}
    assert {run.resumes for run in runs} == {0}


def test_a_worker_whose_journal_server_drops_says_so_once_and_goes_on(
    project: Path, postgres_url: str
) -> None:
    import psycopg  # noqa: PLC0415 - only with psycopg installed

    name = postgres_url.rsplit("/", 1)[1]
    admin_url = postgres_url.rsplit("/", 1)[0] + "/postgres"

    def connections(*, allowed: bool) -> None:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS {str(allowed).lower()}")
            if not allowed:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )

    worker = start(project, postgres_url, "worker", "--poll", "0.2")
    said: list[str] = []
    assert worker.stderr is not None
    said.append(worker.stderr.readline())
    connections(allowed=False)
    said.append(worker.stderr.readline())
    time.sleep(1)  # several rounds fail: said once
    connections(allowed=True)
    said.append(worker.stderr.readline())
    run_id = submit(project, postgres_url, "noted", "12")
    assert worker.stdout is not None
    assert worker.stdout.readline() == f"{run_id} noted: succeeded (exit 0)\n"
    connections(allowed=False)
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=60)
    connections(allowed=True)
    shown = postgres_url.replace(postgres_url.split(":")[2].split("@", maxsplit=1)[0], "***")
    assert worker.returncode == 143
    assert said[1].startswith(f"adws worker: cannot reach the journal {shown} (")
    assert said[1].endswith("); trying again every 0.2s\n")
    assert said[2] == f"adws worker: the journal {shown} answers again\n"
    assert err.startswith("adws worker: cannot remove its heartbeat from the journal: ")
    assert out == ""
    assert Journal(postgres_url).find(run_id).status == "succeeded"  # type: ignore[union-attr] # found
