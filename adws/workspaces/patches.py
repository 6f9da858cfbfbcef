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
A binary hunk is compressed: a forged one of a megabyte can declare a
gigabyte, which `git apply` would inflate in memory and write. So each
binary hunk's declared size (and a delta's result) is read first, and a
patch whose binary hunks write more than the step's output cap
(`max_bytes`) is refused before git sees it (`binary_sizes`).
"""

from __future__ import annotations

import base64
import re
import zlib
from pathlib import Path
from typing import Final, final

from adws._exceptions import MalformedError
from adws.engine.scope import current_gitdir, current_worktree
from adws.workspaces._git import GitError, git, tree_hash

__all__ = [
    "CallEdits",
    "GitError",
    "PatchRefusedError",
    "apply_patch",
    "binary_sizes",
    "patch_between",
    "snapshot",
]


class PatchRefusedError(GitError):
    """A patch refused before git saw it: not one adws makes, or past the step's output cap."""


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


_BINARY: Final = "GIT binary patch"
_HUNK: Final = re.compile(r"(literal|delta) (0|[1-9][0-9]*)")
_HUNK_WORDS: Final = ("literal ", "delta ")
"""How git knows a binary hunk's first line: it reads any number after them (`strtoul`)."""
_LENGTHS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
"""A base85 line's first character: how many bytes it holds, 1 to 52 (as git writes it)."""


def _decoded(lines: list[str]) -> bytes:
    """Decode a binary hunk's base85 lines, as git does; `ValueError` for one git would refuse."""
    data = bytearray()
    for line in lines:
        length = _LENGTHS.find(line[:1]) + 1
        if length == 0 or len(line) - 1 != -(-length // 4) * 5:
            msg = f"a binary hunk's line is not base85 as git writes it: {line[:20]!r}"
            raise MalformedError(msg)
        data += base64.b85decode(line[1:])[:length]
    return bytes(data)


def _delta_result(lines: list[str], size: int) -> int:
    """Return the size of the file a binary delta makes (its header's second number).

    The delta inflates to `size` bytes (checked against the cap already), so
    reading it costs at most that.
    """
    inflater = zlib.decompressobj()
    delta = inflater.decompress(_decoded(lines), size + 1)
    if len(delta) != size or not inflater.eof:
        msg = f"a binary delta does not inflate to its declared {size} bytes"
        raise MalformedError(msg)
    numbers, at = [], 0
    for _ in range(2):  # the source's size, then the result's: 7 bits a byte, low bits first
        value = shift = 0
        while at < len(delta):
            value |= (delta[at] & 0x7F) << shift
            shift, at = shift + 7, at + 1
            if not delta[at - 1] & 0x80:
                break
        numbers.append(value)
    return numbers[1]


def _hunks(patch: str) -> list[tuple[int, str, int, list[str]]]:
    r"""List a patch's binary hunks: direction (0 applied, 1 taken back), kind, size, lines.

    A hunk's first line git would read a size from (`literal 01073741824`,
    `delta 5\r`) that is not plainly `literal N` or `delta N` is refused
    (`ValueError`): its size must be the one counted.
    """
    found: list[tuple[int, str, int, list[str]]] = []
    lines = patch.split("\n")
    at = 0
    while at < len(lines):
        if lines[at] != _BINARY:
            at += 1
            continue
        at += 1
        for direction in (0, 1):
            if at >= len(lines) or not lines[at].startswith(_HUNK_WORDS):
                break
            header = _HUNK.fullmatch(lines[at])
            if header is None:  # git would read a size from it all the same
                msg = f"a binary hunk's size is not written as adws writes it: {lines[at][:40]!r}"
                raise MalformedError(msg)
            end = at + 1
            while end < len(lines) and lines[end]:
                end += 1
            found.append((direction, header[1], int(header[2]), lines[at + 1 : end]))
            at = end + 1
    return found


def binary_sizes(patch: str, cap: int | None = None) -> tuple[int, int]:
    r"""Return how many bytes a patch's binary hunks come to: applied, and taken back.

    A `literal N` inflates to the N bytes it writes; a `delta N` inflates to
    N bytes and writes a file of the size its header names: the larger
    counts. A delta past `cap` is not inflated to read that header (its N
    is past the cap already), so reading a forged patch never costs more
    than the cap. A hunk git would read that adws does not write is a
    `ValueError`.

    >>> patch = "GIT binary patch\nliteral 5\nHcmV?d00001\n\nliteral 0\nHcmV?d00001\n"
    >>> binary_sizes(patch), binary_sizes("diff --git a/x b/x\n+text\n")
    ((5, 0), (0, 0))
    """
    written = [0, 0]
    for direction, kind, size, lines in _hunks(patch):
        inflated = kind == "literal" or (cap is not None and size > cap)
        written[direction] += size if inflated else max(size, _delta_result(lines, size))
    return written[0], written[1]


def _refuse_bombs(patch: str, max_bytes: int) -> None:
    """Refuse a patch whose binary hunks come to more than `max_bytes`, before git reads it."""
    try:
        most = max(binary_sizes(patch, max_bytes))
    except ValueError as exc:
        msg = f"the patch is not one adws makes ({exc}): refused before git apply"
        raise PatchRefusedError(msg) from exc
    if most > max_bytes:
        msg = (
            f"the patch's binary hunks come to {most} bytes once inflated, past the step's"
            f" output cap of {max_bytes} bytes (max_output_bytes): refused before git apply"
        )
        raise PatchRefusedError(msg)


def apply_patch(
    worktree: str | Path,
    patch: str,
    gitdir: str | Path | None = None,
    *,
    max_bytes: int | None = None,
) -> None:
    """Apply `patch` to the worktree's files (not its index), exactly; raise `GitError` if not.

    Exactly: after `git apply`, the worktree's change is taken again and
    must name the same blobs before and after for every file (`git apply`
    alone checks only the lines around each change, so a file that differs
    elsewhere would take the patch and end up other than recorded). When it
    does not, the patch is taken back out and the files are named. A patch
    adws did not make (a copy or rename: a copy could read a file outside
    the worktree) is refused before git sees it. Whitespace is taken as it
    is (`--whitespace=nowarn`, and no `apply.ignoreWhitespace`, whatever the
    user's configuration says): the patch is what the agent wrote. With
    `max_bytes` (the step's output cap), binary hunks that would write more
    than that, applied or taken back, are refused before git reads them (a
    forged hunk of one megabyte can declare a gigabyte; see `binary_sizes`).
    """
    if not patch:
        return
    if max_bytes is not None:
        _refuse_bombs(patch, max_bytes)
    foreign = [line for line in patch.split("\n") if line.startswith(_FOREIGN)]
    if foreign:
        msg = f"the patch is not one adws makes (it copies or renames: {foreign[0]!r})"
        raise PatchRefusedError(msg)
    try:
        patch.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        msg = f"the patch is not one adws makes (it holds {exc.object[exc.start]!r})"
        raise PatchRefusedError(msg) from exc
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
