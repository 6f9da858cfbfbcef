"""`adws worktrees` and `adws worktrees gc`, against real git and every run state."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from adws import Step, Workflow, worktree
from adws.cli import main
from adws.journal import Journal
from adws.runs import Refused, RunRequest, Runs
from adws.runs.worktrees import collect, inventory
from tests.workspaces.conftest import git, make_repo, writes

STATES = ("queued", "running", "parked", "waiting", "succeeded", "failed", "interrupted")


def _run(journal: Journal, repo: Path, *steps: Step) -> str:
    runs = Runs(journal, whole_process=False)
    outcome = runs.run(
        RunRequest(Workflow("w", steps, inputs=("target_dir",)), {"target_dir": str(repo)})
    )
    assert not isinstance(outcome, Refused)
    return outcome.run_id


def _kept(journal: Journal, repo: Path, files: dict[str, str]) -> str:
    return _run(journal, repo, worktree(writes("impl", files), keep="always"))


def _branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--list", "adws/*", "--format=%(refname:short)").split()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "runs.db")


def _by_run(journal: Journal) -> dict[str, str]:
    return {f.run_id: f.state for f in inventory(journal)}


def test_every_run_state_the_ones_that_go_on_are_in_use_and_never_collected(
    journal: Journal, repo: Path
) -> None:
    made = {state: _kept(journal, repo, {f"{state}.txt": "x\n"}) for state in STATES}
    for state, run_id in made.items():
        journal.mark(run_id, state)
    states = _by_run(journal)
    assert {state: states[run_id] for state, run_id in made.items()} == {
        "queued": "in use",
        "running": "in use",
        "parked": "in use",
        "waiting": "in use",
        "succeeded": "kept",
        "failed": "kept",
        "interrupted": "kept",
    }
    done = collect(journal, max_disk=0)
    assert sorted(f.run_id for f in done.removed) == sorted(
        made[s] for s in ("succeeded", "failed", "interrupted")
    )
    assert done.branches == ()  # unmerged: kept
    left = {f.run_id for f in inventory(journal)}
    assert left == {made[s] for s in ("queued", "running", "parked", "waiting")}
    assert len(_branches(repo)) == len(STATES)
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 5


def test_a_squash_merged_worktree_goes_with_its_branch(journal: Journal, repo: Path) -> None:
    run_id = _kept(journal, repo, {"a.txt": "a\n", "b.txt": "b\n"})
    branch = f"adws/{run_id}/impl"
    assert _by_run(journal) == {run_id: "kept"}
    git(repo, "merge", "-q", "--squash", branch)
    git(repo, "commit", "-q", "-m", "squashed")
    assert _by_run(journal) == {run_id: "merged"}
    dry = collect(journal, dry_run=True)
    assert [f.state for f in dry.removed] == ["merged"]
    assert _by_run(journal) == {run_id: "merged"}  # a dry run removes nothing
    done = collect(journal)
    assert done.branches == (branch,)
    assert _branches(repo) == []
    assert inventory(journal) == []
    assert (repo / "a.txt").read_text() == "a\n"


def test_a_dirty_worktree_is_committed_as_wip_and_its_branch_kept(
    journal: Journal, repo: Path
) -> None:
    run_id = _kept(journal, repo, {"a.txt": "a\n"})
    (found,) = inventory(journal)
    (Path(found.path) / "unsaved.txt").write_text("work in progress\n")
    assert _by_run(journal) == {run_id: "dirty"}
    later = dt.datetime.now(tz=dt.UTC) + dt.timedelta(days=8)
    done = collect(journal, older_than=7 * 86400, now=later, branches=True)
    branch = f"adws/{run_id}/impl"
    assert (done.committed, done.branches) == ((branch,), ())
    assert git(repo, "log", "-1", "--format=%s", branch) == "adws wip"
    assert git(repo, "show", f"{branch}:unsaved.txt") == "work in progress"
    assert not Path(found.path).exists()


def test_branches_deletes_the_unmerged_branches_of_old_runs_only(
    journal: Journal, repo: Path
) -> None:
    run_id = _kept(journal, repo, {"a.txt": "a\n"})
    assert collect(journal, older_than=7 * 86400).removed == ()  # not old yet
    later = dt.datetime.now(tz=dt.UTC) + dt.timedelta(days=8)
    done = collect(journal, older_than=7 * 86400, now=later, branches=True)
    assert done.branches == (f"adws/{run_id}/impl",)
    assert _branches(repo) == []


def test_orphans_are_listed_and_removed_only_when_asked_never_through_a_link(
    journal: Journal, repo: Path, tmp_path: Path
) -> None:
    _kept(journal, repo, {"a.txt": "a\n"})
    (found,) = inventory(journal)
    root = Path(found.path).parent.parent
    (root / "gone" / "impl").mkdir(parents=True)
    (root / "gone" / "impl" / "big").write_bytes(b"x" * 100)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    (root / "link").symlink_to(outside)
    orphans = [(Path(f.path).name, f.size) for f in inventory(journal) if f.state == "orphan"]
    assert orphans == [("impl", 100), ("link", 0)]
    assert collect(journal).removed == ()
    done = collect(journal, orphans=True)
    assert sorted(Path(f.path).name for f in done.removed) == ["impl", "link"]
    assert (outside / "keep.txt").read_text() == "keep\n"
    assert not (root / "gone").exists()
    assert not (root / "link").is_symlink()


def test_the_command_lists_and_collects(
    journal: Journal,
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ADWS_WORKTREES", str(tmp_path / "shared"))
    run_id = _kept(journal, repo, {"a.txt": "a\n"})
    db = str(journal.path)
    assert main(["worktrees", "--journal", db, "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["run_id"], listed["state"], listed["branch"]) == (
        run_id,
        "kept",
        f"adws/{run_id}/impl",
    )
    assert main(["worktrees", "--journal", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["RUN", "STEP", "BRANCH", "SIZE", "STATE", "PATH"]
    assert lines[1].split()[:3] == [run_id, "impl", f"adws/{run_id}/impl"]
    assert main(["worktrees", "gc", "--journal", db, "--max-disk", "0", "--dry-run"]) == 0
    assert capsys.readouterr().err.splitlines()[-1].startswith("would remove 1 worktree (")
    assert main(["worktrees", "gc", "--journal", db, "--max-disk", "0", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert (len(said["removed"]), said["branches"], said["dry_run"]) == (1, [], False)
    assert main(["worktrees", "--journal", db]) == 0
    assert capsys.readouterr().err == "no worktrees\n"


def test_gc_refuses_a_duration_or_size_it_cannot_read(
    journal: Journal, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(journal.path)
    _ = journal.runs()
    assert main(["worktrees", "gc", "--journal", db, "--older-than", "7 days"]) == 2
    assert "--older-than '7 days' is not a duration (30s, 5h, 7d)" in capsys.readouterr().err
    assert main(["worktrees", "gc", "--journal", db, "--max-disk", "lots"]) == 2
    assert "--max-disk 'lots' is not a size (100M, 10G)" in capsys.readouterr().err


def test_a_worktree_of_another_repository_is_judged_against_its_own(
    journal: Journal, tmp_path: Path
) -> None:
    other = make_repo(tmp_path / "other")
    run_id = _kept(journal, other, {})
    assert _by_run(journal) == {run_id: "merged"}


def test_a_worktree_whose_repository_moved_is_kept_and_gc_passes_it_over(
    journal: Journal, repo: Path, tmp_path: Path
) -> None:
    run_id = _kept(journal, repo, {"a.txt": "a\n"})
    repo.rename(tmp_path / "moved")
    assert _by_run(journal) == {run_id: "kept"}
    assert collect(journal, max_disk=0).removed == ()
    assert [f.run_id for f in inventory(journal)] == [run_id]


def test_a_worktree_removed_by_hand_and_a_missing_folder_list_nothing(
    journal: Journal, repo: Path, tmp_path: Path
) -> None:
    _kept(journal, repo, {"a.txt": "a\n"})
    (found,) = inventory(journal)
    git(repo, "worktree", "remove", "--force", found.path)
    assert inventory(journal, [tmp_path / "nowhere"]) == []


def test_max_disk_stops_once_the_rest_fit_and_a_merged_one_goes_first(
    journal: Journal, repo: Path
) -> None:
    old = _kept(journal, repo, {"a.txt": "a\n"})
    merged_run = _kept(journal, repo, {})  # no commit: its branch is merged
    journal.write("UPDATE runs SET finished = ? WHERE run_id = ?", ("not a time", old))
    done = collect(journal, max_disk=1 << 40, older_than=60)  # an unreadable end: never old
    assert [f.run_id for f in done.removed] == [merged_run]
    assert _by_run(journal) == {old: "kept"}
    assert merged_run not in _by_run(journal)
    _kept(journal, repo, {})
    done = collect(journal, max_disk=0)
    assert [f.state for f in done.removed] == ["merged", "kept"]


def test_the_command_says_what_it_committed_and_deleted(
    journal: Journal,
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _kept(journal, repo, {})
    _kept(journal, repo, {"a.txt": "a\n"})
    dirty = next(f for f in inventory(journal) if f.state == "kept")
    (Path(dirty.path) / "b.txt").write_text("b\n")
    monkeypatch.setenv("ADWS_WORKTREES", str(tmp_path / "no-such-folder"))
    assert main(["worktrees", "gc", "--journal", str(journal.path), "--max-disk", "0"]) == 0
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith(", deleted 1 branch, committed 1 as `adws wip`")
    )


def test_worker_gc_collects_merged_worktrees_in_its_first_round(
    journal: Journal,
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ADWS_WORKTREES", str(tmp_path / "shared"))
    _kept(journal, repo, {})
    assert main(["worker", "--once", "--gc", "--journal", str(journal.path)]) == 0
    assert "adws worker: worktrees gc: removed 1 worktree (" in capsys.readouterr().err
    assert inventory(journal) == []
