"""One worktree attempt's change, as a value: the diff from the base, by attempt (`DiffRecord`).

The SQL that keeps and reads it is `adws.journal.store.diffs`.
"""

from __future__ import annotations

from typing import final

import attrs

from adws.journal.records.exchanges import Text

__all__ = ["DiffRecord"]


@final
@attrs.frozen
class DiffRecord:
    """One attempt's change in one worktree, as the journal kept it."""

    step: str
    """The attempt's path: the step, or the branch (`candidates[2]`)."""
    attempt: int
    label: str
    """The worktree's label (its folder's and branch's last part)."""
    recorded: str
    diff: Text
    """The patch from the base; `text` is None when transcripts were off or it cannot be read."""
    problems: tuple[str, ...] = ()
    """What of the row could not be read (a corrupt or forged journal); () when all could."""
    taken: bool = True
    """False when git could not make the attempt's diff (then `diff` is empty and unread)."""
