"""One decision acts once: a claim is compare-and-set on what its command read of the run.

`adws approve`, `reject` and `resume` read a run, plan, then claim it. Two
of them started at once used to both act when the first finished inside the
second's read-to-claim window (about 90 ms): a deploy ran twice, a run was
deployed and then recorded `Rejected`, an email went out twice. These tests
start real `adws` processes at once, again and again, and check what ran.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import TYPE_CHECKING

import pytest

from adws.engine.scope import Decision
from adws.journal import Journal, JournalError
from adws.journal.records.holders import Seen
from adws.journal.store.workspaces import approvals_of, decided_statement
from tests.conftest import start_adws

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

FLOWS = """
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import PipelineError, Step, Workflow, approval_step


def note(name):
    def write(ctx):
        with open(name + ".log", "a") as log:
            log.write(ctx.inputs["n"] + "\\n")
        return IOSuccess(ctx)

    return Step(name, write, reads=("n",), writes=(), always_run=name == "cleanup")


def flaky(ctx):
    if not Path("fixed").exists():
        return IOFailure(PipelineError("", "ShellFailed", "not fixed yet"))
    return IOSuccess(ctx)


deploying = Workflow(
    "deploying",
    (approval_step("approve", message="deploy {n}?"), note("deploy"), note("cleanup")),
    inputs=("n",),
)
mailing = Workflow(
    "mailing", (Step("flaky", flaky, reads=(), writes=()), note("mail")), inputs=("n",)
)
"""


@pytest.fixture
def project(tmp_path: Path, journal_at: str) -> Path:
    """A project whose runs go to a journal on each backend (its place kept in `.journal`)."""
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    (tmp_path / ".journal").write_text(journal_at)
    return tmp_path


def journal_of(project: Path) -> str:
    return (project / ".journal").read_text()


def adws(project: Path, *argv: str, seed: int = 0) -> tuple[int, str, str]:
    env = {"PYTHONHASHSEED": str(seed), "ADWS_JOURNAL": journal_of(project)}
    process = start_adws(project, *argv, "--workflows", "workflows", env=env)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def at_once(project: Path, *commands: tuple[str, ...]) -> list[tuple[int, str]]:
    """Start every command before waiting for any: each reads the run before the others end."""
    started = [
        start_adws(
            project,
            *argv,
            "--workflows",
            "workflows",
            env={"PYTHONHASHSEED": str(seed), "ADWS_JOURNAL": journal_of(project)},
        )
        for seed, argv in enumerate(commands, start=1)
    ]
    errors = [process.communicate(timeout=120)[1] for process in started]
    return [(process.returncode, err) for process, err in zip(started, errors, strict=True)]


def lines(project: Path, name: str) -> list[str]:
    log = project / f"{name}.log"
    return log.read_text().splitlines() if log.exists() else []


def last_run(project: Path) -> str:
    journal = Journal(journal_of(project), readonly=True)
    try:
        return str(journal.query("SELECT run_id FROM runs ORDER BY rowid DESC")[0][0])
    finally:
        journal.close()


def status_of(project: Path, run_id: str) -> tuple[str, str | None]:
    journal = Journal(journal_of(project), readonly=True)
    try:
        [row] = journal.query("SELECT status, error FROM runs WHERE run_id = ?", (run_id,))
    finally:
        journal.close()
    return row[0], None if row[1] is None else ("Rejected" if "Rejected" in row[1] else row[1])


ROUNDS = 4


def test_two_approvals_at_once_deploy_once(project: Path) -> None:
    """Of two `adws approve` started at once, one continues the run; the other changes nothing."""
    for n in range(ROUNDS):
        assert adws(project, "run", "deploying", "-i", f"n={n}")[0] == 3
        run_id = last_run(project)
        results = at_once(project, ("approve", run_id, "--by", "ann"), ("approve", run_id))
        assert sorted(code for code, _ in results) == [0, 2], results
        refused = next(err for code, err in results if code == 2)
        assert refused.startswith(f"adws: error: run {run_id} "), refused  # changed, or not waiting
        assert status_of(project, run_id) == ("succeeded", None)
    assert lines(project, "deploy") == [str(n) for n in range(ROUNDS)]
    assert lines(project, "cleanup") == [str(n) for n in range(ROUNDS)]


def test_an_approval_and_a_rejection_at_once_end_the_run_one_way(project: Path) -> None:
    """Approve + reject: the run is deployed and succeeded, or rejected and never deployed."""
    deployed: list[str] = []
    for n in range(ROUNDS):
        assert adws(project, "run", "deploying", "-i", f"n={n}")[0] == 3
        run_id = last_run(project)
        (approve, _), (reject, _) = at_once(
            project, ("approve", run_id), ("reject", run_id, "--reason", "no")
        )
        assert sorted((approve, reject)) in ([0, 2], [1, 2])
        if approve == 0:
            deployed.append(str(n))
            assert status_of(project, run_id) == ("succeeded", None)
        else:
            assert status_of(project, run_id) == ("failed", "Rejected")
        journal = Journal(journal_of(project), readonly=True)
        decided = [q.decision for q in approvals_of(journal, run_id) if q.decision is not None]
        journal.close()
        assert [d.verdict for d in decided] == ["approved" if approve == 0 else "rejected"]
    assert lines(project, "deploy") == deployed
    assert lines(project, "cleanup") == [str(n) for n in range(ROUNDS)]


def test_two_resumes_at_once_send_one_email(project: Path) -> None:
    """Of two `adws resume` started at once, one runs the rest of the run."""
    for n in range(ROUNDS):
        (project / "fixed").unlink(missing_ok=True)
        assert adws(project, "run", "mailing", "-i", f"n={n}")[0] == 1
        run_id = last_run(project)
        (project / "fixed").touch()
        results = at_once(project, ("resume", run_id), ("resume", run_id))
        # The other one was refused, or (started late) found nothing to resume.
        assert sorted(code for code, _ in results) in ([0, 0], [0, 2]), results
        assert status_of(project, run_id) == ("succeeded", None)
    assert lines(project, "mail") == [str(n) for n in range(ROUNDS)]


def test_a_decision_is_stamped_when_it_is_recorded_not_when_the_command_started(
    project: Path,
) -> None:
    """An approval that takes a while to plan records the time it acted, not its start time."""
    assert adws(project, "run", "deploying", "-i", "n=0")[0] == 3
    run_id = last_run(project)
    module = project / "workflows" / "flows.py"
    module.write_text("import time\ntime.sleep(2)\n" + module.read_text())  # a slow import
    started = time.time()
    code, _, err = adws(project, "approve", run_id, "--by", "ann")
    assert code == 0, err
    journal = Journal(journal_of(project), readonly=True)
    (question,) = approvals_of(journal, run_id)
    journal.close()
    assert question.decision is not None
    stamped = datetime.fromisoformat(question.decision.at).timestamp()
    assert stamped >= int(started) + 2  # the journal keeps whole seconds


# -- the claim itself, in one process -----------------------------------------------------------


def waiting_run(project: Path) -> tuple[Journal, str]:
    assert adws(project, "run", "deploying", "-i", "n=0")[0] == 3
    return Journal(journal_of(project)), last_run(project)


def test_a_claim_with_what_was_read_takes_the_run(project: Path) -> None:
    journal, run_id = waiting_run(project)
    record = journal.find(run_id)
    assert not isinstance(record, str)
    assert record.seen == Seen("waiting", 0, record.last_attempt)
    assert record.last_attempt is not None
    assert journal.claim(run_id, seen=record.seen) is None
    assert journal.query("SELECT status FROM runs") == [("running",)]


def test_a_claim_refuses_a_run_that_changed_since_it_was_read_and_records_nothing(
    project: Path,
) -> None:
    journal, run_id = waiting_run(project)
    record = journal.find(run_id)
    assert not isinstance(record, str)
    journal.write("UPDATE runs SET status = 'succeeded' WHERE run_id = ?", (run_id,))
    decision = Decision("approved", "ann", "2000-01-01T00:00:00+00:00", "")
    refused = journal.claim(
        run_id,
        seen=record.seen,
        then=lambda _: [(decided_statement(run_id, "approve", decision), "answered")],
    )
    assert refused == (
        f"run {run_id} changed since this command read it (now succeeded); "
        f"look again: adws status {run_id}"
    )
    assert journal.query("SELECT verdict FROM approvals") == [(None,)]


NEW_ATTEMPT = (
    "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded, seconds)"
    " SELECT run_id, 'approve', 0, 2, 'failed', '', 0 FROM runs"
)


@pytest.mark.parametrize(
    ("change", "now"),
    [
        ("UPDATE runs SET resumes = resumes + 1", "waiting"),
        (NEW_ATTEMPT, "waiting"),
        ("DELETE FROM runs", "gone from the journal"),
    ],
)
def test_a_claim_sees_a_resume_or_a_new_attempt_as_a_change(
    project: Path, change: str, now: str
) -> None:
    journal, run_id = waiting_run(project)
    record = journal.find(run_id)
    assert not isinstance(record, str)
    journal.write(change, ())
    assert journal.claim(run_id, seen=record.seen) == (
        f"run {run_id} changed since this command read it (now {now}); "
        f"look again: adws status {run_id}"
    )


def test_a_decision_on_a_question_answered_meanwhile_is_refused_and_nothing_is_claimed(
    project: Path,
) -> None:
    journal, run_id = waiting_run(project)
    record = journal.find(run_id)
    assert not isinstance(record, str)
    first = Decision("rejected", "bob", "2000-01-01T00:00:00+00:00", "no")
    journal.apply([decided_statement(run_id, "approve", first)])
    second = Decision("approved", "ann", "2000-01-01T00:00:00+00:00", "")
    refused = journal.claim(
        run_id,
        seen=record.seen,
        then=lambda now: [(decided_statement(run_id, "approve", second), f"answered at {now}")],
    )
    assert refused is not None
    assert refused.startswith("answered at 20")
    assert journal.query("SELECT status FROM runs") == [("waiting",)]
    assert journal.query("SELECT verdict, decided_by FROM approvals") == [("rejected", "bob")]


def test_asking_a_closed_journal_whether_a_run_changed_names_the_journal(project: Path) -> None:
    journal, run_id = waiting_run(project)
    record = journal.find(run_id)
    assert not isinstance(record, str)
    assert journal.changed(run_id, record.seen) is None
    journal.close()
    named = re.escape(f"cannot read the run journal {journal.path}: ")
    with pytest.raises(JournalError, match=f"^{named}"):
        journal.changed(run_id, record.seen)
    with pytest.raises(JournalError, match=f"^{named}"):
        journal.columns("approvals")
