"""A workspace's files as they are on disk, read by adws itself: for `protect=` and `NoChange`.

An agent controls its workspace's git metadata as much as its files: an
index flag (`assume-unchanged`, `skip-worktree`), an ignore rule in
`info/exclude`, a clean filter in `info/attributes`, a replace object or
a moved branch each change what `git status` and `HEAD` say without
changing a byte on disk. So what changed is read from the files
themselves:

- `listing(folder)` names every file, symbolic link and special file
  under `folder` (ignored ones included), leaving out any `.git` and the
  caches tools rebuild (`CACHES`: `__pycache__`, `.pytest_cache`, ...);
- `entry(folder, path)` describes one as git would store it: its mode and
  the id of its bytes as a git blob (`blob_id`: no filter, no attribute);
- `base_entries(folder, commit, ...)` reads a commit's entries with
  replace objects off (`GIT_NO_REPLACE_OBJECTS=1`), and `base_blob` one
  blob's bytes, so they compare with what `entry` says of the disk;
- `stat_snapshot(folder)` notes each path's size, times and inode: two
  equal snapshots mean nothing was written (`NoChange`).
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import attrs

from adws._exceptions import ToolError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

__all__ = [
    "CACHES",
    "SPECIAL",
    "UNREADABLE",
    "Entry",
    "base_blob",
    "base_entries",
    "blob_id",
    "changed_paths",
    "entries",
    "entry",
    "listing",
    "object_format",
    "stat_snapshot",
    "tree_digest",
]

CACHES: Final = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
)
"""Folders tools write and rebuild by themselves: never part of a change, never copied.

A check that runs leaves them behind (`tests/__pycache__/...`); a stale
one could also stand in for the source it caches, so a verify tree starts
without them (see `adws.io_ops.verify_tree`).
"""

_GIT_SECONDS: Final = 120.0
_NO_CODE: Final = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=")
_ENV: Final = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1"}
_LINK: Final = "120000"
_FILE: Final = "100644"
_EXECUTABLE: Final = "100755"
SPECIAL: Final = "special"
"""The mode of a pipe, socket or device: no content, and never the same as a file."""
UNREADABLE: Final = "unreadable"
"""The mode of a path adws could not read (gone, or its permissions): never the same as a file."""


@final
@attrs.frozen
class Entry:
    """One path as git would store it: its mode and the blob id of its bytes.

    A symbolic link's bytes are its target; a special or unreadable path
    has no id.
    """

    mode: str
    oid: str = ""


def blob_id(data: bytes, object_format: str = "sha1") -> str:
    r"""Return the id git gives `data` as a blob (`git hash-object --no-filters`).

    >>> blob_id(b"hello\n")
    'ce013625030ba8dba906f756967f9e9ca394464a'
    """
    digest = hashlib.sha256() if object_format == "sha256" else hashlib.sha1()  # noqa: S324 - git's own id
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _walk(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Yield each path under `folder` that is not a folder, with its `lstat`.

    A folder named `.git` or one of `CACHES` is left out. A folder or path
    that cannot be read raises `OSError`: what cannot be read cannot be
    compared, so the caller fails closed.
    """
    stack = [""]
    while stack:
        prefix = stack.pop()
        with os.scandir(folder / prefix if prefix else folder) as found:
            items = list(found)
        for item in items:
            path = f"{prefix}/{item.name}" if prefix else item.name
            if item.is_dir(follow_symlinks=False):
                if item.name != ".git" and item.name not in CACHES:
                    stack.append(path)
            elif item.name != ".git":
                yield path, item.stat(follow_symlinks=False)


def listing(folder: str | Path) -> dict[str, int]:
    """Name every file, link and special file under `folder` with its `st_mode` (not followed).

    Paths are relative, with `/`; ignored files are included, `.git` and
    `CACHES` are not. Anything that cannot be read raises `OSError`.
    """
    return {path: facts.st_mode for path, facts in _walk(Path(folder))}


def entry(folder: str | Path, path: str, mode: int, object_format: str = "sha1") -> Entry:
    """Describe `path` (whose `st_mode` `listing` gave) as git would store it, from disk."""
    where = Path(folder, path)
    try:
        if stat.S_ISLNK(mode):
            return Entry(_LINK, blob_id(os.fsencode(where.readlink()), object_format))
        if stat.S_ISREG(mode):
            kind = _EXECUTABLE if mode & stat.S_IXUSR else _FILE
            return Entry(kind, blob_id(where.read_bytes(), object_format))
    except OSError:
        return Entry(UNREADABLE)
    return Entry(SPECIAL)


def _git(folder: str | Path, gitdir: str | Path | None, *args: str) -> bytes:
    """Run git (no hook, no monitor, no replace object) and return its stdout; OSError if it fails.

    A git that hangs past two minutes raises `subprocess.TimeoutExpired`.
    """
    where = ["-C", str(folder)]
    if gitdir:
        where += [f"--git-dir={gitdir}", f"--work-tree={folder}"]
    done = subprocess.run(  # noqa: S603 - git, with arguments adws chose
        ["git", *_NO_CODE, *where, *args],  # noqa: S607 - git from PATH, as everywhere
        capture_output=True,
        timeout=_GIT_SECONDS,
        check=False,
        env={**os.environ, **_ENV},
    )
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()
        msg = f"git {args[0]} in {folder} failed: {said}"
        raise ToolError(msg)
    return done.stdout


def object_format(folder: str | Path, gitdir: str | Path | None = None) -> str:
    """Return the repository's object format (`sha1` or `sha256`); OSError outside one."""
    return _git(folder, gitdir, "rev-parse", "--show-object-format").decode().strip()


def base_entries(
    folder: str | Path,
    commit: str,
    gitdir: str | Path | None = None,
    keep: Callable[[str], bool] = lambda _path: True,
) -> dict[str, Entry]:
    """Read the entries of `commit` whose path `keep` accepts, replace objects off.

    A submodule's entry (a commit, not a blob) is left out: its folder is
    another repository's.
    """
    found: dict[str, Entry] = {}
    listed = _git(folder, gitdir, "ls-tree", "-r", "-z", "--full-tree", commit, "--")
    for record in listed.split(b"\0"):
        if not record:
            continue
        head, raw = record.split(b"\t", 1)
        mode, kind, oid = head.decode().split(" ")
        path = os.fsdecode(raw)
        if kind == "blob" and keep(path):
            found[path] = Entry(mode, oid)
    return found


def base_blob(folder: str | Path, oid: str, gitdir: str | Path | None = None) -> bytes:
    """Read one blob's bytes as stored (no filter, no replace object)."""
    return _git(folder, gitdir, "cat-file", "blob", oid)


_RACY_NS: Final = 2_000_000_000
"""A file written this recently (ns) may be written again in the same clock tick: hash it."""


def stat_snapshot(folder: str | Path) -> Mapping[str, tuple[object, ...]]:
    """Note each path's mode, size, modification and change times and inode.

    Two snapshots are equal only when nothing under `folder` was created,
    deleted or changed between them: a write moves the change time, which
    no one can set back, and a file written in the last two seconds (so
    that a second write could fall in the same clock tick) is also hashed,
    as git does for its racily clean entries. A folder that cannot be read
    is an empty snapshot.
    """
    now = time.time_ns()
    found: dict[str, tuple[object, ...]] = {}
    try:
        for path, facts in _walk(Path(folder)):
            recent = now - max(facts.st_mtime_ns, facts.st_ctime_ns) < _RACY_NS
            digest = entry(folder, path, facts.st_mode).oid if recent else ""
            found[path] = (
                facts.st_mode,
                facts.st_size,
                facts.st_mtime_ns,
                facts.st_ctime_ns,
                facts.st_ino,
                digest,
            )
    except OSError:
        return {}
    return found


def entries(
    folder: str | Path,
    keep: Callable[[str], bool] = lambda _path: True,
    object_format: str = "sha1",
) -> dict[str, Entry]:
    """Describe each path under `folder` (as `listing` finds it) that `keep` accepts, from disk."""
    return {
        path: entry(folder, path, mode, object_format)
        for path, mode in listing(folder).items()
        if keep(path)
    }


def tree_digest(found: Mapping[str, Entry]) -> str:
    """Hash a whole reading (paths, modes, contents): equal digests, equal files.

    >>> tree_digest({"a": Entry("100644", "1")}) == tree_digest({"a": Entry("100644", "1")})
    True
    """
    digest = hashlib.sha256()
    for path in sorted(found):
        each = found[path]
        digest.update(f"{each.mode} {each.oid} ".encode() + os.fsencode(path) + b"\0")
    return digest.hexdigest()


def changed_paths(before: Mapping[str, Entry], after: Mapping[str, Entry]) -> tuple[str, ...]:
    """List (sorted) the paths added, deleted or changed (content or mode) between two readings.

    >>> changed_paths({"a": Entry("100644", "1"), "b": Entry("100644", "2")}, {"a": Entry("100755", "1")})
    ('a', 'b')
    """  # noqa: E501
    return tuple(sorted(path for path in {*before, *after} if before.get(path) != after.get(path)))
