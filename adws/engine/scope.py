"""The run in progress, as a step running inside it sees it: its scope and its branch.

`run_workflow` sets a `RunScope` for the duration of a run; combinators,
parallel branches and agent steps read it (`current_scope`) for the run's
injected `sleep`, its observers, the outputs a resume reuses, the cap on
agent calls in flight and the budget. A parallel branch names itself in its
own thread's context (`enter_branch`), so an agent call knows which branch
asks (`current_branch`); a `worktree` step names its folder the same way
(`in_worktree`), so the agent and shell steps inside run there by default
(`current_worktree`). What workspaces and approvals need from a resumed
run's journal (each worktree's recorded base commit, each decision a person
made) travels in the scope too, and so does the session each agent step's
latest call ran in (`sessions`), for its next call to continue.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar, Token
from typing import Final, Literal, final

import attrs

from adws import io_ops
from adws.engine.caps import CapGate, QuotaBook
from adws.engine.events import RunEvent
from adws.engine.metering import Meter
from adws.engine.parking import DEFAULT_MAX_WAIT
from adws.engine.reservations import Ledger
from adws.engine.usage import Budget, Usage

__all__ = [
    "AgentSession",
    "Decision",
    "Round",
    "RunScope",
    "Sleep",
    "current_base",
    "current_branch",
    "current_gitdir",
    "current_round",
    "current_scope",
    "current_sleep",
    "current_worktree",
    "enter_branch",
    "enter_round",
    "enter_scope",
    "in_round",
    "in_worktree",
    "leave_round",
    "leave_scope",
]

Sleep = Callable[[float], None]


@final
@attrs.frozen
class Decision:
    """What a person decided at an `approval_step`: approved or rejected, by whom, when, why.

    `at` is an ISO 8601 UTC time; `note` is the approver's note or the
    reason for a rejection (`timeout` when the wait expired).
    """

    verdict: Literal["approved", "rejected"]
    by: str
    at: str
    note: str = ""

    def to_dict(self) -> dict[str, str]:
        """Return the decision as the approval step's output holds it."""
        return {"verdict": self.verdict, "by": self.by, "at": self.at, "note": self.note}


@final
@attrs.frozen
class AgentSession:
    """The session an agent step's latest call ran in, for its next call to continue.

    `attempt` is the attempt that call belonged to (as the journal numbers
    it); `feedback` the feedback lines the session has been told, so the
    next call says only what is new. `interrupted` marks the call a resumed
    run found cut off mid-way: its next call says the work was interrupted.
    `parent` marks the session of the same step in the run this one follows
    (a ticket's review round): the step's first call continues it with its
    whole prompt, unless `why` says it cannot (the parent ran on another
    host, where its CLI keeps the session): then it starts afresh, saying why.
    """

    session_id: str
    attempt: int
    feedback: tuple[str, ...] = ()
    interrupted: bool = False
    parent: str = ""
    why: str = ""


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
    of each). `worktrees` is the folder `worktree` steps make their folders
    in ("" for the shared folder outside any project: see
    `adws.workspaces._home`); `bases` maps a worktree's label to the base commit a
    resumed run recorded for it, so a worktree adws removed starts again
    from there; `decisions` maps an approval step's name to what a person
    decided since the run began waiting there. `ledger` holds what agent
    calls in flight have reserved of the budget (see
    `adws.engine.reservations`); `estimate` tells, by agent step name, what
    a call of that step costs by the journal's history (None: no history);
    `raised` is a budget `adws approve` raised, whose limits replace those
    of the workflow and of every step. `sessions` maps an agent call's
    place, `(path, agent step)`, to the session its latest call ran in (a
    resume starts it with the calls it found interrupted); the agent steps
    keep it up to date. `max_wait` is the longest an agent step waits
    in-process for a limit to reset (seconds); a reset further away parks
    the run (see `adws.engine.parking`). `caps` checks and reserves each
    agent call against the caps that hold across runs (`adws.engine.caps`;
    None: no journal, no caps); `quotas` keeps what agents said of their
    accounts' quota windows and parks a call on a full one (None: no journal).
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
    worktrees: str = ""
    bases: Mapping[str, str] = attrs.field(factory=dict)
    decisions: Mapping[str, Decision] = attrs.field(factory=dict)
    ledger: Ledger = attrs.field(factory=Ledger)
    estimate: Callable[[str], Usage | None] | None = None
    raised: Budget | None = None
    sessions: dict[tuple[str, str], AgentSession] = attrs.field(factory=dict)
    max_wait: float = DEFAULT_MAX_WAIT
    caps: CapGate | None = None
    quotas: QuotaBook | None = None


_SCOPE: Final[ContextVar[RunScope | None]] = ContextVar("adws_run_scope", default=None)
_NO_RUN: Final = RunScope()
_BRANCH: Final[ContextVar[str]] = ContextVar("adws_branch", default="")
_WORKTREE: Final[ContextVar[str | None]] = ContextVar("adws_worktree", default=None)
_GITDIR: Final[ContextVar[str]] = ContextVar("adws_worktree_gitdir", default="")
_BASE: Final[ContextVar[str]] = ContextVar("adws_worktree_base", default="")


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


def current_worktree() -> str | None:
    """Return the folder of the `worktree` step in flight (its absolute path), or None.

    Agent and shell steps that name no `cwd` of their own run there.
    """
    return _WORKTREE.get()


def current_gitdir() -> str:
    """Return the git directory git made for the worktree in flight ("" when none is known).

    adws's own git names it explicitly in the worktree (never reading the
    worktree's `.git`, which a step may rewrite).
    """
    return _GITDIR.get()


def current_base() -> str:
    """Return the commit the worktree in flight was made from ("" when none is known)."""
    return _BASE.get()


@contextlib.contextmanager
def in_worktree(path: str, gitdir: str = "", base: str = "") -> Iterator[None]:
    """Make `path` the worktree in flight while the block runs (branches started inside too).

    `gitdir` is the git directory git made for it (see `current_gitdir`),
    `base` the commit it was made from (see `current_base`).
    """
    token = _WORKTREE.set(path)
    known = _GITDIR.set(gitdir)
    based = _BASE.set(base)
    try:
        yield
    finally:
        _BASE.reset(based)
        _GITDIR.reset(known)
        _WORKTREE.reset(token)


@final
class Round:
    """What the steps of one round saw when it began, by place: for an agent step's `NoChange`.

    A round is one call of a step under its retry policy (all its attempts),
    or one round of a `with_verification`; the first attempt of an agent
    step in it notes its folder's state (`remember`), and every later
    attempt of the round compares with that, so a retry that only mends
    its answer does not count as changing nothing.
    """

    __slots__ = ("_lock", "_seen")

    def __init__(self) -> None:
        """Start a round that has seen nothing yet.

        Every step of every run starts one and few ever `remember` (an agent
        step's first attempt): its lock is made at the first.
        """
        self._lock: threading.Lock | None = None
        self._seen: dict[tuple[str, str], object] = {}

    def remember(self, place: tuple[str, str], read: Callable[[], object]) -> object:
        """Return what `place` was when the round first asked (reading it now, the first time)."""
        with _MAKING:
            if self._lock is None:
                self._lock = threading.Lock()
            lock = self._lock
        with lock:
            if place not in self._seen:
                self._seen[place] = read()
            return self._seen[place]


_MAKING: Final = threading.Lock()
"""Held while a round makes its own lock (two threads of a round may ask at once)."""


_ROUND: Final[ContextVar[Round | None]] = ContextVar("adws_round", default=None)


def current_round() -> Round | None:
    """Return the round in flight (None outside any: each attempt is then its own round)."""
    return _ROUND.get()


@contextlib.contextmanager
def in_round() -> Iterator[Round]:
    """Start a fresh round for the block (see `Round`)."""
    fresh = Round()
    token = _ROUND.set(fresh)
    try:
        yield fresh
    finally:
        _ROUND.reset(token)


def enter_round() -> Token[Round | None]:
    """Start a fresh round; `leave_round` with the token ends it (`in_round`, unwrapped).

    The executor starts a round for every step: a plain call and a `try`
    cost less there than a context manager's generator.
    """
    return _ROUND.set(Round())


def leave_round(token: Token[Round | None]) -> None:
    """End the round `enter_round` started."""
    _ROUND.reset(token)
