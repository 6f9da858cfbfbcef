"""The command line's own error, and reading an answer file (`adws validate`).

Nothing here prints or exits; `adws.cli` does: a `UsageError` is reported
on stderr with exit code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from adws._exceptions import AdwsError

__all__ = ["UsageError", "read_answer"]


class UsageError(AdwsError, ValueError):
    """A mistake on the command line; reported on stderr with exit code 2."""


def read_answer(source: str) -> str:
    """Read an agent's answer from a file, or from stdin for `-`."""
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        msg = f"cannot read {source}: {exc.strerror}"
        raise UsageError(msg) from exc
