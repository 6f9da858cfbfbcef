"""`protect=(globs...)`: an attempt that changes a protected path fails `Tampered`.

Checks are code the project already has; an agent that passes them by
weakening them (editing a test, a CI file) has not done the work. The
paths are compared as git sees them (relative to the repository, with
`/`); a glob's `*` and `**` match across folders (`tests/**`,
`**/conftest.py`).
"""

from __future__ import annotations

import fnmatch
import subprocess
from collections.abc import Sequence

from adws._exceptions import DefinitionTypeError
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.scope import current_worktree
from adws.io_ops.changes import Snapshot, snapshot, touched

__all__ = ["Guard", "check_protect", "protected_paths"]


def check_protect(owner: str, protect: object) -> tuple[str, ...]:
    """Refuse, at definition time, a `protect` that is not a sequence of glob strings.

    >>> check_protect("worktree 'w'", ["tests/**"])
    ('tests/**',)
    """
    if isinstance(protect, str) or not isinstance(protect, Sequence):
        msg = f"{owner}: protect must be a tuple of globs such as ('tests/**',), got {protect!r}"
        raise DefinitionTypeError(msg)
    globs = tuple(protect)
    if not all(isinstance(glob, str) and glob for glob in globs):
        msg = f"{owner}: protect must hold non-empty glob strings, got {protect!r}"
        raise DefinitionTypeError(msg)
    return globs


def protected_paths(paths: Sequence[str], globs: Sequence[str]) -> tuple[str, ...]:
    """Return the paths some glob protects.

    >>> protected_paths(["src/a.py", "tests/t.py", "x/conftest.py"], ["tests/**", "**/conftest.py"])
    ('tests/t.py', 'x/conftest.py')
    """

    def matches(path: str, glob: str) -> bool:
        return fnmatch.fnmatchcase(path, glob) or (
            glob.startswith("**/") and fnmatch.fnmatchcase(path, glob[3:])
        )

    return tuple(path for path in paths if any(matches(path, glob) for glob in globs))


class Guard:
    """Watch one workspace from now on: `check()` says whether a protected path changed.

    The workspace is the worktree in flight (else the current folder); a
    folder git cannot read makes `check()` fail closed with `Tampered`.
    """

    def __init__(self, step_name: str, globs: tuple[str, ...], folder: str | None = None) -> None:
        """Note the workspace's state now."""
        self.step_name, self.globs = step_name, globs
        self.folder = folder or current_worktree() or "."
        self.before: Snapshot | OSError
        try:
            self.before = snapshot(self.folder)
        except (OSError, subprocess.SubprocessError) as exc:
            self.before = OSError(str(exc))

    def check(self) -> PipelineError | None:
        """Return `Tampered` naming the protected files changed since the guard began."""
        before = self.before
        try:
            if isinstance(before, OSError):
                raise before
            changed = touched(self.folder, before)
        except (OSError, subprocess.SubprocessError) as exc:
            message = (
                f"protect={self.globs!r} needs a git working tree to compare, and {exc};"
                " run the step in a worktree (or a git checkout), or drop protect"
            )
            return PipelineError(self.step_name, ErrorType.TAMPERED, message, {"permanent": True})
        hit = protected_paths(changed, self.globs)
        if not hit:
            return None
        files = ", ".join(hit)
        message = (
            f"changed protected files {files}: restore {files}; do not change"
            f" {' or '.join(self.globs)} (they are how the work is checked)"
        )
        details = {"files": list(hit), "protect": list(self.globs)}
        return PipelineError(self.step_name, ErrorType.TAMPERED, message, details)
