"""The run in progress, as a step running inside it sees it: its scope and its branch.

`run_workflow` sets a `RunScope` for the duration of a run; combinators,
parallel branches and agent steps read it (`current_scope`) for the run's
injected `sleep`, its observers, the outputs a resume reuses, the cap on
agent calls in flight and the budget. A parallel branch names itself in its
own thread's context (`enter_branch`), so an agent call knows which branch
asks (`current_branch`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from typing import Final, final

import attrs

from adws import io_ops
from adws.events import RunEvent
from adws.usage import Budget, Meter

__all__ = [
    "RunScope",
    "Sleep",
    "current_branch",
    "current_scope",
    "current_sleep",
    "enter_branch",
    "enter_scope",
    "leave_scope",
]

Sleep = Callable[[float], None]


@final
@attrs.frozen
class RunScope:
    """What a step running inside `run_workflow` may need from its run.

    `sleep` is the run's injected sleep (combinators and branches wait
    through it); `emit` reports branch events to the run's observers;
    `reuse` holds branch outputs an earlier attempt of this run stored (a
    resume re-runs only the branches that did not succeed); `agents` caps
    agent calls in flight across the run (`max_agents`); `index` and `total`
    place the step in flight; `meter` adds up what the run's agent calls
    cost and `budget` caps it (the workflow's and the caller's, the tighter
    of each).
    """

    run_id: str = ""
    sleep: Sleep = io_ops.sleep
    emit: Callable[[RunEvent], None] = attrs.field(default=lambda _event: None)
    reuse: Mapping[str, Mapping[str, object]] = attrs.field(factory=dict)
    agents: threading.BoundedSemaphore | None = None
    index: int = 0
    total: int = 0
    meter: Meter = attrs.field(factory=Meter)
    budget: Budget | None = None


_SCOPE: Final[ContextVar[RunScope | None]] = ContextVar("adws_run_scope", default=None)
_NO_RUN: Final = RunScope()
_BRANCH: Final[ContextVar[str]] = ContextVar("adws_branch", default="")


def enter_scope(scope: RunScope) -> Token[RunScope | None]:
    """Make `scope` the run in progress; `leave_scope` with the token restores the one before."""
    return _SCOPE.set(scope)


def leave_scope(token: Token[RunScope | None]) -> None:
    """Restore the scope that was in progress before `enter_scope`."""
    _SCOPE.reset(token)


def current_branch() -> str:
    """Return the path of the parallel branch in flight (`verify_claims[0]`), or ""."""
    return _BRANCH.get()


def enter_branch(path: str) -> None:
    """Say, in a branch's own thread context, which branch runs there."""
    _BRANCH.set(path)


def current_scope() -> RunScope:
    """Return the scope of the run in progress (an empty one outside a run)."""
    return _SCOPE.get() or _NO_RUN


def current_sleep() -> Sleep:
    """Return the `sleep` the run in progress was given (`time.sleep` outside a run)."""
    return current_scope().sleep
