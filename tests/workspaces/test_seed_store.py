"""`adws seeds` and the seeds `adws worktrees gc` removes: never one in use, never through a link."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import pytest

from adws import Step, Workflow, WorkflowContext, run_workflow, worktree
from adws.cli import main
from adws.cli.worktrees import size_text
from adws.journal import Journal
from adws.runs import Refused, RunRequest, Runs
from adws.workspaces._seeding import SEEDS, seed_lock
from adws.workspaces.seed_store import collect_seeds, seeds_in
from tests.conftest import success
from tests.workspaces.conftest import git
from tests.workspaces.test_seeds import SETUP, lockfile_repo, reads_deps

LATER = dt.datetime.now(tz=dt.UTC) + dt.timedelta(days=2)
DAY = 86_400


def _seeded(keep: str = "always") -> Step:
    return worktree(
        Step("impl", reads_deps),
        setup=SETUP,
        setup_key=("lock.txt",),
        share=("deps",),
        keep=keep,  # type: ignore[arg-type] # one of KEEP
    )


def _made(tmp_path: Path, run_id: str = "r1", keep: str = "always") -> tuple[Path, Path]:
    """Run a seeded worktree step; return the seed's folder and the worktree's."""
    repo = tmp_path / "repo"
    if not repo.exists():
        lockfile_repo(repo)
    done = success(
        run_workflow(
            Workflow("w", (_seeded(keep),)),
            WorkflowContext(inputs={"target_dir": str(repo)}),
            run_id=run_id,
            worktrees=str(tmp_path / "wt"),
        )
    )
    seed = tmp_path / "wt" / SEEDS / str(done.inputs["impl_seed"]["hash"] or _only_seed(tmp_path))
    return seed, Path(str(done.inputs["folder"]))


def _only_seed(tmp_path: Path) -> str:
    (seed,) = (p.name for p in (tmp_path / "wt" / SEEDS).iterdir() if p.suffix != ".lock")
    return seed


def test_a_seed_is_listed_with_its_key_files_setup_size_and_users(tmp_path: Path) -> None:
    seed, _ = _made(tmp_path)
    (found,) = seeds_in([tmp_path / "wt"])
    assert (found.hash, found.path, found.setup, found.setup_key, found.users, found.ready) == (
        seed.name,
        str(seed),
        SETUP,
        ("lock.txt",),
        1,
        True,
    )
    assert found.repo == str((tmp_path / "repo").resolve())
    files = [p for p in seed.rglob("*") if p.is_symlink() or not p.is_dir()]
    assert found.size == sum(p.lstat().st_size for p in files)  # a link counts its own size
    assert found.to_dict()["setup_key"] == ["lock.txt"]


def test_a_seed_given_to_a_worktree_that_exists_is_never_collected(tmp_path: Path) -> None:
    seed, folder = _made(tmp_path)
    assert collect_seeds([tmp_path / "wt"], older_than=3600, now=LATER) == []
    assert (seed / "seed.json").is_file()
    shutil.rmtree(folder)
    (gone,) = collect_seeds([tmp_path / "wt"], older_than=3600, now=LATER, dry_run=True)
    assert gone.hash == seed.name
    assert seed.is_dir()
    (gone,) = collect_seeds([tmp_path / "wt"], older_than=3600, now=LATER)
    assert not seed.exists()
    assert str(seed) not in git(tmp_path / "repo", "worktree", "list")


def test_a_recently_used_seed_stays(tmp_path: Path) -> None:
    seed, _ = _made(tmp_path, keep="never")
    assert collect_seeds([tmp_path / "wt"], older_than=3 * DAY, now=LATER) == []
    assert collect_seeds([tmp_path / "wt"], older_than=DAY, now=LATER)[0].hash == seed.name


def test_a_seed_being_built_is_passed_over(tmp_path: Path) -> None:
    seed, _ = _made(tmp_path, keep="never")
    with seed_lock(seed.parent, seed.name):
        assert collect_seeds([tmp_path / "wt"], older_than=0, now=LATER) == []
    assert seed.is_dir()


def test_gc_removes_a_link_where_a_seed_was_and_never_follows_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    seeds = tmp_path / "wt" / SEEDS
    seeds.mkdir(parents=True)
    (seeds / "abc").symlink_to(outside)
    assert seeds_in([tmp_path / "wt"]) == []
    assert collect_seeds([tmp_path / "wt"], older_than=0, now=LATER, dry_run=True) == []
    assert (seeds / "abc").is_symlink()
    assert collect_seeds([tmp_path / "wt"], older_than=0, now=LATER) == []
    assert not (seeds / "abc").is_symlink()
    assert (outside / "keep.txt").read_text() == "keep\n"


def test_a_seeds_folder_that_is_a_link_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "abc").mkdir(parents=True)
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / SEEDS).symlink_to(outside)
    assert seeds_in([tmp_path / "wt"]) == []
    assert collect_seeds([tmp_path / "wt"], older_than=0, now=LATER) == []
    assert (outside / "abc").is_dir()


def test_a_half_built_seed_is_listed_not_ready_and_collected(tmp_path: Path) -> None:
    seed = tmp_path / "wt" / SEEDS / "abc"
    (seed / "users").mkdir(parents=True)
    (seed / "users" / "x").write_text(str(tmp_path / "gone"))
    (seed / "seed.json").write_text("{not json")
    (seed / "a").write_text("12345")
    (seed / "b").hardlink_to(seed / "a")
    (found,) = seeds_in([tmp_path / "wt"])
    assert (found.ready, found.setup, found.setup_key, found.repo, found.users, found.size) == (
        False,
        "",
        (),
        "",
        0,
        5 + 9 + len(str(tmp_path / "gone")),  # a file linked twice counts once
    )
    assert [f.hash for f in collect_seeds([tmp_path / "wt"], older_than=0, now=LATER)] == ["abc"]
    assert not seed.exists()


def test_the_commands_list_and_collect_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADWS_WORKTREES", str(tmp_path / "shared"))
    assert main(["seeds"]) == 0
    assert capsys.readouterr().err == "no seeds\n"
    repo = lockfile_repo(tmp_path / "repo")
    journal = Journal(tmp_path / "runs.db")
    workflow = Workflow("w", (_seeded("never"),), inputs=("target_dir",))
    outcome = Runs(journal, whole_process=False).run(
        RunRequest(workflow, {"target_dir": str(repo)})
    )
    assert not isinstance(outcome, Refused)
    assert main(["seeds", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["setup"], listed["setup_key"], listed["users"]) == (SETUP, ["lock.txt"], 0)
    assert main(["seeds"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["HASH", "KEYS", "SETUP", "SIZE", "LAST", "USED", "USERS"]
    assert lines[1].split()[:2] == [listed["hash"], "lock.txt"]
    db = str(journal.path)
    assert main(["worktrees", "gc", "--journal", db, "--older-than", "1h"]) == 0
    assert capsys.readouterr().err == "removed 0 worktrees (0 B)\n"
    seed = Path(listed["path"])
    stamp = (LATER - dt.timedelta(days=4)).timestamp()
    for each in (seed, *(seed / "users").iterdir()):
        os.utime(each, (stamp, stamp))
    assert main(["worktrees", "gc", "--journal", db, "--older-than", "1d", "--dry-run"]) == 0
    said = capsys.readouterr().err
    assert said == f"would remove 0 worktrees (0 B), 1 seed ({size_text(listed['size'])})\n"
    assert main(["worktrees", "gc", "--journal", db, "--older-than", "1d", "--json"]) == 0
    gone = json.loads(capsys.readouterr().out)
    assert [s["hash"] for s in gone["seeds"]] == [listed["hash"]]
    assert not seed.exists()
