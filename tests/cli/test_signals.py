"""Real `adws` processes: signals, racing resumes, lost journal writes, closed pipes."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from adws import io_ops
from tests.conftest import REPO, start_adws, wait_for

pytestmark = pytest.mark.slow

FLOWS = """
import os
import subprocess
import sys
import time
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import ErrorType, PipelineError, Step, Workflow, shell_step

STUBBORN = (
    "import os, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "open('child.pid', 'w').write(str(os.getpid())); time.sleep(120)"
)


def cleanup(ctx):
    Path("cleaned").write_text(str(ctx.failure))
    return IOSuccess(ctx)


def slow_cleanup(ctx):
    Path("cleanup.started").touch()
    time.sleep(1.5)
    Path("cleaned").write_text(str(ctx.failure))
    return IOSuccess(ctx)


def side_effect(ctx):
    with open("effects.log", "a") as handle:
        handle.write(f"{os.getpid()}\\n")
    time.sleep(float(os.environ.get("ADWS_TEST_SLEEP", "0")))
    return IOSuccess(ctx.merge_outputs({"effect": "done"}))


def broken(ctx):
    if not Path("fixed").exists():
        return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "not yet"))
    return IOSuccess(ctx.merge_outputs({"fixed": True}))


def drop_attempts(ctx):
    import sqlite3
    db = sqlite3.connect(os.environ["ADWS_JOURNAL"])
    db.execute("DROP TABLE attempts")
    db.commit()
    db.close()
    return IOSuccess(ctx.merge_outputs({"dropped": True}))


def drop_children(ctx):
    import sqlite3
    db = sqlite3.connect(os.environ["ADWS_JOURNAL"])
    db.execute("ALTER TABLE runs DROP COLUMN children")
    db.commit()
    db.close()
    return IOSuccess(ctx)


def greet(ctx):
    return IOSuccess(ctx.merge_outputs({"greeting": "hi " + ctx.inputs["name"]}))


waits = Workflow(
    "waits",
    (
        shell_step("wait", [sys.executable, "-c", STUBBORN]),
        Step("cleanup", cleanup, always_run=True),
    ),
)
cleans = Workflow(
    "cleans",
    (Step("first", greet), Step("cleanup", slow_cleanup, always_run=True), Step("after", greet)),
    inputs=("name",),
)
effects = Workflow("effects", (Step("fail", broken), Step("effect", side_effect)))
greets = Workflow("greets", (Step("greet", greet),), inputs=("name",))
forgets = Workflow("forgets", (Step("drop", drop_children), shell_step("echo", ["true"])))
loses = Workflow("loses", (Step("drop", drop_attempts), Step("greet", greet)), inputs=("name",))
ESCAPES = (
    "setsid sh -c 'echo $$ > grandchild.pid; exec sleep 300' < /dev/null > /dev/null 2>&1 & "
    "while [ ! -s grandchild.pid ]; do sleep 0.05; done"
)
escapes = Workflow("escapes", (shell_step("escape", ["sh", "-c", ESCAPES], timeout=30),))
locked = Workflow(
    "locked",
    (shell_step("nap", ["sh", "-c", "touch nap.started; sleep 2"], timeout=5),),
)
"""


adws = start_adws


def runs(project: Path) -> list[dict[str, object]]:
    out = adws(project, "runs", "--json").communicate(timeout=60)[0]
    return list(json.loads(out))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS, encoding="utf-8")
    return tmp_path


def child_pid(project: Path) -> int:
    wait_for(lambda: (project / "child.pid").exists() and (project / "child.pid").read_text())
    return int((project / "child.pid").read_text())


def gone(pid: int) -> bool:
    if not io_ops.process_alive(pid):
        return True
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    return "State:\tZ" in status


@pytest.mark.parametrize(
    ("signum", "code", "name"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGHUP, 129, "SIGHUP")]
)
def test_sigterm_and_sighup_stop_the_child_run_cleanup_and_record_interrupted(
    project: Path, signum: int, code: int, name: str
) -> None:
    process = adws(project, "run", "waits")
    pid = child_pid(project)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    assert (project / "cleaned").read_text() == f"wait: Interrupted: interrupted by {name}"
    wait_for(lambda: gone(pid), 10)
    assert runs(project)[0]["status"] == "interrupted"


def test_a_second_ctrl_c_kills_a_child_that_ignores_sigterm_and_exits_130(project: Path) -> None:
    process = adws(project, "run", "waits")
    pid = child_pid(project)
    process.send_signal(signal.SIGINT)
    time.sleep(0.3)  # the first stops politely; this child ignores SIGTERM
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted again" in err
    wait_for(lambda: gone(pid), 10)
    assert runs(project)[0]["status"] == "interrupted"


def test_a_first_ctrl_c_during_cleanup_lets_it_finish_and_stops_the_rest(project: Path) -> None:
    process = adws(project, "run", "cleans", "-i", "name=a", "--json", "-q")
    wait_for((project / "cleanup.started").exists)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert (project / "cleaned").read_text() == "None"
    summary = json.loads(out)
    assert [step["status"] for step in summary["steps"]] == ["succeeded", "succeeded", "failed"]
    assert summary["error"]["message"] == "interrupted by Ctrl-C"


def test_four_resumes_started_together_run_the_side_effect_once(project: Path) -> None:
    first = adws(project, "run", "effects", "-q")
    first.communicate(timeout=60)
    assert first.returncode == 1
    assert not (project / "effects.log").exists()
    (project / "fixed").touch()
    run_id = str(runs(project)[0]["run_id"])
    resumes = [
        adws(project, "resume", run_id, "-q", env={"ADWS_TEST_SLEEP": "3"}) for _ in range(4)
    ]
    results = [(process.wait(timeout=120), process.communicate()[1]) for process in resumes]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2, 2, 2], results
    assert len((project / "effects.log").read_text().split()) == 1
    refusals = [err for code, err in results if code == 2]
    # One that read the run before another claimed it is told it changed since (compare-and-set);
    # one that read it after is told who runs it. Whichever: the same process, and only it, ran.
    changed = f"run {run_id} changed since this command read it (now running, by process "
    held = f"run {run_id} is being run by process "
    assert all(changed in err or held in err for err in refusals), refusals


def test_a_resume_over_a_child_the_crashed_run_left_running_is_refused_then_forced(
    project: Path,
) -> None:
    process = adws(project, "run", "waits", start_new_session=True)
    pid = child_pid(project)
    process.kill()  # adws dies at once; its child, in its own group, lives on
    process.communicate(timeout=60)
    [run] = runs(project)
    assert run["stale"] is True
    refused = adws(project, "resume", str(run["run_id"]))
    _, err = refused.communicate(timeout=60)
    assert refused.returncode == 2
    assert f"run {run['run_id']} left child process group {pid} running; pass --force" in err
    (project / "child.pid").unlink()
    forced = adws(project, "resume", str(run["run_id"]), "--force")
    wait_for(lambda: gone(pid), 30)
    new_child = child_pid(project)
    forced.send_signal(signal.SIGTERM)
    _, err = forced.communicate(timeout=60)
    assert forced.returncode == 143, err
    assert f"adws: stopped process group {pid} left by run {run['run_id']}" in err
    wait_for(lambda: gone(new_child), 10)


def test_a_lone_surrogate_in_an_input_is_recorded_and_the_run_succeeds(project: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "adws", "run", "greets", "-i", b"name=\xff", "-q"],
        cwd=project,
        env={**os.environ, "ADWS_JOURNAL": str(project / "runs.db"), "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    [run] = runs(project)
    assert (run["status"], run["stale"]) == ("succeeded", False)
    db = sqlite3.connect(project / "runs.db")
    [(inputs,)] = db.execute("SELECT inputs FROM run_inputs").fetchall()
    db.close()
    assert json.loads(inputs)["inputs"]["name"] == "\udcff"


def test_a_journal_that_cannot_record_stops_the_run_before_its_next_step_and_says_so(
    project: Path,
) -> None:
    process = adws(project, "run", "loses", "-i", "name=a", "--journal-wait", "0.3")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        f"adws: the journal {project / 'runs.db'} did not record this run completely"
    )
    assert "StepSucceeded of step 'drop'" in last
    [run] = runs(project)
    assert (run["status"], run["failed_step"]) == ("interrupted", "greet")


def test_runs_piped_into_head_ends_quietly(project: Path) -> None:
    adws(project, "run", "greets", "-i", "name=a", "-q").communicate(timeout=60)
    db = sqlite3.connect(project / "runs.db")
    db.executemany(
        "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
        " VALUES (?, 'greets', 'f', 'failed', '[]', '{}', '2026-01-01')",
        [(f"r{i:05}",) for i in range(2000)],
    )
    db.commit()
    db.close()
    listing = adws(project, "runs", "--json")
    assert listing.stdout is not None
    head = subprocess.Popen(
        ["head", "-c", "1"], stdin=listing.stdout, stdout=subprocess.PIPE, text=True
    )
    listing.stdout.close()  # only head reads it now: when head exits, the pipe is closed
    first, _ = head.communicate(timeout=60)
    _, err = listing.communicate(timeout=60)
    assert (listing.returncode, first, err) == (0, "[", "")


def test_a_child_group_that_cannot_be_recorded_is_named_and_fails_the_exit(project: Path) -> None:
    process = adws(project, "run", "forgets", "-q")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert "did not record this run completely (child process groups [" in last
    assert "no such column: children" in last


def in_a_terminal(project: Path, *argv: str) -> tuple[subprocess.Popen[bytes], int]:
    """Start `adws ARGV` with a new pseudo-terminal as its controlling terminal."""
    main_fd, child_fd = os.openpty()

    def own_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    process = subprocess.Popen(
        [sys.executable, "-m", "adws", *argv],
        cwd=project,
        env={**os.environ, "ADWS_JOURNAL": str(project / "runs.db"), "PYTHONPATH": str(REPO)},
        stdin=child_fd,
        stdout=child_fd,
        stderr=child_fd,
        preexec_fn=own_terminal,  # noqa: PLW1509 - the child's own session and terminal, before exec
    )
    os.close(child_fd)
    return process, main_fd


@pytest.mark.parametrize("argv", [["run", "waits", "--json"], ["run", "waits"]])
def test_closing_the_terminal_runs_cleanup_and_exits_129_without_a_traceback(
    project: Path, argv: list[str]
) -> None:
    process, terminal = in_a_terminal(project, *argv)
    pid = child_pid(project)
    os.close(terminal)  # the terminal window closes: the kernel hangs up the session
    assert process.wait(timeout=60) == 129
    assert (project / "cleaned").read_text() == "wait: Interrupted: interrupted by SIGHUP"
    wait_for(lambda: gone(pid))
    assert [run["status"] for run in runs(project)] == ["interrupted"]


def test_a_journal_locked_by_another_process_does_not_eat_a_steps_timeout(
    project: Path,
) -> None:
    """The step's child groups are journaled off its thread: bookkeeping never times a step out."""
    process = adws(project, "run", "locked", "--json", "-q")
    wait_for((project / "nap.started").exists)
    holder = sqlite3.connect(project / "runs.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock for 8 s
    time.sleep(8)
    holder.execute("COMMIT")
    holder.close()
    out, _ = process.communicate(timeout=60)
    summary = json.loads(out)
    assert (process.returncode, summary["status"]) == (0, "succeeded")
    assert summary["steps"][0]["seconds"] < 5


def test_a_grandchild_that_left_the_process_group_does_not_outlive_its_step(
    project: Path,
) -> None:
    """It called setsid, so killing the group misses it; the mark in its environment does not."""
    process = adws(project, "run", "escapes", "-q")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    grandchild = int((project / "grandchild.pid").read_text())
    wait_for(lambda: gone(grandchild), 10)


def test_resume_force_never_signals_a_group_whose_number_now_belongs_to_someone_else(
    project: Path,
) -> None:
    """The run's recorded group number, reused by an unrelated process, is left alone."""
    process = adws(project, "run", "greets", "-i", "name=a", "-q")
    process.communicate(timeout=60)
    [run] = runs(project)
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)  # not the run's
    try:
        db = sqlite3.connect(project / "runs.db")
        with db:
            db.execute(
                "UPDATE runs SET status = 'failed', children = ? WHERE run_id = ?",
                (json.dumps([stranger.pid]), run["run_id"]),
            )
            db.execute("DELETE FROM attempts WHERE run_id = ?", (run["run_id"],))
        db.close()
        resumed = adws(project, "resume", str(run["run_id"]), "--force")
        _, err = resumed.communicate(timeout=60)
        assert resumed.returncode == 0, err
        assert "stopped process group" not in err
        assert stranger.poll() is None  # still running: never signalled
    finally:
        stranger.kill()
        stranger.wait()


def test_closing_the_terminal_during_a_batch_runs_cleanup_and_exits_129(project: Path) -> None:
    (project / "in.jsonl").write_text("{}\n", encoding="utf-8")
    process, terminal = in_a_terminal(project, "batch", "waits", "in.jsonl", "--json")
    pid = child_pid(project)
    os.close(terminal)  # the terminal window closes: the kernel hangs up the session
    assert process.wait(timeout=60) == 129
    assert (project / "cleaned").read_text() == "wait: Interrupted: interrupted by SIGHUP"
    wait_for(lambda: gone(pid))
