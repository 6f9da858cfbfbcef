"""Runs belong to a host: a decision from another host is recorded there, the run continues here.

A second host is a UTS namespace with its own host name (`unshare --uts`,
as root); the journal is shared (a file both see, or a PostgreSQL server).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from tests.conftest import REPO

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None,
        reason="a second host is a UTS namespace: `unshare --uts` needs root",
    ),
]

FLOWS = """
from returns.io import IOSuccess

from adws import Step, Workflow, approval_step


def note(ctx):
    with open("shipped.log", "a") as log:
        log.write(ctx.inputs["n"] + "\\n")
    return IOSuccess(ctx)


gated = Workflow(
    "gated",
    (approval_step("ship", message="ship {n}?"), Step("note", note, reads=("n",), writes=())),
    inputs=("n",),
)
"""


def adws(project: Path, journal: str, *argv: str, host: str | None = None) -> tuple[int, str]:
    """Run `adws` on this host, or on `host` (a UTS namespace of that name)."""
    command = [sys.executable, "-m", "adws", *argv]
    if host is not None:
        command = ["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$@"', "sh", *command]
    env = {**os.environ, "ADWS_JOURNAL": journal, "PYTHONPATH": str(REPO)}
    env.pop("ADWS_WORKFLOWS", None)
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, done.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    return tmp_path


def waiting(project: Path, journal: str, n: str) -> str:
    code, err = adws(project, journal, "run", "gated", "-i", f"n={n}")
    assert code == 3, err
    return str(Journal(journal).runs(status="waiting")[0].run_id)


def shipped(project: Path) -> list[str]:
    log = project / "shipped.log"
    return log.read_text().splitlines() if log.exists() else []


def test_an_approval_from_another_host_is_recorded_and_the_run_continues_on_its_own(
    project: Path, journal_at: str
) -> None:
    run_id = waiting(project, journal_at, "1")
    here = socket.gethostname()
    code, err = adws(project, journal_at, "approve", run_id, "--by", "rev", host="laptop")
    assert (code, err.splitlines()[-1]) == (
        0,
        f"run {run_id} continues on host {here}: adws worker there, or adws resume {run_id} on {here}",
    )
    journal = Journal(journal_at)
    assert journal.query("SELECT verdict, decided_by FROM approvals") == [("approved", "rev")]
    assert (journal.find(run_id).status, shipped(project)) == ("waiting", [])  # type: ignore[union-attr] # found
    code, err = adws(project, journal_at, "resume", run_id, host="laptop")
    assert (code, err.splitlines()[-1]) == (
        2,
        (
            f"adws: error: run {run_id} belongs to host {here}: resume it there (adws worker, "
            f"or adws resume {run_id} on {here}), or pass --here to continue it on this host"
        ),
    )
    code, err = adws(project, journal_at, "resume", run_id)
    assert (code, shipped(project)) == (0, ["1"]), err
    assert Journal(journal_at).find(run_id).status == "succeeded"  # type: ignore[union-attr] # found


def test_resume_here_takes_a_run_of_another_host_unless_it_has_worktrees_there(
    project: Path, journal_at: str
) -> None:
    run_id = waiting(project, journal_at, "2")
    journal = Journal(journal_at)
    journal.write(
        "INSERT INTO worktrees (run_id, label, step, repo, path, branch, base, tree, state,"
        " recorded) VALUES (?, 'main', 'ship', '/r', '/w', 'b', 'c', 't', 'present', 'now')",
        (run_id,),
    )
    code, err = adws(project, journal_at, "approve", run_id, "--by", "rev", host="laptop")
    assert code == 0, err
    code, err = adws(project, journal_at, "resume", run_id, "--here", host="laptop")
    here = socket.gethostname()
    assert (code, err.splitlines()[-1]) == (
        2,
        (
            f"adws: error: run {run_id} has worktrees present on host {here} (main): --here "
            f"cannot continue it without them; resume it on {here}"
        ),
    )
    journal.write("UPDATE worktrees SET state = 'removed' WHERE run_id = ?", (run_id,))
    code, err = adws(project, journal_at, "resume", run_id, "--here", host="laptop")
    assert (code, shipped(project)) == (0, ["2"]), err
    record = Journal(journal_at).find(run_id)
    assert (record.status, record.host) == ("succeeded", "laptop")  # type: ignore[union-attr] # found


def test_a_second_decision_from_another_host_is_refused_once_the_first_is_recorded(
    project: Path, journal_at: str
) -> None:
    run_id = waiting(project, journal_at, "3")
    code, err = adws(project, journal_at, "approve", run_id, "--by", "rev", host="laptop")
    assert code == 0, err
    code, err = adws(
        project, journal_at, "reject", run_id, "--by", "ops", "--reason", "no", host="desk"
    )
    assert (code, err.splitlines()[-1]) == (
        2,
        (
            f"adws: error: the question at step 'ship' of run {run_id} was answered meanwhile; "
            f"look again: adws status {run_id}"
        ),
    )
    journal = Journal(journal_at)
    assert journal.query("SELECT verdict, decided_by FROM approvals") == [("approved", "rev")]
