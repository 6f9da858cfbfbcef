"""What a run changed in its worktrees, journaled: each call's patch, each attempt's diff."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from adws import (
    OutputContract,
    RetryPolicy,
    Workflow,
    WorkflowContext,
    agent_step,
    run_workflow,
    worktree,
)
from adws.agents import AgentRequest, ScriptedAgent
from adws.engine.events import AgentExchanged, WorktreeRecorded
from adws.journal import Journal, JournalObserver
from adws.journal.records.diffs import DiffRecord
from adws.journal.records.exchanges import Text, text_digest
from adws.journal.store.cassette import JournalCassette
from adws.journal.store.diffs import DIFF_LIMIT, diff_statements, diffs_of, latest_diffs
from adws.journal.store.exchanges import exchange_statements, exchanges
from adws.journal.store.prune import prune
from tests.journal.test_parked_rows import old_journal
from tests.workspaces.conftest import make_repo

NOTE = OutputContract(("NOTE",))


Answer = str | Callable[[AgentRequest], str]


def in_worktree(*steps: Answer, contract: OutputContract = NOTE, tries: int = 1) -> Workflow:
    agent = ScriptedAgent(list(steps))
    step = agent_step(
        "edit",
        prompt="Edit {worktree}.",
        agent=agent,
        contract=contract,
        retry=RetryPolicy(max_attempts=tries),
    )
    return Workflow("w", (worktree(step, name="fix"),), inputs=("target_dir",))


def journaled(journal: Journal, workflow: Workflow, repo: Path, run_id: str = "r") -> None:
    run_workflow(
        workflow,
        WorkflowContext(inputs={"target_dir": str(repo)}),
        observers=[JournalObserver(journal, "f")],
        run_id=run_id,
        worktrees=str(repo.parent / "wt"),
        sleep=lambda _s: None,
    )


def write(files: dict[str, str], answer: str = "STATUS: done\nNOTE: wrote\n") -> Answer:
    def call(request: AgentRequest) -> str:
        assert request.cwd is not None
        for name, text in files.items():
            (Path(request.cwd) / name).write_text(text)
        return answer

    return call


def test_a_call_in_a_worktree_keeps_what_it_changed_and_one_outside_keeps_nothing(
    journal_at: str, tmp_path: Path
) -> None:
    journal = Journal(journal_at)
    repo = make_repo(tmp_path / "repo")
    journaled(journal, in_worktree(write({"NOTES": "café\n"})), repo)
    [call] = exchanges(journal, "r")
    assert call.patch is not None
    assert call.patch.text is not None
    assert call.patch.text.endswith("--- /dev/null\n+++ b/NOTES\n@@ -0,0 +1 @@\n+café\n")
    assert call.patch.size == len(call.patch.text.encode())
    outside = Workflow(
        "o",
        (
            agent_step(
                "ask",
                prompt="Ask.",
                agent=ScriptedAgent(["STATUS: done\nNOTE: x\n"]),
                contract=NOTE,
            ),
        ),
    )
    run_workflow(outside, observers=[JournalObserver(journal, "f")], run_id="o")
    [plain] = exchanges(journal, "o")
    assert plain.patch is None


def test_a_call_that_changed_nothing_keeps_an_empty_patch_not_none(
    journal_at: str, tmp_path: Path
) -> None:
    """Nothing changed is kept as such: a replay tells it from not recorded."""
    journal = Journal(journal_at)
    journaled(journal, in_worktree("STATUS: done\nNOTE: read only\n"), make_repo(tmp_path / "repo"))
    [call] = exchanges(journal, "r")
    assert call.patch == Text(text_digest(""), 0, "")


def test_each_attempt_in_a_worktree_keeps_its_diff_from_the_base(
    journal_at: str, tmp_path: Path
) -> None:
    """A rejected answer's attempt and the accepted one each leave a diff, oldest first."""
    journal = Journal(journal_at)
    repo = make_repo(tmp_path / "repo")
    first = write({"A": "a\n"}, answer="no report")
    journaled(journal, in_worktree(first, write({"B": "b\n"}), tries=2), repo)
    one, two = diffs_of(journal, "r")
    assert (one.step, one.attempt, one.label, one.problems) == ("fix", 1, "fix", ())
    assert one.diff.text is not None
    assert "+++ b/A\n" in one.diff.text
    assert "+++ b/B\n" not in one.diff.text
    assert two.diff.text is not None
    assert ("+++ b/A\n" in two.diff.text, "+++ b/B\n" in two.diff.text) == (True, True)
    assert latest_diffs(journal, "r") == [two]
    assert diffs_of(journal, "r", step="fix", attempt=2) == []
    assert diffs_of(journal, "r", step="other") == []


def test_each_worktree_keeps_its_latest_diff_in_the_order_it_was_first_diffed() -> None:
    journal = Journal(":memory:")
    for label, text in (("a", "1"), ("b", "2"), ("a", "3")):
        event = WorktreeRecorded(
            "r", "s", label, "/r", "/w", "br", "base", "t", "present", "", text, "s", 1
        )
        journal.apply(diff_statements(event))
    assert [(d.label, d.diff.text) for d in latest_diffs(journal, "r")] == [("a", "3"), ("b", "2")]


def test_a_worktree_made_or_removed_keeps_no_diff() -> None:
    event = WorktreeRecorded("r", "s", "a", "/r", "/w", "br", "base", "t", "created")
    assert diff_statements(event) == []


def test_a_diff_past_the_cap_keeps_its_first_bytes_and_its_whole_size() -> None:
    journal = Journal(":memory:")
    whole = "x" * (DIFF_LIMIT + 10)
    event = WorktreeRecorded(
        "r", "s", "a", "/r", "/w", "br", "b", "t", "present", "", whole, "s", 1
    )
    journal.apply(diff_statements(event))
    [record] = diffs_of(journal, "r")
    assert (record.diff.size, record.diff.cut, record.diff.text) == (
        DIFF_LIMIT + 10,
        True,
        "x" * DIFF_LIMIT,
    )


def test_without_transcripts_a_diff_and_a_patch_keep_only_their_hash_and_size() -> None:
    journal = Journal(":memory:")
    event = WorktreeRecorded(
        "r", "s", "a", "/r", "/w", "br", "b", "t", "present", "", "+x\n", "s", 1
    )
    journal.apply(diff_statements(event, transcripts=False))
    call = AgentExchanged(
        "r", "s", 1, "s", "p", "a", 0, "", None, 0.1, None, None, 100, patch="+y\n"
    )
    journal.apply(exchange_statements(call, transcripts=False))
    [record] = diffs_of(journal, "r")
    assert record.diff == Text(text_digest("+x\n"), 3, None)
    [kept] = exchanges(journal, "r")
    assert kept.patch == Text(text_digest("+y\n"), 3, None)
    assert journal.query("SELECT COUNT(*) FROM texts") == [(0,)]


def test_a_forged_diff_row_names_what_cannot_be_read() -> None:
    journal = Journal(":memory:")
    journal.write(
        "INSERT INTO diffs (run_id, step, attempt, label, recorded, diff, diff_size)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        ("r", "s", -1, "a", "now", "nohash", "big"),
    )
    [record] = diffs_of(journal, "r")
    assert record == DiffRecord(
        "s",
        0,
        "a",
        "now",
        Text("nohash", 0, None),
        (
            "attempt is not a whole number from 0 to 2147483647: -1",
            "diff_size is not a whole number from 0 to 9223372036854775807: 'big'",
        ),
    )


def test_pruning_a_run_removes_its_diffs_and_patches_and_keeps_texts_others_name(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "runs.db")
    repo = make_repo(tmp_path / "repo")
    journaled(journal, in_worktree(write({"N": "n\n"})), repo, run_id="r1")
    journal.write("UPDATE runs SET started = ? WHERE run_id = 'r1'", ("2000-01-01T00:00:00+00:00",))
    journaled(journal, in_worktree(write({"N": "n\n"})), repo, run_id="r2")
    [(texts,)] = journal.query("SELECT COUNT(*) FROM texts")
    assert prune(journal, older_than_days=1) == 1
    assert (diffs_of(journal, "r1"), exchanges(journal, "r1")) == ([], [])
    [kept] = exchanges(journal, "r2")
    assert kept.patch is not None
    assert kept.patch.text is not None  # the same patch: its text is still named
    assert diffs_of(journal, "r2")[0].diff.text is not None
    # Only r1's prompt, which names its worktree, was its own; the rest both runs share.
    assert journal.query("SELECT COUNT(*) FROM texts") == [(texts - 1,)]
    assert prune(journal, keep=0) == 1
    assert journal.query("SELECT COUNT(*) FROM texts") == [(0,)]


def test_a_journal_from_before_patches_reads_none_read_only_and_migrates(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_journal(path, 15)
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO exchanges (run_id, step, attempt, asked_by, recorded, started, seconds,"
            " prompt, prompt_size) VALUES ('r1', 'a', 1, 'a', 'now', 1.0, 0.1, 'h', 0)"
        )
    db.close()
    old = Journal(path, readonly=True)
    assert ([call.patch for call in exchanges(old, "r1")], diffs_of(old, "r1")) == ([None], [])
    assert diffs_of(Journal(path), "r1") == []  # migrated: the table is there, and empty


def test_a_replay_says_why_an_answer_whose_patch_was_cut_cannot_be_replayed(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "runs.db")
    repo = make_repo(tmp_path / "repo")
    small = OutputContract(("NOTE",), max_output_bytes=300)
    journaled(journal, in_worktree(write({"BIG": "y" * 400 + "\n"}), contract=small), repo)
    cassette = JournalCassette(journal, "r")
    [prompt] = cassette.prompts("edit")
    found = cassette.find("edit", prompt, "fix")
    patch = exchanges(journal, "r")[0].patch
    assert patch is not None
    assert found == {
        "text": "STATUS: done\nNOTE: wrote\n",
        "unreplayable": (
            f"its change to the worktree ({patch.size} bytes) was kept only in part,"
            " past the step's output cap"
        ),
    }


def test_branches_that_asked_one_prompt_get_their_own_answers_back(tmp_path: Path) -> None:
    """Answers are matched by the attempt's path first: branch order now does not matter."""
    journal = Journal(tmp_path / "runs.db")
    for path, answer in (("best[0]", "zero"), ("best[1]", "one")):
        event = AgentExchanged(
            "r", path, 1, "impl", "same", answer, 0, "", None, 0.1, None, None, 100
        )
        journal.apply(exchange_statements(event))
    cassette = JournalCassette(journal, "r")
    assert cassette.find("impl", "same", "best[1]") == {"text": "one"}
    assert cassette.find("impl", "same", "best[0]") == {"text": "zero"}
    assert cassette.find("impl", "same", "renamed[0]") == {"text": "zero"}
    assert cassette.find("impl", "other", "best[0]") is None


@pytest.mark.parametrize("transcripts", [True, False])
def test_an_answer_whose_patch_was_not_kept_cannot_be_replayed(*, transcripts: bool) -> None:
    journal = Journal(":memory:")
    event = AgentExchanged(
        "r", "s", 1, "s", "p", "a", 0, "", None, 0.1, None, None, 100, patch="+y\n"
    )
    journal.apply(exchange_statements(event))
    if not transcripts:  # the answer kept, its patch not: a journal edited by hand
        journal.write("DELETE FROM texts WHERE hash = ?", (text_digest("+y\n"),))
    found = JournalCassette(journal, "r").find("s", "p", "s")
    expected = (
        {"text": "a", "patch": "+y\n"}
        if transcripts
        else {
            "text": "a",
            "unreplayable": "its change to the worktree was not kept (--no-transcripts)",
        }
    )
    assert found == expected


def test_what_a_call_with_no_answer_changed_comes_back_with_the_next_answer(
    tmp_path: Path,
) -> None:
    """A timed-out call leaves its edits: the next answer of its path puts both back, in order."""
    journal = Journal(tmp_path / "runs.db")
    rows = (("s", None, "+A\n"), ("other", None, "+O\n"), ("s", "done", "+B\n"), ("s", "again", ""))
    for path, answer, patch in rows:
        event = AgentExchanged(
            "r", path, 1, "s", "p", answer, 0, "", None, 0.1, None, None, 100, patch=patch
        )
        journal.apply(exchange_statements(event))
    cassette = JournalCassette(journal, "r")
    assert cassette.find("s", "p", "s") == {"text": "done", "patch": ["+A\n", "+B\n"]}
    assert cassette.find("s", "p", "s") == {"text": "again", "patch": ""}


def test_a_change_not_kept_by_a_call_with_no_answer_makes_the_next_unreplayable() -> None:
    journal = Journal(":memory:")
    for answer, patch in ((None, "+A\n"), ("done", "+B\n")):
        event = AgentExchanged(
            "r", "s", 1, "s", "p", answer, 0, "", None, 0.1, None, None, 2, patch=patch
        )
        journal.apply(exchange_statements(event))
    assert JournalCassette(journal, "r").find("s", "p", "s") == {
        "text": "do",
        "unreplayable": (
            "its change to the worktree (3 bytes) was kept only in part, past the step's output cap"
        ),
    }
