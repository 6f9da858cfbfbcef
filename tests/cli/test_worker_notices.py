"""A worker on PostgreSQL wakes on the journal's notices, and every worker at its parked runs' time.

Real `adws` processes against a real server (`tests/postgres.py`): a worker
polling once a minute starts a submitted run, continues one approved or
cancelled on another host (a UTS namespace, as in `test_worker.py`), and
wakes a parked run at its `wake_at`, each well before its poll; a forged
notice starts nothing; a dropped listening connection is opened again.
Speed is measured in `benchmarks/team_bench.py`, not here: these tests only
wait less than the poll interval.
"""

from __future__ import annotations

import contextlib
import signal
import time
from typing import TYPE_CHECKING

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adws.journal import Journal
from tests.cli.test_worker import FLOWS, adws, lines, needs_hosts, start, submit
from tests.conftest import wait_for

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.slow

POLL = "60"
"""Each worker's poll: whatever it starts within `SOON`, it started on a notice or a wake."""
SOON = 10.0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    return tmp_path


def listeners(url: str) -> list[int]:
    """The server processes listening for notices of due runs in this database."""
    with psycopg.connect(url, autocommit=True) as db:
        rows = db.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND query = 'LISTEN adws_due'"
        ).fetchall()
    return [row[0] for row in rows]


@contextlib.contextmanager
def polling_worker(
    project: Path, journal: str, poll: str = POLL
) -> Iterator[subprocess.Popen[str]]:
    """An `adws worker --poll 60`, its first round over (listening, on a server); then SIGTERM."""
    process = start(project, journal, "worker", "--poll", poll)
    try:
        if journal.startswith("postgresql://"):
            wait_for(lambda: len(listeners(journal)) == 1)
        wait_for(lambda: Journal(journal).query("SELECT COUNT(*) FROM workers") == [(1,)])
        time.sleep(0.3)  # its first round reads the journal after it listens
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)  # promptly: its wait on the server is a tick long
    assert process.returncode == 143


@pytest.fixture
def worker(project: Path, postgres_url: str) -> Iterator[subprocess.Popen[str]]:
    with polling_worker(project, postgres_url) as process:
        yield process


def status(journal: str, run_id: str) -> str:
    found = Journal(journal).find(run_id)
    assert not isinstance(found, str), found
    return found.status


def test_a_worker_polling_every_minute_starts_a_submitted_run_on_its_notice(
    project: Path, postgres_url: str, worker: subprocess.Popen[str]
) -> None:
    run_id = submit(project, postgres_url, "noted", "1")
    wait_for(lambda: lines(project / "ran.log") == ["1"], SOON)
    assert worker.stdout is not None
    assert worker.stdout.readline() == f"{run_id} noted: succeeded (exit 0)\n"
    again = submit(project, postgres_url, "noted", "2")
    wait_for(lambda: lines(project / "ran.log") == ["1", "2"], SOON)
    assert worker.stdout.readline() == f"{again} noted: succeeded (exit 0)\n"


def waiting(project: Path, journal: str, n: str) -> str:
    """Run `gated` here until it waits for its approval; return its id."""
    done = adws(project, journal, "run", "gated", "-i", f"n={n}", "--json")
    assert done.returncode == 3, done.stderr
    [run] = Journal(journal).runs(status="waiting")
    return run.run_id


@needs_hosts
def test_an_approval_on_another_host_is_continued_here_on_its_notice(
    project: Path, postgres_url: str, worker: subprocess.Popen[str]
) -> None:
    run_id = waiting(project, postgres_url, "11")
    approved = adws(project, postgres_url, "approve", run_id, "--by", "rev", host="laptop")
    assert approved.returncode == 0, approved.stderr
    wait_for(lambda: lines(project / "ran.log") == ["11"], SOON)
    assert worker.stdout is not None
    assert worker.stdout.readline() == f"{run_id} gated: succeeded (exit 0)\n"


@needs_hosts
def test_a_cancel_on_another_host_runs_the_cleanup_here_on_its_notice(
    project: Path, postgres_url: str, worker: subprocess.Popen[str]
) -> None:
    run_id = waiting(project, postgres_url, "12")
    cancelled = adws(project, postgres_url, "cancel", run_id, "--by", "bo", host="laptop")
    assert cancelled.returncode == 0, cancelled.stderr
    wait_for(lambda: status(postgres_url, run_id) == "cancelled", SOON)
    assert worker.stdout is not None
    assert worker.stdout.readline().startswith(f"{run_id} gated: cancelled")
    assert lines(project / "ran.log") == []


def parked(project: Path, journal: str, n: str, wake: float) -> str:
    """Make a `shaky` run of this host parked until `wake`, due to succeed then; return its id."""
    (project / "fail").touch()
    assert adws(project, journal, "run", "shaky", "-i", f"n={n}").returncode == 1
    [run] = Journal(journal).runs(status="failed")
    Journal(journal).write(
        "UPDATE runs SET status = 'parked', wake_at = ? WHERE run_id = ?", (wake, run.run_id)
    )
    (project / "fail").unlink()
    return run.run_id


def woken_at(journal: str, run_id: str) -> float:
    """When the run's last attempt started (Unix seconds)."""
    [(started,)] = Journal(journal).query(
        "SELECT MAX(started) FROM attempts WHERE run_id = ?", (run_id,)
    )
    return float(started)


def test_a_parked_run_is_woken_at_its_wake_at_not_at_the_next_poll(
    project: Path, journal_at: str
) -> None:
    wake = time.time() + 2
    run_id = parked(project, journal_at, "13", wake)
    with polling_worker(project, journal_at) as process:
        wait_for(lambda: lines(project / "ran.log") == ["13"], SOON)
        assert process.stdout is not None
        assert process.stdout.readline() == f"{run_id} shaky: succeeded (exit 0)\n"
    assert woken_at(journal_at, run_id) >= wake


def test_a_run_parked_while_the_worker_listens_is_woken_at_its_new_time(
    project: Path, postgres_url: str, worker: subprocess.Popen[str]
) -> None:
    wake = time.time() + 2
    run_id = parked(project, postgres_url, "14", wake)
    wait_for(lambda: lines(project / "ran.log") == ["14"], SOON)
    assert worker.stdout is not None
    assert worker.stdout.readline() == f"{run_id} shaky: succeeded (exit 0)\n"
    assert woken_at(postgres_url, run_id) >= wake


def beat(journal: str) -> float:
    [(at,)] = Journal(journal).query("SELECT beat FROM workers")
    return float(at)


PAYLOADS = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=400),
    st.sampled_from(["far", "undecided", "{", '{"run": "far", "what": "queued"}', "x" * 7999]),
    st.builds(
        lambda run, what: f'{{"run": "{run}", "what": "{what}", "wake_at": 0}}',
        st.sampled_from(["far", "undecided", "nosuch", ""]),
        st.sampled_from(["queued", "decided", "cancelled", "parked", "interrupted"]),
    ),
)
"""Whatever anyone may send on the channel: text, the names of runs not due, a huge payload."""


def test_a_forged_notice_brings_a_round_forward_and_starts_nothing_not_due(
    project: Path, postgres_url: str, worker: subprocess.Popen[str]
) -> None:
    far = parked(project, postgres_url, "15", time.time() + 3600)
    undecided = waiting(project, postgres_url, "16")
    journal = Journal(postgres_url)
    journal.write("UPDATE runs SET run_id = 'far' WHERE run_id = ?", (far,))
    journal.write("UPDATE runs SET run_id = 'undecided' WHERE run_id = ?", (undecided,))
    journal.write("UPDATE approvals SET run_id = 'undecided' WHERE run_id = ?", (undecided,))
    before = [(run.run_id, run.status, run.resumes) for run in journal.runs()]
    with psycopg.connect(postgres_url, autocommit=True) as forger:

        @settings(max_examples=30)
        @given(payload=PAYLOADS)
        def forged_notice_starts_nothing(payload: str) -> None:
            last = beat(postgres_url)
            forger.execute("SELECT pg_notify('adws_due', %s)", (payload,))
            wait_for(lambda: beat(postgres_url) > last, SOON)  # a round, well before the poll
            assert [(run.run_id, run.status, run.resumes) for run in journal.runs()] == before

        forged_notice_starts_nothing()
    assert lines(project / "ran.log") == []


def test_a_dropped_listening_connection_is_said_once_polled_meanwhile_and_opened_again(
    project: Path, postgres_url: str
) -> None:
    name = postgres_url.rsplit("/", 1)[1]
    shown = postgres_url.replace(postgres_url.split(":")[2].split("@", maxsplit=1)[0], "***")
    with (
        polling_worker(project, postgres_url, "0.5") as process,
        psycopg.connect(postgres_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin,
    ):
        [first] = listeners(postgres_url)
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        assert process.stderr is not None
        assert process.stderr.readline().startswith("adws worker: process ")
        said = process.stderr.readline()
        assert said.startswith(f"adws worker: cannot listen for due runs on {shown} (")
        assert said.endswith("); looking every 0.5s until it can\n")
        time.sleep(1.2)  # several rounds (its journal's connection kept) cannot listen: said once
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        assert (
            process.stderr.readline() == f"adws worker: listening for due runs on {shown} again\n"
        )
        [second] = listeners(postgres_url)
        assert second != first
        run_id = submit(project, postgres_url, "noted", "18")
        wait_for(lambda: status(postgres_url, run_id) == "succeeded", SOON)
    assert lines(project / "ran.log") == ["18"]
