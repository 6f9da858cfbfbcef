"""What the journal keeps of worktrees and approvals, and how a resume reads drift from it."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import attrs
import pytest
from returns.io import IOFailure, IOResult

from adws import (
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    approval_step,
    run_workflow,
    worktree,
)
from adws.journal import Journal, JournalObserver
from adws.journal.records.runs import AttemptRecord
from adws.journal.records.workspaces import ApprovalRecord, WorktreeRecord, decisions_for
from adws.journal.store.prune import prune
from adws.journal.store.workspaces import approvals_of, decide, worktrees_of
from adws.workspaces import Decision
from adws.workspaces.drift import drifted
from tests.workspaces.conftest import git, writes

APPROVED = Decision("approved", "ann", "2026-01-01T00:05:00+00:00", "fine")


def half_done(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    (Path(str(ctx.inputs["worktree"])) / "half.txt").write_text("half\n")
    return IOFailure(PipelineError("", "ShellFailed", "checks failed"))


def kept_run(repo: Path, tmp_path: Path, journal: Journal) -> WorktreeRecord:
    """Run a worktree step that fails, so its worktree is kept; return its journal record."""
    run_workflow(
        Workflow("w", (worktree(Step("impl", half_done)),)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id="r1",
        worktrees=str(tmp_path / "wt"),
        observers=[JournalObserver(journal, "f")],
    )
    (record,) = worktrees_of(journal, "r1")
    return record


def test_the_journal_keeps_each_worktrees_base_and_latest_hash(repo: Path, tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    record = kept_run(repo, tmp_path, journal)
    folder = tmp_path / "wt" / "r1" / "impl"
    assert (record.label, record.step, record.repo, record.path, record.branch) == (
        "impl",
        "impl",
        str(repo),
        str(folder.resolve()),
        "adws/r1/impl",
    )
    assert (record.base, record.state) == (git(repo, "rev-parse", "main"), "present")
    assert len(record.tree) == 40
    assert drifted([record], "r1") == []


def test_an_edited_worktree_is_drift_naming_the_files(repo: Path, tmp_path: Path) -> None:
    record = kept_run(repo, tmp_path, Journal(tmp_path / "runs.db"))
    folder = Path(record.path)
    (folder / "half.txt").write_text("edited by hand\n")
    (folder / "extra.txt").write_text("new\n")
    assert drifted([record], "r1") == [
        f"worktree impl ({folder}) changed since run r1 last recorded it: extra.txt, half.txt"
    ]


def test_a_missing_or_broken_worktree_is_drift(repo: Path, tmp_path: Path) -> None:
    record = kept_run(repo, tmp_path, Journal(tmp_path / "runs.db"))
    folder = Path(record.path)
    dotgit = (folder / ".git").read_text()
    (folder / ".git").unlink()
    assert drifted([record], "r1") == [
        (
            f"worktree impl ({folder}): its .git points at nothing, not at {record.gitdir}, where"
            " git made it"
        )
    ]
    (folder / ".git").write_text(dotgit)
    shutil.rmtree(Path(record.gitdir))
    (problem,) = drifted([record], "r1")
    assert problem.startswith(f"worktree impl ({folder}) is no longer a git worktree: `git -C")
    shutil.rmtree(folder)
    assert drifted([record], "r1") == [f"worktree impl ({folder}) is missing"]


def test_a_worktree_journaled_before_adws_kept_its_git_directory_is_checked_against_gits_record(
    repo: Path, tmp_path: Path
) -> None:
    record = kept_run(repo, tmp_path, Journal(tmp_path / "runs.db"))
    older = attrs.evolve(record, gitdir="", attempts=None)
    assert drifted([older], "r1") == []
    elsewhere = tmp_path / "elsewhere"
    (Path(record.path) / ".git").write_text(f"gitdir: {elsewhere}\n")
    assert drifted([older], "r1") == [
        (
            f"worktree impl ({record.path}): its .git points at {elsewhere}, not at"
            f" {record.gitdir}, where git made it"
        )
    ]
    shutil.rmtree(Path(record.gitdir))
    assert drifted([older], "r1") == [
        (
            f"worktree impl ({record.path}) is no longer a git worktree: its repository {repo}"
            " keeps no record of it"
        )
    ]


def test_a_hash_git_cannot_compare_still_counts_as_drift(repo: Path, tmp_path: Path) -> None:
    record = kept_run(repo, tmp_path, Journal(tmp_path / "runs.db"))
    forged = attrs.evolve(record, tree="0" * 40)
    assert drifted([forged], "r1") == [
        f"worktree impl ({record.path}) changed since run r1 last recorded it: its content"
    ]


def test_only_worktrees_adws_made_for_the_run_that_are_there_are_checked(
    repo: Path, tmp_path: Path
) -> None:
    record = kept_run(repo, tmp_path, Journal(tmp_path / "runs.db"))
    elsewhere = attrs.evolve(record, path=str(repo))
    assert drifted([elsewhere], "r1") == [
        f"worktree impl ({repo}) is not a worktree adws made for run r1"
    ]
    removed = attrs.evolve(record, state="removed", path="/nowhere")
    unknown = attrs.evolve(record, tree="")
    (Path(record.path) / "half.txt").write_text("changed\n")
    assert drifted([removed, unknown], "r1") == []


def test_a_removed_worktree_is_journaled_removed_with_its_base(repo: Path, tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    run_workflow(
        Workflow("w", (worktree(writes("impl", {"a": "a\n"})),)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id="r2",
        worktrees=str(tmp_path / "wt"),
        observers=[JournalObserver(journal, "f")],
    )
    (record,) = worktrees_of(journal, "r2")
    assert (record.state, record.tree, record.base) == (
        "removed",
        "",
        git(repo, "rev-parse", "main"),
    )


def test_worktrees_are_listed_in_the_order_they_were_made_however_they_ended(
    repo: Path, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "runs.db")
    run_workflow(
        # The outer worktree is made first, and journaled again after the inner one ends.
        Workflow("w", (worktree(worktree(writes("impl", {"a": "a\n"})), name="outer"),)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id="r3",
        worktrees=str(tmp_path / "wt"),
        observers=[JournalObserver(journal, "f")],
    )
    assert [(tree.label, tree.state) for tree in worktrees_of(journal, "r3")] == [
        ("outer", "removed"),
        ("impl", "removed"),
    ]


def test_a_wait_is_journaled_once_and_a_decision_answers_it(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    steps = (approval_step("ok", message="go?", timeout=30),)
    for _ in range(2):  # the second session stops at the same question: it is not asked again
        run_workflow(Workflow("w", steps), run_id="r1", observers=[JournalObserver(journal, "f")])
    (asked,) = approvals_of(journal, "r1")
    assert (asked.step, asked.message, asked.timeout, asked.decision) == ("ok", "go?", 30.0, None)
    decide(journal, "r1", "ok", APPROVED)
    (answered,) = approvals_of(journal, "r1")
    assert answered.decision == APPROVED
    assert answered.to_dict()["decision"] == APPROVED.to_dict()


def test_a_decision_without_a_question_asks_it_first(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    decide(journal, "r1", "ok", APPROVED)
    (record,) = approvals_of(journal, "r1")
    assert (record.message, record.decision) == ("", APPROVED)


def test_rows_no_adws_wrote_are_read_as_absent(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    Journal(path).close()
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO approvals (run_id, step, message, asked, timeout, verdict, decided_by)"
        " VALUES ('r1', 'ok', 'go?', 'yesterday', 'soon', 'maybe', 7)"
    )
    db.commit()
    db.close()
    (record,) = approvals_of(Journal(path), "r1")
    assert (record.timeout, record.decision, record.deadline) == (None, None, None)
    assert not record.expired()


def test_text_adws_kept_as_bytes_comes_back_and_other_bytes_are_read_as_well_as_they_can(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    Journal(path).close()
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO approvals (run_id, step, message, asked) VALUES ('r1', 'ok', ?, ?)",
        ("merge \udcff?".encode("utf-8", "surrogatepass"), b"\xff\xfe"),
    )
    db.commit()
    db.close()
    (record,) = approvals_of(Journal(path), "r1")
    assert (record.message, record.asked) == ("merge \udcff?", "\ufffd\ufffd")


def test_a_wait_expires_at_its_deadline() -> None:
    asked = ApprovalRecord("ok", "go?", "2026-01-01T00:00:00+00:00", 60.0, None)
    start = asked.deadline
    assert start == 1767225660.0
    assert not asked.expired(start - 1)
    assert asked.expired(start)
    bad = ApprovalRecord("ok", "go?", "not a time", 60.0, None)
    assert bad.deadline is None
    answered = ApprovalRecord("ok", "go?", "2026-01-01T00:00:00+00:00", 60.0, APPROVED)
    assert not answered.expired(start + 1)


def test_a_decision_counts_only_while_its_step_is_paused() -> None:
    paused = PipelineError("ok", "AwaitingApproval", "go?")

    def attempt(status: str, error: PipelineError | None = None) -> AttemptRecord:
        return AttemptRecord("ok", 0, 1, status, "t", 0.0, error, None)

    asked = [ApprovalRecord("ok", "go?", "t", None, APPROVED)]
    assert decisions_for(asked, [attempt("failed", paused)]) == {"ok": APPROVED}
    assert decisions_for(asked, [attempt("failed", paused), attempt("succeeded")]) == {}
    assert decisions_for(asked, [attempt("retried", paused), attempt("failed", None)]) == {}
    assert (
        decisions_for([ApprovalRecord("ok", "go?", "t", None, None)], [attempt("failed", paused)])
        == {}
    )


def test_a_journal_from_before_workspaces_has_none(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version (version) VALUES (1)")
    db.commit()
    db.close()
    old = Journal(path, readonly=True)
    assert (worktrees_of(old, "r1"), approvals_of(old, "r1")) == ([], [])


@pytest.mark.parametrize("table", ["worktrees", "approvals"])
def test_prune_deletes_a_runs_worktrees_and_approvals(tmp_path: Path, table: str) -> None:
    journal = Journal(tmp_path / "runs.db")
    run_workflow(
        Workflow("w", (approval_step("ok", message="go?"),)),
        run_id="r1",
        observers=[JournalObserver(journal, "f")],
    )
    journal.mark("r1", "failed")
    prune(journal, keep=0)
    assert journal.query(f"SELECT COUNT(*) FROM {table}") == [(0,)]  # noqa: S608 - a fixed name


def test_a_journal_from_before_adws_kept_git_directories_reads_them_as_absent(
    repo: Path, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "runs.db")
    kept_run(repo, tmp_path, journal)
    journal.close()
    db = sqlite3.connect(tmp_path / "runs.db")
    db.execute("UPDATE worktrees SET attempts = -1")
    db.commit()
    (forged,) = worktrees_of(Journal(tmp_path / "runs.db"), "r1")
    assert (bool(forged.gitdir), forged.attempts) == (True, None)
    db.execute("ALTER TABLE worktrees DROP COLUMN gitdir")
    db.execute("ALTER TABLE worktrees DROP COLUMN attempts")
    db.execute("DELETE FROM schema_version WHERE version = 11")
    db.commit()
    db.close()
    (older,) = worktrees_of(Journal(tmp_path / "runs.db", readonly=True), "r1")
    assert (older.gitdir, older.attempts, older.state) == ("", None, "present")
    assert "attempts" not in older.to_dict()
