"""What a claim records with it, in its own transaction: a new baseline, a run's raised options.

A resume with `--keep-changed` makes today's fingerprints of the changed
finished steps the recorded ones (`baseline`), so a later approve, reject
or resume is not refused again for the change a person accepted; an
approval that raised a budget records the run's options that now hold it
(`options`). Each is a `Guarded` statement for `Journal.claim`'s `then`
(see `adws.journal.workspaces.decided_statement` for the decision itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from adws.journal.store import Guarded

__all__ = ["baseline", "options"]

_BASELINE: Final = (
    "UPDATE attempts SET fingerprint = ? WHERE run_id = ? AND step = ? AND status = 'succeeded'"
)
_OPTIONS: Final = "UPDATE runs SET options = ? WHERE run_id = ?"


def baseline(run_id: str, step: str, fingerprint: str | None) -> Guarded:
    """Make `fingerprint` the recorded one of `step`'s succeeded attempts."""
    return (_BASELINE, (fingerprint, run_id, step)), None


def options(run_id: str, encoded: str | None) -> Guarded:
    """Record the options a run goes on with (`RunOptions.to_json`)."""
    return (_OPTIONS, (encoded, run_id)), None
