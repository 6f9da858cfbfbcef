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
    linker = _Linker(link if mode == "hardlink" else None)
    if mode == "symlink":
        target.symlink_to(source, target_is_directory=source.is_dir())
    elif source.is_symlink():
        target.symlink_to(source.readlink())
    elif source.is_dir():
        linker.tree(str(source), str(target))
    else:
        linker.file(str(source), str(target))


class _Linker:
    """Hard-link a tree's files, falling back to copies once the file system refuses a link."""

    def __init__(self, link: Callable[[str, str], None] | None) -> None:
        """Link with `link`; None copies every file."""
        self._link = link

    def tree(self, source: str, target: str) -> None:
        """Make `target` anew with `source`'s folders, links and files."""
        os.mkdir(target)  # noqa: PTH102 - os.scandir's strings, for speed over many files
        with os.scandir(source) as entries:
            for entry in entries:
                there = os.path.join(target, entry.name)  # noqa: PTH118 - as above
                if entry.is_symlink():
                    os.symlink(os.readlink(entry.path), there)  # noqa: PTH211, PTH115 - as above
                elif entry.is_dir():
                    self.tree(entry.path, there)
                else:
                    self.file(entry.path, there)

    def file(self, source: str, target: str) -> None:
        """Link the file, or copy it (its times and mode too) once links fail."""
        if self._link is not None:
            try:
                self._link(source, target)
            except OSError:
                self._link = None  # this file system links no more: copy the rest
            else:
                return
        shutil.copy2(source, target)
