"""Give a worktree a seed's folder: hard links (copies where links fail), copies, or one link.

`hardlink` makes the folders anew and hard-links each file (the bytes are
shared: a step that edits a shared file in place edits it for the seed and
every worktree that has it; `copy` where steps do); a file the file system
will not link (another device, too many links) is copied, and so is every
file after it. A symbolic link inside is made again as the same link.
`symlink` makes the path one link to the seed's folder.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from adws.workspaces.seeds import ShareMode

__all__ = ["share_into"]


def share_into(
    source: Path,
    target: Path,
    mode: ShareMode,
    *,
    link: Callable[[str, str], None] = os.link,
) -> None:
    """Make `target` hold what `source` holds, as `mode` says (`link` makes one hard link)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode == "symlink":
        target.symlink_to(source, target_is_directory=source.is_dir())
    elif mode == "copy" or source.is_symlink() or not source.is_dir():
        _copy(source, target)
    else:
        _Linker(link).tree(str(source), str(target))


def _copy(source: Path, target: Path) -> None:
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target, follow_symlinks=False)


class _Linker:
    """Hard-link a tree's files, falling back to copies once the file system refuses a link."""

    def __init__(self, link: Callable[[str, str], None]) -> None:
        self._link: Callable[[str, str], None] | None = link

    def tree(self, source: str, target: str) -> None:
        os.mkdir(target)  # noqa: PTH102 - os.scandir's strings, for speed over many files
        with os.scandir(source) as entries:
            for entry in entries:
                there = os.path.join(target, entry.name)  # noqa: PTH118 - as above
                if entry.is_symlink():
                    os.symlink(os.readlink(entry.path), there)  # noqa: PTH211, PTH115 - as above
                elif entry.is_dir():
                    self.tree(entry.path, there)
                else:
                    self._file(entry.path, there)

    def _file(self, source: str, target: str) -> None:
        if self._link is not None:
            try:
                self._link(source, target)
            except OSError:
                self._link = None  # this file system links no more: copy the rest
            else:
                return
        shutil.copy2(source, target)
