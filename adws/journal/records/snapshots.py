"""A snapshot as a resume reads it: the promoted context after one step (see `store.snapshots`)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, final

import attrs

from adws.engine.context import WorkflowContext  # attrs reads the annotation

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Snapshot", "steps_digest"]


@final
@attrs.frozen
class Snapshot:
    """The promoted context after step `index` (`step`), whose attempt row has id `through`.

    A resume that starts from it treats every step up to `index` as done
    with today's fingerprint (it was checked against the snapshot's digest
    of them) and folds only the rows recorded after `through`.
    """

    snapshot_id: int
    step: str
    index: int
    through: int
    context: WorkflowContext


def steps_digest(pairs: Iterable[tuple[str, str | None]]) -> str:
    """Hash the names and fingerprints of the steps a snapshot covers, in order.

    >>> steps_digest([("a", "1")]) == steps_digest([("a", "1")]) != steps_digest([("a", "2")])
    True
    """
    # Step names are identifiers and fingerprints hex: the separators never occur in them.
    text = "\x1e".join(f"{name}\x1f{'-' if found is None else found}" for name, found in pairs)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
