"""What changed in a git working tree between two moments: for `protect=(globs...)`.

`snapshot(folder)` notes the commit checked out and the content of every
path git reports as changed, added or untracked; `touched(folder, before)`
lists the paths whose content differs since (committed, edited, created,
deleted or restored), so a change already there before is not counted.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Final, final

import attrs

from adws._exceptions import ToolError

__all__ = ["Snapshot", "snapshot", "touched"]

_GIT_SECONDS: Final = 120.0


@final
@attrs.frozen
class Snapshot:
    """The commit a working tree was on and the content of each path changed from it."""

    head: str
    changed: Mapping[str, str]


def _git(folder: str, *args: str) -> str:
    """Run git in `folder`; raise ToolError with git's message when it fails.

    A git that hangs past `_GIT_SECONDS` raises `subprocess.TimeoutExpired`.
    """
    done = subprocess.run(  # noqa: S603 - git, with arguments adws chose
        ["git", "-c", "core.quotepath=off", *args],  # noqa: S607 - git from PATH, as everywhere
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=_GIT_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        msg = f"git {args[0]} in {folder} failed: {done.stderr.strip()}"
        raise ToolError(msg)
    return done.stdout


def _content(folder: str, path: str) -> str:
    """Hash a file's bytes (`-` for a path that is gone or is no file)."""
    try:
        return hashlib.sha256(Path(folder, path).read_bytes()).hexdigest()
    except OSError:
        return "-"


def _changed_paths(folder: str) -> list[str]:
    entries = _git(folder, "status", "--porcelain=v1", "-z", "--untracked-files=all").split("\0")
    paths: list[str] = []
    rest = iter(entries)
    for entry in rest:
        if entry:
            paths.append(entry[3:])
            if entry[0] in "RC":
                paths.append(next(rest))  # the path it was renamed or copied from
    return paths


def snapshot(folder: str) -> Snapshot:
    """Note `folder`'s commit and its changed paths' content; OSError if git cannot say."""
    head = _git(folder, "rev-parse", "HEAD").strip()
    return Snapshot(head, {path: _content(folder, path) for path in _changed_paths(folder)})


def touched(folder: str, before: Snapshot) -> tuple[str, ...]:
    """List (sorted) the paths whose content changed in `folder` since `before`."""
    now = snapshot(folder)
    paths = {
        path
        for path in {*before.changed, *now.changed}
        if before.changed.get(path) != now.changed.get(path)
    }
    if now.head != before.head:
        paths.update(_git(folder, "diff", "--name-only", "-z", before.head, now.head).split("\0"))
    paths.discard("")
    return tuple(sorted(paths))
