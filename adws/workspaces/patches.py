"""A worktree's edits as a patch: taken after an agent call or an attempt, applied on replay.

The journal keeps what each agent call changed in its worktree (the
patch between the worktree's content just before the call and just
after), so `adws run W --replay RUN` can put the files back as the
recorded agent left them; and what each attempt of a `worktree` step
left, against the worktree's base commit, so a reviewer reads the change
(`adws status R --step S -v`, `adws approvals -v`, `adws report`) on any
machine, without the worktree.

A patch is `git diff --binary` between two trees `tree_hash` made
(tracked and untracked files git does not ignore, renames as a delete
and an add, file modes and binary files included), decoded so that bytes
that are not UTF-8 survive (`surrogateescape`): applying it writes back
the very bytes. `git apply` itself refuses a path outside the worktree
(`..`, a `.git` folder, a path beyond a symbolic link), and a copy or a
rename, which could read a file outside it, is refused before git sees
it, so a forged journal row cannot write elsewhere or bring a file in.
Applying is exact: the files a patch changes must be as they were when it
was made, byte for byte, not only around each change (`apply_patch`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, final

from adws.engine.scope import current_gitdir, current_worktree
from adws.workspaces._git import GitError, git, tree_hash

__all__ = ["CallEdits", "GitError", "apply_patch", "patch_between", "snapshot"]

_DIFF: Final = ("diff-tree", "-p", "--binary", "--full-index", "--no-renames", "--no-color")
"""Whole object names and binary data: a patch `git apply` takes back exactly."""


def _gitdir(gitdir: str | Path | None) -> Path | None:
    return Path(gitdir) if gitdir else None


def snapshot(worktree: str | Path, gitdir: str | Path | None = None) -> str:
    """Write the worktree's content as a git tree and return its id (see `tree_hash`)."""
    return tree_hash(Path(worktree), gitdir=_gitdir(gitdir))


def patch_between(
    worktree: str | Path, before: str, after: str, gitdir: str | Path | None = None
) -> str:
    """Return the patch that turns tree (or commit) `before` into `after`; "" when they match."""
    if before == after:
        return ""
    found = git(
        Path(worktree),
        *_DIFF,
        before,
        after,
        gitdir=_gitdir(gitdir),
        stdout_errors="surrogateescape",
    )
    return found.stdout


_FOREIGN: Final = ("copy from ", "copy to ", "rename from ", "rename to ")
"""Header lines adws's patches never hold (`--no-renames`): a copy may read outside the worktree."""
_SIGNATURE: Final = (
    "diff --git ",
    "index ",
    "new file mode ",
    "deleted file mode ",
    "old mode ",
    "new mode ",
)
"""The header lines that name each file, its blobs before and after, and its modes."""


def _signature(patch: str) -> dict[str, tuple[str, ...]]:
    r"""Map each file a patch changes (its `diff --git` line) to its blob ids and modes.

    Two patches with one signature change the same files from the same
    content to the same content (the ids are whole: `--full-index`).

    >>> _signature("diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 @@\n-a\n")
    {'diff --git a/x b/x': ('index 1..2 100644',)}
    """
    files: dict[str, tuple[str, ...]] = {}
    current = ""
    for line in patch.split("\n"):
        if line.startswith("diff --git "):
            current = line
            files[current] = ()
        elif current and line.startswith(_SIGNATURE):
            files[current] += (line,)
    return files


def _differing(recorded: str, made: str) -> list[str]:
    """Name the files whose content before or after differs between two patches."""
    one, two = _signature(recorded), _signature(made)
    names = sorted(name for name in one.keys() | two.keys() if one.get(name) != two.get(name))
    return [name.removeprefix("diff --git a/").split(" b/", 1)[0] for name in names]


def apply_patch(worktree: str | Path, patch: str, gitdir: str | Path | None = None) -> None:
    """Apply `patch` to the worktree's files (not its index), exactly; raise `GitError` if not.

    Exactly: after `git apply`, the worktree's change is taken again and
    must name the same blobs before and after for every file (`git apply`
    alone checks only the lines around each change, so a file that differs
    elsewhere would take the patch and end up other than recorded). When it
    does not, the patch is taken back out and the files are named. A patch
    adws did not make (a copy or rename: a copy could read a file outside
    the worktree) is refused before git sees it. Whitespace is taken as it
    is (`--whitespace=nowarn`, and no `apply.ignoreWhitespace`, whatever the
    user's configuration says): the patch is what the agent wrote.
    """
    if not patch:
        return
    foreign = [line for line in patch.split("\n") if line.startswith(_FOREIGN)]
    if foreign:
        msg = f"the patch is not one adws makes (it copies or renames: {foreign[0]!r})"
        raise GitError(msg)
    try:
        patch.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        msg = f"the patch is not one adws makes (it holds {exc.object[exc.start]!r})"
        raise GitError(msg) from exc
    folder, known = Path(worktree), _gitdir(gitdir)
    before = snapshot(folder, known)
    _apply(folder, patch, known)
    made = patch_between(folder, before, snapshot(folder, known), known)
    differing = _differing(patch, made)
    if differing:
        _apply(folder, made, known, "--reverse")  # what it did here, taken back exactly
        msg = (
            "the patch applies, but the files it changes were not what they were when it"
            f" was made: {', '.join(differing)} (the worktree is left as it was)"
        )
        raise GitError(msg)


def _apply(folder: Path, patch: str, gitdir: Path | None, *how: str) -> None:
    git(
        folder,
        "-c",
        "apply.ignoreWhitespace=no",
        "apply",
        "--binary",
        "--whitespace=nowarn",
        *how,
        "-",
        gitdir=gitdir,
        stdin_text=patch,
    )


@final
class CallEdits:
    """What one agent call changes in the worktree in flight: a snapshot now, a patch after.

    Outside a worktree (`adws.engine.scope.current_worktree`) it takes
    nothing and `patch()` is None; so it is when git cannot snapshot the
    worktree: the call goes on, only its patch is not journaled.
    """

    def __init__(self) -> None:
        """Snapshot the worktree in flight, if there is one."""
        self.folder = current_worktree()
        self.gitdir = current_gitdir()
        self.before: str | None = None
        if self.folder is not None:
            try:
                self.before = snapshot(self.folder, self.gitdir)
            except GitError:
                self.before = None

    def patch(self) -> str | None:
        """Return what changed in the worktree since the snapshot ("" for nothing), or None."""
        if self.folder is None or self.before is None:
            return None
        try:
            return patch_between(
                self.folder, self.before, snapshot(self.folder, self.gitdir), self.gitdir
            )
        except GitError:
            return None
