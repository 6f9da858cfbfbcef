"""A worktree's edits as a patch: every kind of change put back byte for byte, nothing outside."""

from __future__ import annotations

import base64
import shutil
import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.io import IOResult, IOSuccess

from adws import (
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    run_workflow,
    worktree,
)
from adws.engine.scope import in_worktree
from adws.journal import Journal, JournalObserver
from adws.journal.records.exchanges import Text
from adws.journal.store.diffs import diffs_of
from adws.journal.store.workspaces import worktrees_of
from adws.workspaces.patches import (
    CallEdits,
    GitError,
    PatchRefusedError,
    apply_patch,
    binary_sizes,
    patch_between,
    snapshot,
)
from tests.workspaces.conftest import git, make_repo


def twin(repo: Path, where: Path) -> Path:
    """Make a second worktree of `repo` at its HEAD: the place a replay applies a patch."""
    git(repo, "worktree", "add", "-q", "--detach", str(where), "HEAD")
    return where


def test_a_patch_puts_back_every_kind_of_change_byte_for_byte(tmp_path: Path) -> None:
    """Edits, new files in new folders, non-UTF-8 and binary bytes, deletions, modes, links."""
    repo = make_repo(tmp_path / "repo")
    (repo / "gone.txt").write_text("to delete\n")
    (repo / "tool.sh").write_text("echo hi\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "more files")
    before = snapshot(repo)
    (repo / "README").write_text("hello\nchanged\n")
    (repo / "deep" / "er").mkdir(parents=True)
    (repo / "deep" / "er" / "latin1.txt").write_bytes(b"caf\xe9 cr\xe8me\n")
    (repo / "image.bin").write_bytes(bytes(range(256)) * 4)
    (repo / "gone.txt").unlink()
    (repo / "tool.sh").chmod(0o755)
    (repo / "link").symlink_to("README")
    after = snapshot(repo)
    patch = patch_between(repo, before, after)
    assert "GIT binary patch" in patch
    assert "\udce9" in patch  # the Latin-1 byte, kept as it was
    other = twin(repo, tmp_path / "other")
    apply_patch(other, patch)
    assert snapshot(other) == after
    assert (other / "deep" / "er" / "latin1.txt").read_bytes() == b"caf\xe9 cr\xe8me\n"
    assert (other / "image.bin").read_bytes() == bytes(range(256)) * 4
    assert not (other / "gone.txt").exists()
    assert (other / "tool.sh").stat().st_mode & 0o111
    assert (other / "link").readlink() == Path("README")


def test_nothing_changed_is_an_empty_patch_and_applying_it_changes_nothing(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = snapshot(repo)
    assert patch_between(repo, tree, tree) == ""
    apply_patch(repo, "")
    assert snapshot(repo) == tree


def test_a_patch_against_the_base_commit_shows_the_whole_change(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README").write_text("bye\n")
    patch = patch_between(repo, git(repo, "rev-parse", "HEAD"), snapshot(repo))
    assert patch.splitlines()[-2:] == ["-hello", "+bye"]


@pytest.mark.parametrize(
    "target",
    ["../escaped.txt", ".git/hooks/post-checkout", "sub/../../escaped.txt"],
)
def test_a_forged_patch_writes_nothing_outside_the_worktree(tmp_path: Path, target: str) -> None:
    """`git apply` refuses a path that leaves the worktree or reaches into a git folder."""
    repo = make_repo(tmp_path / "repo")
    forged = (
        f"diff --git a/{target} b/{target}\nnew file mode 100755\n--- /dev/null\n"
        f"+++ b/{target}\n@@ -0,0 +1 @@\n+touch /tmp/pwned\n"
    )
    with pytest.raises(GitError, match=r"`git -C .* apply --binary --whitespace=nowarn -` exited"):
        apply_patch(repo, forged)
    assert not (tmp_path / "escaped.txt").exists()
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()


def test_a_patch_through_a_symbolic_link_writes_nothing_beyond_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "door").symlink_to(outside)
    git(repo, "add", "door")
    git(repo, "commit", "-q", "-m", "a link out")
    forged = "--- /dev/null\n+++ b/door/planted\n@@ -0,0 +1 @@\n+planted\n"
    with pytest.raises(GitError, match="beyond a symbolic link"):
        apply_patch(
            repo, f"diff --git a/door/planted b/door/planted\nnew file mode 100644\n{forged}"
        )
    assert list(outside.iterdir()) == []


def test_a_patch_that_does_not_fit_says_which_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    before = snapshot(repo)
    (repo / "README").write_text("hello\nmore\n")
    patch = patch_between(repo, before, snapshot(repo))
    (repo / "README").write_text("something else entirely\n")
    with pytest.raises(GitError, match="error: patch failed: README:1"):
        apply_patch(repo, patch)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_.-]{0,8}", fullmatch=True).filter(
            lambda name: not name.endswith(".")
        ),
        st.binary(max_size=300),
        min_size=1,
        max_size=4,
    )
)
def test_any_bytes_a_call_writes_come_back_exactly(files: dict[str, bytes]) -> None:
    """Whatever bytes land in whatever files, the patch writes the very same tree elsewhere."""
    with tempfile.TemporaryDirectory() as folder:
        repo = make_repo(Path(folder) / "repo")
        before = snapshot(repo)
        for name, data in files.items():
            (repo / name).write_bytes(data)
        after = snapshot(repo)
        other = twin(repo, Path(folder) / "other")
        apply_patch(other, patch_between(repo, before, after))
        assert snapshot(other) == after
        assert {name: (other / name).read_bytes() for name in files} == files


def test_a_call_outside_any_worktree_takes_no_patch(tmp_path: Path) -> None:
    edits = CallEdits()
    (tmp_path / "x").write_text("x")
    assert (edits.folder, edits.patch()) == (None, None)


def test_a_call_in_a_worktree_takes_what_it_changed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with in_worktree(str(repo)):
        edits = CallEdits()
    (repo / "README").write_text("hello\nagain\n")
    patch = edits.patch()
    assert patch is not None
    assert patch.endswith("@@ -1 +1,2 @@\n hello\n+again\n")


def test_a_worktree_git_cannot_read_takes_no_patch_and_the_call_goes_on(tmp_path: Path) -> None:
    """Before the call (no repository there) or after it (the folder went): no patch, no error."""
    with in_worktree(str(tmp_path)):
        unreadable = CallEdits()
    assert (unreadable.before, unreadable.patch()) == (None, None)
    repo = make_repo(tmp_path / "repo")
    with in_worktree(str(repo)):
        edits = CallEdits()
    shutil.rmtree(repo)
    assert edits.before is not None
    assert edits.patch() is None


def test_an_attempt_whose_diff_git_cannot_print_is_journaled_as_not_taken(tmp_path: Path) -> None:
    """A diff past git's output cap (64 MiB) is journaled as not taken; the commit goes on."""
    repo = make_repo(tmp_path / "repo")

    def huge(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        (Path(str(ctx.inputs["worktree"])) / "huge.txt").write_bytes((b"x" * 99 + b"\n") * 700_000)
        return IOSuccess(ctx)

    journal = Journal(tmp_path / "runs.db")
    done = run_workflow(
        Workflow("w", (worktree(Step("big", huge)),), inputs=("target_dir",)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        observers=[JournalObserver(journal, "f")],
        run_id="r",
        worktrees=str(tmp_path / "wt"),
    )
    assert isinstance(done, IOSuccess)
    [diff] = diffs_of(journal, "r")
    assert (diff.step, diff.taken, diff.diff, diff.problems) == (
        "big",
        False,
        Text("", 0, None),
        (),
    )
    [record] = worktrees_of(journal, "r")
    assert record.state == "removed"


@pytest.mark.parametrize(
    "header",
    ["copy from ../secret.txt\ncopy to stolen", "rename from ../secret.txt\nrename to stolen"],
)
def test_a_patch_that_copies_or_renames_is_refused_before_git_reads_anything(
    tmp_path: Path, header: str
) -> None:
    """A copy's source may lie outside the worktree: adws's patches never copy, so none is taken."""
    repo = make_repo(tmp_path / "repo")
    (tmp_path / "secret.txt").write_text("SECRET\n")
    forged = f"diff --git a/../secret.txt b/stolen\nsimilarity index 100%\n{header}\n"
    with pytest.raises(GitError, match=r"^the patch is not one adws makes \(it copies or renames"):
        apply_patch(repo, forged)
    assert not (repo / "stolen").exists()


def test_a_patch_holding_what_no_file_byte_makes_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(GitError, match=r"^the patch is not one adws makes \(it holds '\\ud800'\)$"):
        apply_patch(repo, "diff --git a/x b/x\n+\ud800\n")


def test_a_patch_whose_files_differ_away_from_its_context_is_refused_and_taken_back(
    tmp_path: Path,
) -> None:
    """`git apply` checks three lines around a change; adws checks the whole file before and after."""
    repo = make_repo(tmp_path / "repo")
    lines = [f"line {n}\n" for n in range(1, 21)]
    (repo / "long.txt").write_text("".join(lines))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a long file")
    other = twin(repo, tmp_path / "other")
    before = snapshot(repo)
    (repo / "long.txt").write_text("".join(["LINE 1\n", *lines[1:]]))
    patch = patch_between(repo, before, snapshot(repo))
    elsewhere = "".join([*lines[:-1], "line 20, changed here\n"])
    (other / "long.txt").write_text(elsewhere)
    with pytest.raises(GitError) as refused:
        apply_patch(other, patch)
    assert str(refused.value) == (
        "the patch applies, but the files it changes were not what they were when it was made:"
        " long.txt (the worktree is left as it was)"
    )
    assert (other / "long.txt").read_text() == elsewhere


LENGTHS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def hunk_lines(data: bytes) -> list[str]:
    """Deflate `data` and write it in base85 lines as git does."""
    deflated = zlib.compress(data)
    parts = [deflated[at : at + 52] for at in range(0, len(deflated), 52)]
    return [LENGTHS[len(part) - 1] + base64.b85encode(part, pad=True).decode() for part in parts]


def varint(value: int) -> bytes:
    """Write a size as a git delta's header does: 7 bits a byte, low bits first."""
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def binary_patch(forward: str, reverse: str = "literal 0\nHcmV?d00001") -> str:
    return (
        "diff --git a/blob.bin b/blob.bin\nnew file mode 100644\nindex"
        f" {'0' * 40}..{'1' * 40}\nGIT binary patch\n{forward}\n\n{reverse}\n\n"
    )


def test_a_real_binary_delta_counts_the_file_it_makes_and_applies_under_the_cap(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    data = bytes(range(256)) * 64 + b"\x00tail"
    (repo / "blob.bin").write_bytes(data)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a binary file")
    other = twin(repo, tmp_path / "other")
    before = snapshot(repo)
    (repo / "blob.bin").write_bytes(data + b"\x01more")
    patch = patch_between(repo, before, snapshot(repo))
    assert "\ndelta " in patch  # git chose deltas, both ways
    assert binary_sizes(patch) == (len(data) + 5, len(data))
    with pytest.raises(
        PatchRefusedError, match=r"come to 16394 bytes once inflated, past the step's"
    ):
        apply_patch(other, patch, max_bytes=16393)
    assert (other / "blob.bin").read_bytes() == data
    apply_patch(other, patch, max_bytes=16394)
    assert (other / "blob.bin").read_bytes() == data + b"\x01more"


def test_a_small_delta_that_makes_a_huge_file_is_refused_before_git_apply(
    tmp_path: Path,
) -> None:
    """A delta's header names the size of what it makes: git would allocate it whole."""
    repo = make_repo(tmp_path / "repo")
    delta = varint(6) + varint(1 << 30) + b"\x04\x00\x00\x00\x00"
    forged = binary_patch("\n".join([f"delta {len(delta)}", *hunk_lines(delta)]))
    assert binary_sizes(forged) == (1 << 30, 0)
    with pytest.raises(PatchRefusedError, match=f"come to {1 << 30} bytes once inflated"):
        apply_patch(repo, forged, max_bytes=1 << 20)
    assert not (repo / "blob.bin").exists()


@pytest.mark.parametrize(
    ("forward", "why"),
    [
        ("literal 01073741824\nHcmV?d00001", "a binary hunk's size is not written as adws"),
        ("literal 5\r\nHcmV?d00001", "a binary hunk's size is not written as adws"),
        ("delta 5\n!!!!!!", "a binary hunk's line is not base85 as git writes it"),
        ("delta 5\nA" + "0" * 9, "a binary hunk's line is not base85 as git writes it"),
        (
            "delta 9\n" + "\n".join(hunk_lines(b"short")),
            "a binary delta does not inflate to its declared 9",
        ),
    ],
)
def test_a_binary_hunk_git_would_read_otherwise_than_adws_counts_is_refused(
    tmp_path: Path, forward: str, why: str
) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(PatchRefusedError, match=f"^the patch is not one adws makes \\({why}"):
        apply_patch(repo, binary_patch(forward), max_bytes=1 << 20)


def test_a_binary_patch_line_with_no_hunk_after_it_counts_nothing() -> None:
    assert binary_sizes("GIT binary patch\nBinary files differ\n") == (0, 0)
    assert binary_sizes("GIT binary patch") == (0, 0)
    cut_short = binary_patch("\n".join(["delta 1", *hunk_lines(b"\x80")]))
    assert binary_sizes(cut_short) == (1, 0)  # its header ends early: git refuses it itself
