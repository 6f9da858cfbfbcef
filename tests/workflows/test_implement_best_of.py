"""implement_best_of, end to end: three worktrees of a real repository, an approval, a merge."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from adws import Workflow
from adws.agents import AgentRequest
from adws.journal import Journal
from adws.journal.store.workspaces import decide
from adws.testing import FunctionAgent, RunReport, resume, run
from adws.workspaces import Decision
from tests.conftest import REPO, adws_json, shared_worktree, start_adws
from tests.workflows.conftest import NOTHING_PROVED
from tests.workspaces.conftest import git, make_repo

CHECK = "test ! -f notes.txt || test -f DONE || { echo 'DONE is missing'; exit 1; }"


def attempts(blocked: tuple[int, ...] = (), forgetful: tuple[int, ...] = ()) -> FunctionAgent:
    """Attempt i writes DONE and i+1 lines of notes; `blocked` ones give up at once.

    A `forgetful` attempt forgets DONE on its first round, so the checks fail
    and their output comes back as feedback.
    """

    def answer(request: AgentRequest) -> str:
        found = re.search(r"^Attempt: (\d) of 3", request.prompt, re.MULTILINE)
        assert found is not None
        index = int(found.group(1))
        if index in blocked:
            return "STATUS: blocked\nREASON: cannot"
        folder = Path(str(request.cwd))
        (folder / "notes.txt").write_text("note\n" * (index + 1))
        if index not in forgetful or "## Feedback from earlier attempts" in request.prompt:
            (folder / "DONE").write_text("ok\n")
        return f"STATUS: done\nSUMMARY: attempt {index} did it"

    return FunctionAgent(answer)


@pytest.fixture
def project(in_tmp: Path) -> Path:
    return make_repo(in_tmp / "project")


def start(workflow: Workflow, project: Path, agent: FunctionAgent, journal: Journal) -> RunReport:
    inputs = {"task": "Create DONE", "target_dir": str(project), "check_command": CHECK}
    return run(workflow, inputs, agent=agent, journal=journal)


def approve(
    journal: Journal, run_id: str, verdict: str = "approved", note: str = "ship it"
) -> None:
    at = "2026-01-01T00:00:00+00:00"
    decide(journal, run_id, "approve", Decision(verdict, "ann", at, note))  # type: ignore[arg-type] # a verdict


def report(in_tmp: Path) -> str:
    return (in_tmp / "reports" / "implement_best_of-create-done-5d6fd0cc.md").read_text()


def test_the_first_attempt_that_passes_is_proposed_approved_and_merged(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    journal = Journal(in_tmp / "runs.db")
    agent = attempts(blocked=(0,), forgetful=(1,))
    waiting = start(shipped["implement_best_of"], project, agent, journal)
    run_id = waiting.run_id
    assert waiting.status == "waiting"
    assert waiting.error is not None
    assert waiting.error.message == (
        f"Fast-forward {project} to adws/{run_id}/best-1 (2 files changed, 3 insertions(+))?\n"
        f"Attempt 1 of 3 won: attempt 1 did it\nWhat the checks proved:\n{NOTHING_PROVED}"
    )
    folders = {str(shared_worktree(project, run_id, f"best-{i}")) for i in range(3)}
    asked = waiting["best"].requests
    assert ({request.cwd for request in asked}, len(asked)) == (folders, 4)  # 1 had two rounds
    assert not (project / "DONE").exists()
    branches = git(project, "branch", "--list", "adws/*", "--format=%(refname:short)")
    assert branches == f"adws/{run_id}/best-1"
    assert waiting["finalize"].status == "not_run"  # the run has not ended

    approve(journal, run_id)
    done = resume(shipped["implement_best_of"], run_id, journal=journal, agent=attempts())
    assert done.status == "succeeded"
    assert done["best"].status == "carried_over"
    winner = str(done.inputs["best_commit"])
    assert (done.inputs["merge_to"], git(project, "rev-parse", "main")) == (winner, winner)
    # main holds all the winner's branch held: the branch went when the run ended
    assert git(project, "branch", "--list", "adws/*") == ""
    assert (project / "DONE").read_text() == "ok\n"
    assert report(in_tmp) == (
        "# implement_best_of: Create DONE\n\n"
        "**Result:** approved and merged: `main` is at the winner's commit.\n\n"
        "## Attempts\n"
        "- attempt 0: failed (cannot)\n"
        "- attempt 1: succeeded (2 files changed, 3 insertions(+))\n"
        "- attempt 2: succeeded (2 files changed, 4 insertions(+))\n\n"
        "## The winner: attempt 1\n"
        "attempt 1 did it\n\n"
        f"- branch: `adws/{run_id}/best-1`\n"
        f"- commit: `{winner}`\n"
        "- 2 files changed, 3 insertions(+)\n"
        "  - `DONE` (+1 -0)\n"
        "  - `notes.txt` (+2 -0)\n\n"
        f"## What the checks proved\n{NOTHING_PROVED}\n\n"
        "Approved by ann at 2026-01-01T00:00:00+00:00: ship it.\n"
    )


def test_a_rejection_leaves_the_target_as_it_was(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    journal = Journal(in_tmp / "runs.db")
    before = git(project, "rev-parse", "main")
    waiting = start(shipped["implement_best_of"], project, attempts(), journal)
    approve(journal, waiting.run_id, "rejected", "not like this")
    done = resume(shipped["implement_best_of"], waiting.run_id, journal=journal, agent=attempts())
    assert (done.status, done.error.error_type) == ("failed", "Rejected")  # type: ignore[union-attr] # an error
    assert git(project, "rev-parse", "main") == before
    written = report(in_tmp)
    assert "**Result:** Rejected at `approve`." in written
    assert "rejected by ann: not like this" in written
    assert "## The winner: attempt 0" in written


def test_uncommitted_changes_in_the_target_refuse_the_merge_until_they_are_committed(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    journal = Journal(in_tmp / "runs.db")
    waiting = start(shipped["implement_best_of"], project, attempts(), journal)
    (project / "README").write_text("edited meanwhile\n")
    approve(journal, waiting.run_id)
    refused = resume(
        shipped["implement_best_of"], waiting.run_id, journal=journal, agent=attempts()
    )
    assert refused.error is not None
    assert (refused.status, refused.error.step_name, refused.error.message) == (
        "failed",
        "merge",
        (
            f"the checkout {project} has uncommitted changes to README: commit or stash them, then"
            " resume the run"
        ),
    )
    assert "**Result:** WorkspaceFailed at `merge`." in report(in_tmp)
    git(project, "stash", "-q")
    done = resume(shipped["implement_best_of"], waiting.run_id, journal=journal, agent=attempts())
    assert done.status == "succeeded"
    assert (project / "DONE").exists()


def test_no_attempt_passing_ends_the_run_before_anyone_is_asked(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    journal = Journal(in_tmp / "runs.db")
    failed = start(shipped["implement_best_of"], project, attempts(blocked=(0, 1, 2)), journal)
    assert failed.error is not None
    assert (failed.status, failed.error.step_name) == ("blocked", "best[0]")
    assert failed["approve"].status == "skipped"
    written = report(in_tmp)
    assert "**Result:** Blocked at `best[0]`." in written
    assert written.count(": failed (cannot)") == 3
    assert "The winner" not in written


@pytest.mark.agent_process  # the demo agent runs
def test_make_demo_best_of_runs_offline_and_leaves_main_at_the_winners_commit(
    tmp_path: Path,
) -> None:
    """`make demo-best-of` runs demo/best_of.sh: docs/guides/workspaces.md's transcript, on a fresh repository."""
    done = subprocess.run(
        ["sh", "demo/best_of.sh"],
        cwd=REPO,
        env={
            **os.environ,
            "ADWS": f"{sys.executable} -m adws",
            "PYTHONPATH": str(REPO),
            "TMPDIR": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (here,) = tmp_path.glob("adws-best-of-*")
    project = here / "project"
    (run_id,) = re.findall(
        r"^\$ adws approve (\w+) --note 'looks right'$", done.stdout, re.MULTILINE
    )
    assert git(project, "branch", "--list", "adws/*", "--format=%(refname:short)") == ""
    assert git(project, "log", "--format=%s", "-1") == (
        "wrote ADWS_DEMO.md and NOTES.md describing: Add a demo note"
    )
    assert (project / "ADWS_DEMO.md").read_text() == "# Demo change\n\nAdd a demo note\n"
    assert git(project, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert (
        f"  Fast-forward {project} to adws/{run_id}/best-0 (2 files changed, 7 insertions(+))?\n"
        "  Attempt 0 of 3 won: wrote ADWS_DEMO.md and NOTES.md describing: Add a demo note\n"
    ) in done.stdout
    assert "approve: asked " in done.stdout
    assert "· approved by " in done.stdout
    assert f"Everything is in {here} " in done.stdout
    written = (here / "reports" / "implement_best_of-add-a-demo-note-1dda6687.md").read_text()
    lines = [line for line in written.splitlines() if line.startswith("- attempt")]
    patterns = [
        r"- attempt 0: succeeded \(2 files changed, 7 insertions\(\+\), \$0\.\d{4}\)",
        r"- attempt 1: succeeded \(1 file changed, 3 insertions\(\+\), \$0\.\d{4}\)",
        r"- attempt 2: failed \(the demo agent gives up on its third attempt, on purpose, \$0\.\d{4}\)",
    ]
    assert [re.fullmatch(p, line) is not None for p, line in zip(patterns, lines, strict=True)] == [
        True,
        True,
        True,
    ], lines


def test_the_makefile_runs_the_demo_script() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "\ndemo-best-of: $(RUNTIME) ## " in makefile
    assert "\tADWS=$(BIN)/adws sh demo/best_of.sh\n" in makefile


@pytest.mark.agent_process  # the demo agent runs once, for the recording
def test_a_recorded_best_of_run_replays_offline_to_the_same_winner_and_merge(
    tmp_path: Path,
) -> None:
    """Three worktrees replayed, each with its own branch's files: the same winner, approved."""
    project = make_repo(tmp_path / "project")
    argv = (
        "run",
        "implement_best_of",
        "--workflows",
        str(REPO / "workflows"),
        "--json",
        "-q",
        "-i",
        "task=Add a demo note",
        "-i",
        f"target_dir={project}",
        "-i",
        "check_command=grep -q 'Add a demo note' ADWS_DEMO.md",
    )

    code, recorded, err = adws_json(tmp_path, *argv, seed=1)
    assert code == 3
    assert err.startswith(
        f"implement_best_of waiting for approval at approve (run {recorded['run_id']})"
    )
    run_id = str(recorded["run_id"])
    code, replayed, err = adws_json(tmp_path, *argv, "--replay", run_id, "--agent", "false", seed=2)
    assert code == 3
    assert err.startswith(
        f"implement_best_of waiting for approval at approve (run {replayed['run_id']}):"
    )  # nothing spent
    first, again = recorded["inputs"], replayed["inputs"]
    assert isinstance(first, dict)
    assert isinstance(again, dict)
    assert (again["best_winner"], again["best_diffstat"]) == (
        first["best_winner"],
        first["best_diffstat"],
    )
    outcomes = [(o["status"], o["diffstat"]) for o in again["best_outcomes"]]
    assert outcomes == [(o["status"], o["diffstat"]) for o in first["best_outcomes"]]
    assert git(project, "rev-parse", f"{again['best_commit']}^{{tree}}") == git(
        project, "rev-parse", f"{first['best_commit']}^{{tree}}"
    )
    approve = start_adws(
        tmp_path, "approve", str(replayed["run_id"]), "--workflows", str(REPO / "workflows"), "-q"
    )
    assert approve.communicate(timeout=180)[1] == ""
    assert approve.returncode == 0
    assert git(project, "rev-parse", "main") == again["best_commit"]
    assert (project / "ADWS_DEMO.md").read_text() == "# Demo change\n\nAdd a demo note\n"
