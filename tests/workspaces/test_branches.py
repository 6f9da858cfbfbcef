"""A run's branches as litter: deleted when they hold nothing the checkout's branch does not."""

from __future__ import annotations

from pathlib import Path

from adws import Step, Workflow, approval_step, fast_forward, worktree
from adws.journal import Journal
from adws.runs import Refused, RunRequest, Runs
from adws.workspaces.branches import delete_merged, merged
from tests.workspaces.conftest import git, writes


def _branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--list", "adws/*", "--format=%(refname:short)").split()


def _run(repo: Path, tmp_path: Path, *steps: Step) -> tuple[str, str]:
    runs = Runs(Journal(tmp_path / "runs.db"), whole_process=False, worktrees=str(tmp_path / "wt"))
    outcome = runs.run(
        RunRequest(Workflow("w", steps, inputs=("target_dir",)), {"target_dir": str(repo)})
    )
    assert not isinstance(outcome, Refused)
    return outcome.status, outcome.run_id


def test_a_worktree_that_changed_nothing_takes_its_branch_along(repo: Path, tmp_path: Path) -> None:
    assert _run(repo, tmp_path, worktree(writes("impl", {})))[0] == "succeeded"
    assert _branches(repo) == []


def test_a_fast_forwarded_branch_is_deleted_when_the_run_ends_an_unmerged_one_stays(
    repo: Path, tmp_path: Path
) -> None:
    steps = (
        worktree(writes("impl", {"a.txt": "a\n"})),
        worktree(writes("other", {"b.txt": "b\n"})),
        fast_forward("merge", commit="{impl_commit}"),
    )
    status, run_id = _run(repo, tmp_path, *steps)
    assert status == "succeeded"
    assert _branches(repo) == [f"adws/{run_id}/other"]
    assert (repo / "a.txt").read_text() == "a\n"


def test_a_squash_merged_branch_counts_as_merged(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-q", "-b", "adws/r1/impl")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    (repo / "a.txt").write_text("a\nb\n")
    git(repo, "commit", "-q", "-am", "two")
    git(repo, "checkout", "-q", "main")
    assert not merged(repo, "adws/r1/impl")
    git(repo, "merge", "-q", "--squash", "adws/r1/impl")
    git(repo, "commit", "-q", "-m", "squashed")
    assert merged(repo, "adws/r1/impl")
    assert merged(repo, "adws/r1/gone")  # a branch that is not there holds nothing
    kept = ("adws/r2/impl", "main", "adws/r1/impl", "adws/r1/impl")
    assert delete_merged(repo, "r1", kept) == ("adws/r1/impl",)
    assert _branches(repo) == []


def test_only_the_runs_own_branches_go_and_a_lost_repository_is_passed_over(
    repo: Path, tmp_path: Path
) -> None:
    for name in ("adws/r2/impl", "adws/r1/impl", "feature"):
        git(repo, "branch", name)
    assert delete_merged(repo, "r1", ["adws/r2/impl", "feature", "adws/r1/impl", "adws/r1/x"]) == (
        "adws/r1/impl",
    )
    assert _branches(repo) == ["adws/r2/impl"]
    assert delete_merged(tmp_path / "gone", "r1", ["adws/r1/impl"]) == ()


def test_a_branch_a_kept_worktree_is_on_stays(repo: Path, tmp_path: Path) -> None:
    status, run_id = _run(repo, tmp_path, worktree(writes("impl", {}), keep="always"))
    assert status == "succeeded"
    assert _branches(repo) == [f"adws/{run_id}/impl"]
    assert delete_merged(repo, run_id, [f"adws/{run_id}/impl"]) == ()


def test_a_waiting_run_keeps_its_merged_branches(repo: Path, tmp_path: Path) -> None:
    steps = (
        worktree(writes("impl", {"a.txt": "a\n"})),
        fast_forward("merge", commit="{impl_commit}"),
        approval_step("ask", message="ok?"),
    )
    status, run_id = _run(repo, tmp_path, *steps)
    assert status == "waiting"
    assert _branches(repo) == [f"adws/{run_id}/impl"]
