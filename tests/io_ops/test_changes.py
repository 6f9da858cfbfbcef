"""A workspace read from disk, and the verify tree built of it: with real files and real git."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from adws.io_ops.changes import (
    SPECIAL,
    UNREADABLE,
    Entry,
    base_blob,
    base_entries,
    blob_id,
    changed_paths,
    entries,
    entry,
    listing,
    object_format,
    stat_snapshot,
)
from adws.io_ops.verify_tree import TreeError, _copy, build_verify_tree, escapes, remove_verify_tree
from tests.engine.bugs import git, seeded


def test_every_file_link_and_special_file_is_listed_but_git_and_caches(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("x")
    (tmp_path / "a" / "__pycache__").mkdir()
    (tmp_path / "a" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("")
    (tmp_path / "sub" / ".git").mkdir(parents=True)
    (tmp_path / "sub" / ".git" / "HEAD").write_text("")
    (tmp_path / "link").symlink_to("a")
    os.mkfifo(tmp_path / "pipe")
    found = listing(tmp_path)
    assert sorted(found) == ["a/x.py", "link", "pipe"]
    assert stat.S_ISLNK(found["link"])
    assert entry(tmp_path, "pipe", found["pipe"]) == Entry(SPECIAL)
    assert entry(tmp_path, "link", found["link"]) == Entry("120000", blob_id(b"a"))


def test_a_file_is_read_as_git_stores_it_executable_or_not(tmp_path: Path) -> None:
    tool = tmp_path / "tool.sh"
    tool.write_text("echo\n")
    assert entry(tmp_path, "tool.sh", tool.lstat().st_mode) == Entry("100644", blob_id(b"echo\n"))
    tool.chmod(0o755)
    assert entry(tmp_path, "tool.sh", tool.lstat().st_mode).mode == "100755"
    gone = stat.S_IFREG | 0o644
    assert entry(tmp_path, "gone.py", gone) == Entry(UNREADABLE)
    assert blob_id(b"hello\n", "sha256") == (
        "2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4"
    )


def test_a_commits_blobs_are_read_with_replace_objects_off(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "words.py").write_text("replaced\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "replace", base, git(repo, "rev-parse", "HEAD"))
    found = base_entries(repo, base, keep=lambda path: path == "words.py")
    assert list(found) == ["words.py"]
    assert base_blob(repo, found["words.py"].oid) == (
        b"def words(text):\n    return len(text.split(' '))\n"
    )
    assert git(repo, "show", f"{base}:words.py") == "replaced"  # what git shows, replaced
    git(repo, "replace", "-d", base)
    git(repo, "reset", "-q", "--hard", base)
    assert entries(repo, keep=lambda path: path == "words.py") == found
    assert object_format(repo) == "sha1"
    with pytest.raises(OSError, match=r"git rev-parse in .* failed: fatal: not a git repository"):
        object_format(tmp_path)


def test_a_submodule_is_left_out_of_a_commits_entries(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    sub = seeded(tmp_path / "sub")
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            str(sub),
            "vendored",
        ],
        check=True,
        capture_output=True,
    )
    git(repo, "commit", "-qm", "a submodule")
    assert "vendored" not in base_entries(repo, "HEAD")
    assert ".gitmodules" in base_entries(repo, "HEAD")


def test_readings_differ_by_path_content_and_mode() -> None:
    one, two = Entry("100644", "1"), Entry("100755", "1")
    assert changed_paths({"a": one, "b": one, "c": one}, {"a": one, "b": two, "d": one}) == (
        "b",
        "c",
        "d",
    )


def test_a_snapshot_sees_a_write_even_in_the_same_clock_tick(tmp_path: Path) -> None:
    note = tmp_path / "a.txt"
    note.write_text("a")
    before = stat_snapshot(tmp_path)
    assert stat_snapshot(tmp_path) == before
    facts = note.stat()
    note.write_text("b")  # the same size, and the same times as before:
    os.utime(note, ns=(facts.st_atime_ns, facts.st_mtime_ns))
    assert stat_snapshot(tmp_path) != before  # its bytes were hashed: it was written just now
    assert stat_snapshot(tmp_path / "missing") == {}


@pytest.mark.parametrize(
    ("path", "target", "outside"),
    [
        ("a", "b", False),
        ("a/b", "../c", False),
        ("a", "../c", True),
        ("a", "/etc", True),
        ("a/b", "../..", True),
    ],
)
def test_a_link_escapes_when_it_leads_past_the_top(
    path: str, target: str, *, outside: bool
) -> None:
    assert escapes(path, target) is outside


def test_a_verify_tree_is_the_files_on_disk_with_a_git_directory_of_adws_own(
    tmp_path: Path,
) -> None:
    repo = seeded(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "config", "core.hooksPath", str(tmp_path / "hooks"))
    (repo / "words.py").write_text("changed\n")
    (repo / "notes").mkdir()
    (repo / "notes" / "kept.txt").write_text("ignored, but on disk\n")
    (repo / ".git" / "info" / "exclude").write_text("notes/\n")
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__" / "stale.pyc").write_bytes(b"\0")
    (repo / "inside").symlink_to("words.py")
    os.mkfifo(repo / "pipe")
    tree = build_verify_tree(repo, base=base, gitdir=repo / ".git", links={}, parent=tmp_path)
    assert tree.parent == tmp_path
    assert sorted(listing(tree)) == [
        "inside",
        "notes/kept.txt",
        "tests/test_double.py",
        "tests/test_one.py",
        "words.py",
    ]
    assert (tree / "words.py").read_text() == "changed\n"
    assert (tree / "inside").readlink() == Path("words.py")
    assert git(tree, "rev-parse", "HEAD") == base
    assert git(tree, "status", "--porcelain") == "M words.py\n?? inside\n?? notes/".strip()
    assert not (tree / ".git" / "hooks").exists()
    remove_verify_tree(tree)
    assert not tree.exists()


def test_a_link_the_round_made_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "conf").symlink_to("/etc")
    with pytest.raises(
        TreeError, match=r"^the symbolic link conf points outside the workspace \(to /etc\)"
    ):
        build_verify_tree(repo, base=base, gitdir=repo / ".git", links={}, parent=tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["repo"]  # nothing left behind
    tree = build_verify_tree(
        repo, base=base, gitdir=repo / ".git", links={"conf": "/etc"}, parent=tmp_path
    )  # a link that was there before the round may point anywhere
    remove_verify_tree(tree)


def test_what_cannot_be_read_or_made_is_a_tree_error(tmp_path: Path) -> None:
    repo = seeded(tmp_path / "repo")
    with pytest.raises(TreeError, match=r"^could not read the workspace .*/missing to check it"):
        build_verify_tree(
            tmp_path / "missing", base="HEAD", gitdir=repo / ".git", links={}, parent=tmp_path
        )
    with pytest.raises(TreeError, match=r"^git \S+ for the verify tree .* failed"):
        build_verify_tree(repo, base="0" * 40, gitdir=repo / ".git", links={}, parent=tmp_path)
    target = tmp_path / "copy"
    target.mkdir()
    regular = stat.S_IFREG | 0o644
    with pytest.raises(TreeError, match=r"^could not read gone.py to check it: No such file"):
        _copy(repo, target, {"gone.py": regular}, {})
    with pytest.raises(TreeError, match=r"^could not read words.py to check it: Invalid argument"):
        _copy(repo, target, {"words.py": stat.S_IFLNK | 0o777}, {})


def test_what_the_checks_left_read_only_is_removed_with_the_tree(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "locked" / "inner").mkdir(parents=True)
    (tree / "locked" / "inner" / "f").write_text("x")
    (tree / "link").symlink_to("locked")
    (tree / "locked" / "inner").chmod(0o500)
    (tree / "locked").chmod(0o500)
    tree.chmod(0o500)
    remove_verify_tree(tree)
    assert not tree.exists()
