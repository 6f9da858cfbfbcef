"""`adws cancel`: a person ends a run, whatever it is doing and wherever it runs.

Every command is a real `python -m adws` process; the journal is a SQLite
file or a real PostgreSQL server (`journal_at`). A second host is a UTS
namespace (`unshare --uts`, as root), as in `test_hosts.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from adws.journal.store.workspaces import approvals_of
from tests.conftest import REPO, wait_for

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

FLOWS = """
import os
import time

import attrs

from returns.io import IOFailure, IOSuccess

from adws import PipelineError, Step, Workflow, approval_step


def log(name, line):
    with open(name, "a") as out:
        out.write(line + "\\n")


def slow(ctx):
    log("started.log", ctx.inputs["n"])
    while os.path.exists("hold"):
        time.sleep(0.05)
    log("ran.log", ctx.inputs["n"])
    return IOSuccess(ctx)


def cleanup(ctx):
    failure = ctx.failure
    said = "none" if failure is None else f"{failure.error_type}: {failure.message}"
    log("cleanup.log", said)
    return IOSuccess(ctx)


def park(ctx):
    context = {"wake_at": 4102444800.0, "reason": "test limit"}
    return IOFailure(PipelineError("park", "Parked", "the test's usage limit", context))


def steps(*first):
    return (*first, Step("cleanup", cleanup, always_run=True, reads=(), writes=()))


held = Workflow("held", steps(Step("slow", slow, reads=("n",), writes=())), inputs=("n",))
gated = Workflow(
    "gated",
    steps(approval_step("ship", message="ship {n}?"), Step("go", slow, reads=("n",), writes=())),
    inputs=("n",),
)
parked = Workflow("parked", steps(Step("park", park, reads=("n",), writes=())), inputs=("n",))
first_asks = attrs.evolve(
    approval_step("ship", message="ship?"), when=lambda ctx: ctx.inputs["n"] == "1"
)
mixed = Workflow(
    "mixed", steps(first_asks, Step("go", slow, reads=("n",), writes=())), inputs=("n",)
)
"""


def command(argv: tuple[str, ...], host: str | None) -> list[str]:
    """Run `adws` on this host, or on `host` (a UTS namespace of that name)."""
    line = [sys.executable, "-m", "adws", *argv]
    if host is None:
        return line
    return ["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$@"', "sh", *line]


def start(
    project: Path, journal: str, *argv: str, host: str | None = None
) -> subprocess.Popen[str]:
    """Start `adws ARGV` in `project`, its journal in the environment (never on the command line)."""
    env = {**os.environ, "ADWS_JOURNAL": journal, "PYTHONPATH": str(REPO)}
    env.pop("ADWS_WORKFLOWS", None)
    return subprocess.Popen(
        command(argv, host),
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def adws(project: Path, journal: str, *argv: str, host: str | None = None) -> tuple[int, str, str]:
    """Run `adws ARGV` to its end; return its exit code, stdout and stderr."""
    process = start(project, journal, *argv, host=host)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    return tmp_path


def lines(project: Path, name: str) -> list[str]:
    log = project / name
    return log.read_text().splitlines() if log.exists() else []


def only_run(journal: str) -> str:
    [record] = Journal(journal).runs()
    return record.run_id


def status_json(project: Path, journal: str, run_id: str) -> dict[str, object]:
    code, out, err = adws(project, journal, "status", run_id, "--json")
    assert code == 0, err
    found: dict[str, object] = json.loads(out)
    return found


def test_a_running_run_is_stopped_by_its_holder_and_its_cleanup_sees_cancelled(
    project: Path, journal_at: str
) -> None:
    (project / "hold").touch()
    running = start(project, journal_at, "run", "held", "-i", "n=1", "-q")
    wait_for(lambda: lines(project, "started.log") == ["1"], 60)
    run_id = only_run(journal_at)

    code, out, err = adws(
        project, journal_at, "cancel", run_id, "--reason", "wrong input", "--by", "ana"
    )
    asked = time.monotonic()
    assert (code, err) == (0, ""), err
    assert out.startswith(f"run {run_id}: cancel asked of process {running.pid} on ")
    _, run_err = running.communicate(timeout=60)
    assert time.monotonic() - asked < 10  # the holder looks every second
    assert running.returncode == 1, run_err
    assert lines(project, "ran.log") == []  # stopped as a Ctrl-C stops a step
    assert lines(project, "cleanup.log") == ["Cancelled: cancelled by ana: wrong input"]
    shown = status_json(project, journal_at, run_id)
    assert (shown["status"], shown["cancel"]) == (
        "cancelled",
        {"by": "ana", "at": shown["cancel"]["at"], "reason": "wrong input"},  # type: ignore[index]
    )
    _, listed, _ = adws(project, journal_at, "runs", "--json")
    assert [run["status"] for run in json.loads(listed)] == ["cancelled"]
    code, _, err = adws(project, journal_at, "resume", run_id)
    assert code == 2
    assert f"run {run_id} was cancelled by ana at " in err
    assert err.endswith(": wrong input; a cancelled run is not resumed\n")


def test_a_queued_run_ends_at_once_and_no_worker_starts_it(project: Path, journal_at: str) -> None:
    code, out, err = adws(project, journal_at, "submit", "held", "-i", "n=1")
    assert code == 0, err
    run_id = out.strip()

    assert adws(project, journal_at, "cancel", run_id, "--json") == (
        0,
        json.dumps(
            {"run_id": run_id, "state": "cancelled", "holder": None, "status": None}, indent=2
        )
        + "\n",
        "",
    )
    code, _, err = adws(project, journal_at, "worker", "--once")
    assert code == 0, err
    assert lines(project, "started.log") == []
    shown = status_json(project, journal_at, run_id)
    assert shown["status"] == "cancelled"
    assert shown["error"]["error_type"] == "Cancelled"  # type: ignore[index]


def test_a_waiting_run_runs_its_cleanup_seeing_cancelled_and_cannot_be_approved(
    project: Path, journal_at: str
) -> None:
    code, _, err = adws(project, journal_at, "run", "gated", "-i", "n=1")
    assert code == 3, err
    run_id = only_run(journal_at)
    waiting = status_json(project, journal_at, run_id)
    assert [(a["step"], a["status"]) for a in waiting["attempts"]] == [("ship", "waiting")]  # type: ignore[attr-defined] # a list of dicts

    code, out, err = adws(project, journal_at, "cancel", run_id, "--by", "bo", "-q")
    assert (code, out) == (0, f"run {run_id} cancelled\n"), err
    assert lines(project, "cleanup.log") == ["Cancelled: cancelled by bo"]
    assert lines(project, "started.log") == []
    code, _, err = adws(project, journal_at, "approve", run_id)
    assert (code, err) == (
        2,
        f"adws: error: run {run_id} is not waiting for approval (it is cancelled)\n",
    )


def test_a_parked_run_runs_its_cleanup_seeing_cancelled(project: Path, journal_at: str) -> None:
    code, _, err = adws(project, journal_at, "run", "parked", "-i", "n=1")
    assert code == 75, err
    run_id = only_run(journal_at)

    code, out, err = adws(project, journal_at, "cancel", run_id, "--reason", "not today", "-q")
    assert (code, out) == (0, f"run {run_id} cancelled\n"), err
    assert lines(project, "cleanup.log")[-1].startswith("Cancelled: cancelled by ")
    assert lines(project, "cleanup.log")[-1].endswith(": not today")
    assert status_json(project, journal_at, run_id)["status"] == "cancelled"


def test_a_run_that_ended_or_is_not_there_is_told_apart(project: Path, journal_at: str) -> None:
    code, _, err = adws(project, journal_at, "run", "held", "-i", "n=1")
    assert code == 0, err
    run_id = only_run(journal_at)

    code, _, err = adws(project, journal_at, "cancel", run_id)
    assert (code, err) == (
        2,
        f"adws: error: run {run_id} already succeeded; there is nothing to cancel\n",
    )
    code, _, err = adws(project, journal_at, "cancel", "nope")
    assert code == 2
    assert err.startswith("adws: error: no run 'nope' in ")


def test_a_cancel_racing_an_approval_lets_exactly_one_act_on_the_waiting_run(
    project: Path, journal_at: str
) -> None:
    """Both read the waiting run; the one whose claim lands first acts, compare-and-set.

    The other is told the run changed (or, if it read the run after the
    first had claimed it, acts on what it found then: a cancel of a run
    that now runs is asked of its holder). Never do both act on the wait.
    """
    for n in range(4):
        code, _, err = adws(project, journal_at, "run", "gated", "-i", f"n={n}", "-q")
        assert code == 3, err
        run_id = Journal(journal_at).runs(limit=1)[0].run_id
        approving = start(project, journal_at, "approve", run_id, "-q", "--note", "go")
        cancelling = start(project, journal_at, "cancel", run_id, "-q")
        approved = (approving.wait(timeout=120), approving.communicate()[1])
        cancelled = (cancelling.wait(timeout=120), cancelling.communicate()[1])
        decided = [
            row.decision.verdict
            for row in approvals_of(Journal(journal_at), run_id)
            if row.decision is not None
        ]
        cleaned = [line for line in lines(project, "cleanup.log") if line != "none"]
        if decided == ["approved"]:  # the approval acted on the wait; the cancel did not
            assert approved[0] in {0, 1}, approved
            assert str(n) in lines(project, "started.log")  # the run went on past the wait
            assert cancelled[0] in {0, 2}, cancelled  # refused, or asked of the run's holder
        else:  # the cancel acted on the wait; the approval did not
            assert decided == [], decided
            assert (cancelled[0], approved[0]) == (0, 2), (cancelled, approved)
            assert str(n) not in lines(project, "started.log")
            assert "Cancelled: cancelled by " in cleaned[-1]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a second host is a UTS namespace: `unshare --uts` needs root",
)
def test_a_run_held_on_another_host_is_stopped_by_its_holder_there(
    project: Path, journal_at: str
) -> None:
    (project / "hold").touch()
    running = start(project, journal_at, "run", "held", "-i", "n=1", "-q", host="elsewhere")
    wait_for(lambda: lines(project, "started.log") == ["1"], 60)
    run_id = only_run(journal_at)

    code, out, err = adws(project, journal_at, "cancel", run_id, "--reason", "from here")
    assert code == 0, err
    assert out.endswith("on elsewhere, which stops it within a few seconds\n")
    running.communicate(timeout=60)
    assert running.returncode == 1
    assert lines(project, "cleanup.log")[-1].endswith(": from here")
    assert status_json(project, journal_at, run_id)["status"] == "cancelled"


def test_a_worker_s_held_run_is_stopped_by_the_process_holding_it(
    project: Path, journal_at: str
) -> None:
    (project / "hold").touch()
    code, out, err = adws(project, journal_at, "submit", "held", "-i", "n=1")
    assert code == 0, err
    run_id = out.strip()
    worker = start(project, journal_at, "worker", "--poll", "0.2")
    try:
        wait_for(lambda: lines(project, "started.log") == ["1"], 60)
        code, out, err = adws(project, journal_at, "cancel", run_id)
        assert code == 0, err
        wait_for(lambda: Journal(journal_at).find(run_id).status == "cancelled", 60)  # type: ignore[union-attr]
    finally:
        worker.send_signal(2)
        worker.communicate(timeout=60)
    assert lines(project, "cleanup.log")[-1].startswith("Cancelled: cancelled by ")
    assert lines(project, "ran.log") == []


def test_batch_cancel_ends_queued_runs_and_stops_the_running_one(
    project: Path, journal_at: str
) -> None:
    (project / "hold").touch()
    (project / "inputs.jsonl").write_text('{"n": "1"}\n{"n": "2"}\n{"n": "3"}\n')
    batch = start(project, journal_at, "batch", "held", "inputs.jsonl", "--concurrency", "1", "-q")
    wait_for(lambda: lines(project, "started.log") == ["1"], 60)
    batch_id = _batch_of(journal_at)

    code, out, err = adws(project, journal_at, "batch", "--cancel", batch_id, "--reason", "enough")
    assert code == 0, err
    said = out.splitlines()
    assert len(said) == 3
    assert sum("cancel asked of process" in line for line in said) == 1
    assert sum(line.endswith(" cancelled") for line in said) == 2
    _, batch_err = batch.communicate(timeout=60)
    assert batch.returncode == 1, batch_err
    assert lines(project, "ran.log") == []
    assert lines(project, "cleanup.log") == ["Cancelled: cancelled by " + _login() + ": enough"]
    code, listed, _ = adws(project, journal_at, "runs", "--batch", batch_id, "--json")
    assert [run["status"] for run in json.loads(listed)] == ["cancelled"] * 3


def _batch_of(journal: str) -> str:
    rows = Journal(journal).query("SELECT batch_id FROM batches")
    return str(rows[0][0])


def _login() -> str:
    import getpass  # noqa: PLC0415 - who cancels when no one is named

    return getpass.getuser()


def test_batch_cancel_is_told_what_it_cannot_do(project: Path, journal_at: str) -> None:
    code, _, err = adws(project, journal_at, "batch", "--cancel", "b0", "held", "x.jsonl")
    assert (code, err) == (
        2,
        (
            "adws: error: --cancel BATCH cancels a batch's runs; leave out WORKFLOW, "
            "INPUTS.jsonl and --resume\n"
        ),
    )
    code, _, err = adws(project, journal_at, "submit", "held", "-i", "n=1")  # makes the journal
    assert code == 0, err
    code, _, err = adws(project, journal_at, "batch", "--cancel", "nope")
    assert code == 2
    assert err.startswith("adws: error: no batch 'nope' in ")


def test_batch_cancel_leaves_ended_runs_and_names_a_run_it_could_not_cancel(
    project: Path, journal_at: str
) -> None:
    (project / "inputs.jsonl").write_text('{"n": "1"}\n{"n": "2"}\n')
    code, _, err = adws(project, journal_at, "batch", "gated", "inputs.jsonl", "-q")
    assert code == 3, err  # both wait for approval
    batch_id = _batch_of(journal_at)
    first, second = (run.run_id for run in Journal(journal_at).runs(batch=batch_id))
    code, _, err = adws(project, journal_at, "approve", first, "-q")
    assert code == 0, err
    code, out, err = adws(project, journal_at, "batch", "--cancel", batch_id, "-q")
    assert (code, out, err) == (0, f"run {second} cancelled\n", "")
    code, out, err = adws(project, journal_at, "batch", "--cancel", batch_id)
    assert (code, out, err) == (0, "", "")  # nothing left that has not ended


def test_batch_cancel_names_a_run_its_live_batch_holds_and_stops_the_running_one(
    project: Path, journal_at: str
) -> None:
    (project / "hold").touch()
    (project / "inputs.jsonl").write_text('{"n": "1"}\n{"n": "2"}\n')
    batch = start(project, journal_at, "batch", "mixed", "inputs.jsonl", "--concurrency", "2", "-q")
    batch_id = ""

    def both_there() -> bool:
        nonlocal batch_id
        found = Journal(journal_at).runs()
        statuses = sorted(run.status for run in found)
        batch_id = _batch_of(journal_at) if found else ""
        return statuses == ["running", "waiting"] and lines(project, "started.log") == ["2"]

    wait_for(both_there, 60)
    waiting = Journal(journal_at).runs(status="waiting")[0].run_id
    code, out, err = adws(project, journal_at, "batch", "--cancel", batch_id)
    assert code == 2
    assert "cancel asked of process" in out
    assert err.startswith(f"adws: run {waiting} was not cancelled: run {waiting} belongs to batch")
    _, batch_err = batch.communicate(timeout=60)
    assert batch.returncode == 1, batch_err  # a cancelled run is no success
    assert lines(project, "cleanup.log")[-1].startswith("Cancelled: cancelled by ")


def test_a_run_that_stops_as_its_cancel_is_asked_is_named_changed(
    project: Path, postgres_url: str
) -> None:
    """The request waits on the row a claim holds; the run stops meanwhile: nothing is asked."""
    import psycopg  # noqa: PLC0415 - this test alone drives the server itself

    code, _, err = adws(project, postgres_url, "run", "held", "-i", "n=1", "-q")
    assert code == 0, err
    run_id = only_run(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(
            "UPDATE runs SET status = 'running', pid = 1, holder_started = NULL WHERE run_id = %s",
            (run_id,),
        )
        with db.transaction():
            db.execute("SELECT 1 FROM runs WHERE run_id = %s FOR UPDATE", (run_id,))
            cancelling = start(project, postgres_url, "cancel", run_id)

            def waits() -> bool:
                row = db.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
                return row is not None and row[0] > 0

            wait_for(waits, 60)  # its request waits for this transaction's row lock
            db.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = %s", (run_id,))
        _, err = cancelling.communicate(timeout=60)
    assert cancelling.returncode == 2
    assert err == (
        f"adws: error: run {run_id} changed since this command read it (now interrupted);"
        f" look again: adws status {run_id}\n"
    )
