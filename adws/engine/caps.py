"""Caps that hold across runs, as the engine sees them: a gate each agent call passes.

The engine knows nothing of where caps live (the journal, see
`adws.journal.store.caps`): `adws.runs` hands a run that has a journal a
`CapGate` in its scope. Before an agent call starts, the agent step asks
the gate with the call's estimate; the gate checks every cap that applies
and reserves the estimate against each in one transaction, returning the
function that settles the reservation to the call's real spend when the
call ends (None: it spent nothing, the reservation is released), or a
`CapFull` saying why the call may not start: a cap whose window has no
room parks the run until it frees (`wake_at`), an unreadable cap refuses
the call outright (`wake_at` None: nobody can tell what it allows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias, final

import attrs

from adws.engine.usage import Usage

__all__ = ["CapFull", "CapGate", "CapSettle"]

CapSettle: TypeAlias = Callable[[Usage | None], None]
"""Settle a call's cap reservation to what it really spent (None: nothing; released)."""


@final
@attrs.frozen
class CapFull:
    """Why a call may not start under a cap: the reason, and when its window frees (Unix s)."""

    reason: str
    wake_at: float | None = None


CapGate: TypeAlias = Callable[[str, Usage | None], CapSettle | CapFull]
"""Check and reserve a call of an agent step (its name, its estimate) against every cap."""
