"""The journal first, as the fault-injection pass found it: a server stopped mid-run, a full disk.

Each run is a real `adws run` process; its steps append to a file (the side
effects). The test stops the journal (a real PostgreSQL server stopped and
started again, or a small tmpfs filled up) while the run stands between two
steps (the second step's `when` waits for the test), then lets it go on.
Within `--journal-wait` the run goes on and records everything; past it,
the run stops `interrupted` before the step, and `adws resume` (the journal
back) runs what is left: every side effect happens exactly once.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests import postgres
from tests.conftest import REPO, wait_for

if TYPE_CHECKING:
    from collections.abc import Iterator

FLOWS = """
import time
from pathlib import Path

from adws import Workflow, shell_step


def at_the_boundary(ctx):
    Path("boundary").touch()
    while not Path("go").exists():
        time.sleep(0.02)
    return True


effects = Workflow(
    "effects",
    (
        shell_step("one", ["sh", "-c", "echo one >> side"]),
        shell_step("two", ["sh", "-c", "echo two >> side"], when=at_the_boundary),
        shell_step("three", ["sh", "-c", "echo three >> side"]),
        shell_step("cleanup", ["sh", "-c", "echo cleanup >> side"], always_run=True),
    ),
)
"""


def project_at(folder: Path) -> Path:
    (folder / "workflows").mkdir(parents=True)
    (folder / "workflows" / "flows.py").write_text(FLOWS, encoding="utf-8")
    return folder


STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _nothing_left_running() -> Iterator[None]:
    """Kill, by its pid, every `adws` a failed test left waiting (for `go`, say)."""
    yield
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
            process.communicate()


def adws(project: Path, journal: str, *argv: str, seed: int = 1) -> subprocess.Popen[str]:
    env = {**os.environ, "ADWS_JOURNAL": journal, "PYTHONPATH": str(REPO)}
    env["PYTHONHASHSEED"] = str(seed)
    env.pop("ADWS_WORKFLOWS", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "adws", *argv],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    STARTED.append(process)
    return process


def side(project: Path) -> list[str]:
    return (project / "side").read_text().split()


def run_id_of(project: Path, journal: str) -> str:
    out, _ = adws(project, journal, "runs", "--json", seed=7).communicate(timeout=120)
    [run] = json.loads(out)
    return str(run["run_id"])


def status_of(project: Path, journal: str) -> str:
    out, _ = adws(project, journal, "runs", "--json", seed=8).communicate(timeout=120)
    [run] = json.loads(out)
    return str(run["status"])


# -- PostgreSQL stopped and started again ----------------------------------------------


class Restartable:
    """A private PostgreSQL server this test stops and starts again on the same port."""

    def __init__(self, server: postgres.Server) -> None:
        self.server = server
        self.process: subprocess.Popen[bytes] = server.process

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)  # a fast shutdown: clients are cut off
        self.process.wait(30)

    def start(self) -> None:
        import psycopg  # noqa: PLC0415 - only with psycopg installed

        user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        folder = self.server.folder
        options = ["fsync=off", "listen_addresses=127.0.0.1", "max_connections=200"]
        with (folder / "log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    *(postgres.BIN / "postgres", "-D", folder / "data"),
                    *("-p", str(self.server.port), "-k", folder / "sockets"),
                    *(word for option in options for word in ("-c", option)),
                ],
                preexec_fn=postgres._as(user),  # noqa: PLW1509 - as the server was started
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(self.server.url(), connect_timeout=5).close()
            except psycopg.OperationalError:
                assert time.monotonic() < deadline, (folder / "log").read_text()
                time.sleep(0.05)
            else:
                return


@pytest.fixture
def restartable() -> Iterator[Restartable]:
    reason = postgres.missing()
    if reason is not None:
        pytest.skip(reason)
    with postgres.running_server() as server:
        found = Restartable(server)
        try:
            yield found
        finally:
            if found.process is not server.process:
                found.stop()


def test_a_server_stopped_between_two_steps_within_the_wait_loses_nothing(
    tmp_path: Path, restartable: Restartable
) -> None:
    project = project_at(tmp_path / "p")
    url = postgres.Databases(restartable.server).fresh()
    run = adws(project, url, "run", "effects", "-q", "--journal-wait", "60")
    wait_for((project / "boundary").exists, 60)
    restartable.stop()
    (project / "go").touch()
    time.sleep(2.0)  # the run tries to record the next step's start, on new connections
    restartable.start()
    _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert side(project) == ["one", "two", "three", "cleanup"]
    assert status_of(project, url) == "succeeded"


def test_a_server_stopped_past_the_wait_stops_the_run_and_resume_runs_the_rest_once(
    tmp_path: Path, restartable: Restartable
) -> None:
    project = project_at(tmp_path / "p")
    url = postgres.Databases(restartable.server).fresh()
    run = adws(project, url, "run", "effects", "-q", "--journal-wait", "1")
    wait_for((project / "boundary").exists, 60)
    run_id = run_id_of(project, url)
    restartable.stop()
    (project / "go").touch()
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    assert "did not record this run completely (StepStarted of step 'two'" in err
    assert side(project) == ["one", "cleanup"]  # two never started; cleanup ran
    restartable.start()
    resumed = adws(project, url, "resume", run_id, "-q", seed=2)
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert side(project) == ["one", "cleanup", "two", "three", "cleanup"]
    assert status_of(project, url) == "succeeded"


# -- a SQLite journal on a full disk ----------------------------------------------------


@contextlib.contextmanager
def small_disk(folder: Path) -> Iterator[Path]:
    """Mount a 2 MB tmpfs at `folder` (root only), unmounted at the end."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(disk: Path) -> Path:
    """Fill the file system with one file; return it (remove it to free the disk)."""
    filler = disk / "filler"
    with contextlib.suppress(OSError), filler.open("wb", buffering=0) as out:
        while True:
            out.write(b"\0" * 4096)
    return filler


@pytest.mark.parametrize("wait", ["60", "1"])
def test_a_full_disk_between_two_steps_loses_nothing_once_resumed(
    tmp_path: Path, wait: str
) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root mounts a small file system")
    project = project_at(tmp_path / "p")
    with small_disk(tmp_path / "disk") as disk:
        journal = str(disk / "runs.db")
        run = adws(project, journal, "run", "effects", "-q", "--journal-wait", wait)
        wait_for((project / "boundary").exists, 60)
        filler = fill(disk)
        (project / "go").touch()
        if wait == "60":
            time.sleep(2.0)
            filler.unlink()
            _, err = run.communicate(timeout=120)
            assert run.returncode == 0, err
        else:
            _, err = run.communicate(timeout=120)
            assert run.returncode == 130, err
            assert "did not record this run completely (StepStarted of step 'two'" in err
            assert side(project) == ["one", "cleanup"]
            filler.unlink()
            resumed = adws(project, journal, "resume", run_id_of(project, journal), seed=2)
            _, err = resumed.communicate(timeout=120)
            assert resumed.returncode == 0, err
        # every step once; cleanup once per session
        expected = ["one", "two", "three", "cleanup"]
        if wait == "1":
            expected = ["one", "cleanup", "two", "three", "cleanup"]
        assert side(project) == expected
        assert status_of(project, journal) == "succeeded"
