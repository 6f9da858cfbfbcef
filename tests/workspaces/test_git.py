"""Git as workspaces run it: contention retried, failures named, locks held, trees hashed."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from adws.workspaces._git import (
    LOCK_FILE,
    GitError,
    admin_dir,
    changed_files,
    git,
    points_at,
    repository_lock,
    tree_hash,
    uncommitted,
)
from tests.conftest import FakeSleep
from tests.workspaces.conftest import git as real_git


def test_a_command_that_meets_another_gits_index_lock_waits_and_tries_again(repo: Path) -> None:
    (repo / "new.txt").write_text("new\n")
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    timer = threading.Timer(0.3, lock.unlink)
    timer.start()
    try:
        git(repo, "add", "new.txt")
    finally:
        timer.join()
    assert real_git(repo, "status", "--porcelain") == "A  new.txt"


def test_contention_that_never_ends_fails_naming_the_lock(repo: Path) -> None:
    (repo / ".git" / "index.lock").write_text("")
    sleep = FakeSleep()
    with pytest.raises(GitError, match=r"index\.lock': File exists") as raised:
        git(repo, "add", "README", sleep=sleep)
    assert sleep.calls == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2]
    assert str(raised.value).startswith(f"`git -C {repo} add README` exited with 128: fatal:")


def test_any_other_failure_is_not_retried(repo: Path) -> None:
    sleep = FakeSleep()
    with pytest.raises(GitError, match="exited with 128"):
        git(repo, "rev-parse", "--verify", "nope", sleep=sleep)
    assert sleep.calls == []


def test_a_missing_git_program_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitError, match=r"^could not run `git -C . status`: git: "):
        git(Path(), "status")


def test_a_git_that_hangs_is_killed_at_its_timeout(
    repo: Path, fake_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_git.write_text("#!/bin/sh\nsleep 30\n")
    with pytest.raises(
        GitError, match=r"^`git -C .* status` ran past its 0.2s timeout and was killed$"
    ):
        git(repo, "status", timeout=0.2)


def test_the_repository_lock_waits_for_another_holder(tmp_path: Path) -> None:
    fd = os.open(tmp_path / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    threading.Timer(0.2, os.close, (fd,)).start()
    with repository_lock(tmp_path, seconds=10):
        pass


def test_a_lock_held_too_long_is_a_failure_naming_the_file(tmp_path: Path) -> None:
    fd = os.open(tmp_path / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        held = f"another process has held {tmp_path / LOCK_FILE}"
        with pytest.raises(GitError, match=held), repository_lock(tmp_path, seconds=0.1):
            pass
    finally:
        os.close(fd)


def test_the_tree_hash_covers_untracked_files_but_not_ignored_ones(repo: Path) -> None:
    before = tree_hash(repo)
    (repo / ".gitignore").write_text("*.log\n")
    with_ignore = tree_hash(repo)
    (repo / "debug.log").write_text("noise\n")
    assert tree_hash(repo) == with_ignore  # ignored: no change
    (repo / "notes.txt").write_text("notes\n")
    after = tree_hash(repo)
    assert changed_files(repo, before, after) == (".gitignore", "notes.txt")
    assert (
        real_git(repo, "status", "--porcelain") == "?? .gitignore\n?? notes.txt"
    )  # index untouched


def test_the_tree_hash_needs_no_index(repo: Path) -> None:
    before = tree_hash(repo)
    (repo / ".git" / "index").unlink()
    assert tree_hash(repo) == before


def test_uncommitted_names_changed_and_renamed_tracked_files_only(repo: Path) -> None:
    (repo / "other").write_text("other\n")
    real_git(repo, "add", "other")
    real_git(repo, "commit", "-q", "-m", "other")
    real_git(repo, "mv", "other", "moved")
    (repo / "README").write_text("changed\n")
    (repo / "untracked.txt").write_text("x\n")
    assert uncommitted(repo) == ("README", "moved")


def test_adws_finds_a_worktrees_git_directory_from_gits_record_never_from_its_git_file(
    repo: Path, tmp_path: Path
) -> None:
    assert admin_dir(repo / ".git", tmp_path / "none") is None  # no worktree yet
    folder = tmp_path / "wt"
    real_git(repo, "worktree", "add", "-q", str(folder))
    (repo / ".git" / "worktrees" / "stray").mkdir()  # no record in it: passed over
    made = repo / ".git" / "worktrees" / "wt"
    assert admin_dir(repo / ".git", folder) == made
    assert points_at(folder) == made
    (folder / ".git").write_text("gitdir: ../elsewhere\n")
    assert points_at(folder) == tmp_path / "elsewhere"
    assert admin_dir(repo / ".git", folder) == made


@pytest.mark.parametrize("kind", ["missing", "folder", "link", "other text"])
def test_only_a_plain_git_file_naming_a_directory_points_anywhere(
    tmp_path: Path, kind: str
) -> None:
    dotgit = tmp_path / ".git"
    if kind == "folder":
        dotgit.mkdir()
    elif kind == "link":
        (tmp_path / "target").write_text(f"gitdir: {tmp_path}\n")
        dotgit.symlink_to(tmp_path / "target")
    elif kind == "other text":
        dotgit.write_text("ref: HEAD\n")
    assert points_at(tmp_path) is None


def test_every_git_command_is_told_to_run_no_hook_and_no_monitor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "argv"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\n')
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    git(tmp_path, "status", gitdir=tmp_path / "g")
    assert log.read_text().splitlines() == [
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=",
        "-C",
        str(tmp_path),
        f"--git-dir={tmp_path / 'g'}",
        f"--work-tree={tmp_path}",
        "status",
    ]
