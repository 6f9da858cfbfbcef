"""What goes into `Runs` and what comes out: requests, outcomes and refusals, all values."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs
from returns.io import IOResult

from adws._exceptions import AdwsError, NotFoundError, RefusedError
from adws._frozen import freeze_mapping
from adws.agents.base import AgentBackend  # attrs resolves the annotations at run time
from adws.engine.context import WorkflowContext
from adws.engine.errors import PipelineError
from adws.engine.step import Workflow  # as above
from adws.journal.records.options import RunOptions  # as above
from adws.journal.records.runs import AttemptRecord, RunRecord
from adws.runs.summary import RunSummary

if TYPE_CHECKING:
    from adws.engine.events import RunObserver

__all__ = [
    "EXIT_USAGE",
    "CancelOutcome",
    "HandedOver",
    "Observers",
    "Refused",
    "RunOutcome",
    "RunRequest",
    "RunState",
    "Starting",
]

EXIT_USAGE: Final = 2
"""The exit code of a refusal unless it says otherwise: the run was asked for wrongly."""


@final
@attrs.frozen
class RunRequest:
    """A run to start: its workflow, inputs, and how its agents answer.

    `workflow` is a workflow's name, found in the folder `workflows`
    (default: `$ADWS_WORKFLOWS`, else `./workflows`) and checked as `adws
    run` checks it (inputs the workflow does not take, inputs it needs,
    `adws check`'s errors: each a `Refused`), or a `Workflow` object, run
    as it is given (its declared inputs are checked by the executor, as
    `run_workflow` checks them). `agent` answers every agent step (the
    kit's `ScriptedAgent`, say); without it, `options.agent` chooses one
    as `--agent` does. `options` are recorded with the run, so a resume
    uses them again.
    """

    workflow: str | Workflow
    inputs: Mapping[str, object] = attrs.field(factory=dict, converter=freeze_mapping)
    agent: AgentBackend | None = attrs.field(default=None, kw_only=True)
    options: RunOptions = attrs.field(factory=RunOptions, kw_only=True)
    workflows: str | Path | None = attrs.field(default=None, kw_only=True)


@final
@attrs.frozen
class Refused:
    """Why `Runs` did not do what it was asked, as a value the caller decides on.

    `code` is the exit code a command ends with (2: asked wrongly; 0:
    nothing to do; 1: rows the journal cannot read, named in `problems`;
    75: a parked run whose time has not come). `then` says what to do next
    when the reason does not. `found` is False when what was named does
    not exist (no such run), so a caller raising it raises `NotFoundError`.
    """

    reason: str
    code: int = EXIT_USAGE
    then: str | None = None
    problems: tuple[str, ...] = ()
    journal: str | None = None
    """The journal whose rows `problems` name."""
    found: bool = True

    def __str__(self) -> str:
        """Say why, and what to do next."""
        return self.reason if self.then is None else f"{self.reason}; {self.then}"

    def error(self) -> AdwsError:
        """Return the exception a caller that cannot go on raises (the kit's `run`, say).

        Nothing to do, or nothing there, is a `NotFoundError` (a
        `LookupError`); anything else a `RefusedError` (a `ValueError`).
        """
        if not self.found or self.code == 0:
            return NotFoundError(str(self))
        return RefusedError(str(self), self)


@final
@attrs.frozen
class Starting:
    """What a run that is about to start tells the observers built for it.

    `resumed`: it continues a recorded run; `options` describes the options
    it runs with (a resume names what it changed); `kept` what a resume
    keeps from earlier sessions (its steps and their cost), for the last
    line of progress.
    """

    run_id: str
    workflow: str
    resumed: bool = False
    options: str = ""
    kept: str | None = None


Observers: TypeAlias = "Sequence[RunObserver] | Callable[[Starting], Sequence[RunObserver]]"
"""What watches a run: observers, or a function that builds them once the run is known."""


@final
@attrs.frozen
class RunOutcome:
    """How a run this process ran ended: its id, status, result and summary.

    `summary` folded every event (per step: status, attempts, cost; the
    run's `wake_at` when parked); it is read, never fed, once the run is
    over. `signal` is the signal that interrupted it (None: none);
    `problems` what the journal did not record (a resume may then run a
    finished step again); `options` the options it ran with.
    """

    run_id: str
    status: str
    result: IOResult[WorkflowContext, PipelineError]
    summary: RunSummary
    options: RunOptions = attrs.field(factory=RunOptions)
    signal: int | None = None
    problems: tuple[str, ...] = ()
    journal: str | None = None
    """The journal the run was recorded in (None: none)."""
    given: frozenset[str] = frozenset()
    """The names of the inputs the run started with (what it made itself is the rest)."""


@final
@attrs.frozen
class HandedOver:
    """A decision recorded on a run of another host, which continues it there."""

    run_id: str
    host: str


@final
@attrs.frozen
class CancelOutcome:
    """What a cancel did: ended the run (`cancelled`), or asked its holder to (`requested`).

    `outcome` is the run's cleanup, when this process ran it (a waiting or
    parked run); `holder` names the process that will stop a running run.
    """

    run_id: str
    state: Literal["cancelled", "requested"]
    outcome: RunOutcome | None = None
    holder: str | None = None


@final
@attrs.frozen
class RunState:
    """A run as the journal holds it: its record and its attempts, in order."""

    record: RunRecord
    attempts: tuple[AttemptRecord, ...]
