"""What the journal knows about a run: its records, and where a resume starts."""

from __future__ import annotations

import json
import math
import socket
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import attrs

from adws import io_ops
from adws._exceptions import MalformedError
from adws.engine.context import WorkflowContext
from adws.engine.errors import PipelineError
from adws.engine.usage import Usage
from adws.journal.records.codec import decode_context, decode_error, decode_outputs
from adws.journal.records.holders import Seen, alive
from adws.journal.records.options import RunOptions

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Sequence

__all__ = [
    "AttemptRecord",
    "CancelRecord",
    "RunRecord",
    "UnreadableError",
    "attempt_from_row",
    "checked_seconds",
    "checked_text",
    "checked_whole",
    "column_of",
    "named_problems",
    "run_from_row",
    "shown",
    "usage_from",
]


class UnreadableError(MalformedError):
    """A value in the journal no adws could have written: a corrupt or forged row.

    `problems` name each row and column that could not be read (see
    `named_problems`); `path` is the journal's file, when known.
    """

    def __init__(self, message: str, problems: Sequence[str] = (), path: str = "") -> None:
        """Say what could not be read; `problems` list the rows and columns, if any."""
        super().__init__(message)
        self.problems = tuple(problems)
        self.path = path


class _Row(Protocol):
    """A row read from a run's table: its step (or branch path), its attempt, its problems."""

    @property
    def step(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def problems(self) -> tuple[str, ...]: ...


def named_problems(table: str, run_id: str, rows: Iterable[_Row]) -> list[str]:
    """Name each problem of `rows` by its table, run, step and attempt (its column comes first).

    >>> row = AttemptRecord("fix", 0, 2, "failed", "t", -1.0, None, None, problems=("seconds ...",))
    >>> named_problems("attempts", "r1", [row])
    ['attempts row of run r1, step fix, attempt 2: seconds ...']
    """
    return [
        f"{table} row of run {run_id}, step {row.step}, attempt {row.attempt}: {problem}"
        for row in rows
        for problem in row.problems
    ]


@final
@attrs.frozen
class CancelRecord:
    """Who asked to cancel a run, when (ISO 8601, UTC) and why (may be empty).

    Kept on the run's row (`runs.cancel`, schema 17): while the run runs, a
    request its holder acts on; after, the record of who ended it.
    """

    by: str
    at: str
    reason: str = ""

    def to_json(self) -> str:
        """Encode it for the journal."""
        return json.dumps({"by": self.by, "at": self.at, "reason": self.reason}, sort_keys=True)

    @classmethod
    def from_json(cls, text: object) -> CancelRecord | None:
        """Decode what `to_json` wrote; anything else (a forged row) is no request at all.

        >>> CancelRecord.from_json('{"by": "ana", "at": "t", "reason": "x"}')
        CancelRecord(by='ana', at='t', reason='x')
        >>> CancelRecord.from_json('{"by": 1}'), CancelRecord.from_json("[")
        (None, None)
        """
        try:
            loaded = json.loads(text) if isinstance(text, str) else None
        except (ValueError, RecursionError):
            return None
        if not isinstance(loaded, dict):
            return None
        by, at, reason = (loaded.get(name) for name in ("by", "at", "reason"))
        if not (isinstance(by, str) and isinstance(at, str) and isinstance(reason, str)):
            return None
        return cls(by, at, reason)

    def to_dict(self) -> dict[str, str]:
        """Return it as `--json` prints it."""
        return {"by": self.by, "at": self.at, "reason": self.reason}


@final
@attrs.frozen
class RunRecord:
    """One run as the journal knows it."""

    run_id: str
    workflow: str
    fingerprint: str
    status: str
    steps: tuple[str, ...]
    inputs_json: str
    started: str
    finished: str | None
    seconds: float | None
    error: PipelineError | None
    failed_step: str | None
    pid: int | None
    host: str | None
    resumes: int
    children: tuple[int, ...] = ()
    """Process groups the run's step in flight had started when it was last recorded."""
    usage: Usage | None = None
    """What the run's agent calls cost, all sessions summed (None if none reported any)."""
    options: RunOptions = attrs.field(factory=RunOptions)
    """The options the run was started with (or last resumed with), for `adws resume`."""
    problems: tuple[str, ...] = ()
    """What of the run's row could not be read (a corrupt or forged journal); () when all."""
    last_attempt: int | None = None
    """The id of the run's newest attempt row when it was read (`Journal.find` reads it)."""
    wake_at: float | None = None
    """When a parked run may go on, in Unix seconds (None: not parked, or before schema 12)."""
    parked_reason: str | None = None
    """Why a parked run parked, in a few words (`claude usage limit`)."""
    cancel: CancelRecord | None = None
    """Who asked to cancel the run, when and why (None: nobody, or before schema 17)."""
    holder_started: str | None = None
    """When its holder (`pid`) started (`adws.io_ops.starts`; None: not recorded, judged by pid)."""

    def due(self, now: float) -> bool:
        """Tell whether the run is parked and its time to go on has come.

        >>> RunRecord("r", "w", "", "parked", (), "", "", None, None, None, None, None, None, 0,
        ...           wake_at=100.0).due(100.0)
        True
        """
        return self.status == "parked" and (self.wake_at is None or self.wake_at <= now)

    @property
    def seen(self) -> Seen:
        """What a command that read this record claims the run with (see `Journal.claim`)."""
        return Seen(self.status, self.resumes, self.last_attempt)

    def inputs(self) -> WorkflowContext:
        """Decode the inputs the run started with (load its workflow module first).

        Records listed by `Journal.runs` leave the inputs out (they may be
        large); `Journal.find` reads them.
        """
        return decode_context(self.inputs_json) if self.inputs_json else WorkflowContext()

    @property
    def stale(self) -> bool:
        """Tell whether the run says `running` but its process on this host is gone.

        Gone too when its pid now names a process that started after the
        holder did (a reused pid; see `adws.journal.records.holders.alive`).
        """
        return (
            self.status == "running"
            and self.pid is not None
            and self.host == socket.gethostname()
            and not alive(self.pid, self.host, self.holder_started)
        )

    @property
    def held_elsewhere(self) -> str | None:
        """Say that the run runs on another host, whose process cannot be checked from here.

        None: it is not running, or runs on this host (see `stale`).
        """
        if self.status != "running" or self.host in {None, socket.gethostname()}:
            return None
        return f"running on {self.host}, pid {self.pid}: not checked from here"

    @property
    def waits_elsewhere(self) -> str | None:
        """Say that the run waits for approval on another host (its worker there continues it).

        None: it does not wait, or waits on this host.
        """
        if self.status != "waiting" or self.host in {None, socket.gethostname()}:
            return None
        return f"waiting on {self.host}: not checked from here"

    def live_children(self) -> tuple[int, ...]:
        """Return the recorded child process groups still alive on this host and still the run's.

        A group whose number was reused by someone else's processes (none of
        them carries the run's `ADWS_RUN_ID`) is not the run's: it is never
        returned, so never signalled (see `adws.io_ops.marks`).
        """
        if self.host != socket.gethostname():
            return ()
        return tuple(
            pgid
            for pgid in self.children
            if io_ops.group_alive(pgid) and io_ops.group_belongs_to(pgid, self.run_id) is not False
        )

    def to_dict(self) -> dict[str, object]:
        """Return the JSON-safe summary `adws runs --json` prints."""
        return {
            "run_id": self.run_id,
            "workflow": self.workflow,
            "status": self.status,
            "stale": self.stale,
            "held_elsewhere": self.held_elsewhere,
            "started": self.started,
            "finished": self.finished,
            "seconds": self.seconds,
            "failed_step": self.failed_step,
            "resumes": self.resumes,
            "usage": None if self.usage is None else self.usage.to_dict(),
            "options": self.options.to_dict(),
            "problems": list(self.problems),
            "wake_at": self.wake_at,
            "parked_reason": self.parked_reason,
            "cancel": None if self.cancel is None else self.cancel.to_dict(),
        }


@final
@attrs.frozen
class AttemptRecord:
    """One recorded attempt (or skip) of one step."""

    step: str
    step_index: int
    attempt: int
    status: str
    recorded: str
    seconds: float
    error: PipelineError | None
    context_json: str | None
    """The whole context a success left: how journals before schema 3 stored a step."""
    outputs_json: str | None = None
    """Only the outputs a success promoted: how a step is stored since schema 3."""
    fingerprint: str | None = None
    """The step's fingerprint when it ran (None before schema 3)."""
    usage: Usage | None = None
    """What the attempt's agent calls cost (None if none reported any, or before schema 5)."""
    problems: tuple[str, ...] = ()
    """What of the attempt's row could not be read; () when all could."""
    sessions: tuple[str, ...] = ()
    """The agent sessions the attempt used, as their CLIs named them (none before schema 7)."""
    started: float | None = None
    """When it started, in Unix seconds (None before schema 9). A success's row spans its
    step's earlier attempts and waits too: `started` is when the step started."""

    @property
    def final(self) -> bool:
        """Tell whether this row says how the step (or branch) ended, for now.

        A retried attempt and a failed verification round are on the way
        to the step's own row.
        """
        return self.status not in {"retried", "round_failed"}

    def context(self) -> WorkflowContext | None:
        """Decode the whole context a success left, in a journal written before schema 3."""
        return None if self.context_json is None else decode_context(self.context_json)

    def outputs(self) -> dict[str, object] | None:
        """Decode the outputs a success promoted (load its workflow module first)."""
        return None if self.outputs_json is None else decode_outputs(self.outputs_json)

    def checked(self) -> AttemptRecord:
        """Check the outputs now, for a reader that shows them (`status --step`, `report`).

        Outputs that are not a JSON object adws could have written are named
        in `problems` and left out, so showing them never raises. Reading a
        row checks no JSON (a resume decodes thousands of rows at once).
        """
        if self.outputs_json is None:
            return self
        problem = _json_object_problem(self.outputs_json)
        if problem is None:
            return self
        problems = (*self.problems, f"outputs {problem}")
        return attrs.evolve(self, outputs_json=None, problems=problems)


def _finite_number(text: str) -> float:
    """Read a JSON number, refusing one no adws writes (`NaN`, `Infinity`, `1e999`)."""
    number = float(text)
    if not math.isfinite(number):
        msg = f"{text} is not a finite number"
        raise UnreadableError(msg)
    return number


def _json_object_problem(text: str) -> str | None:
    """Say why `text` is not a JSON object adws could have written (None: it is one)."""
    try:
        loaded = json.loads(text, parse_constant=_finite_number, parse_float=_finite_number)
        decode_outputs(text)  # nothing it holds may fail to decode either
    except (ValueError, RecursionError) as exc:
        reason = "nest too deep" if isinstance(exc, RecursionError) else "are not JSON"
        return f"{reason}: {shown(text)}"
    return None if isinstance(loaded, dict) else f"are not a JSON object: {shown(text)}"


_MOST_PID: Final = 2**31 - 1
"""The largest process id a kernel hands out (`pid_t` is 32 bits)."""
MOST_WHOLE: Final = 2**31 - 1
"""The largest step index or attempt number a row may hold (no run comes near it)."""
MOST_SECONDS: Final = 3_200_000_000.0
"""A century in seconds: no attempt or call of a run lasts longer."""
LATEST_CLOCK: Final = 100_000_000_000.0
"""Unix seconds past the year 5000: no clock that recorded a run reads this."""
_SHOWN: Final = 80


def shown(value: object) -> str:
    """Quote at most the first 80 characters of a value read from a row, for a message.

    >>> shown("x" * 100) == repr("x" * 80)
    True
    """
    if isinstance(value, str | bytes):
        return repr(value[:_SHOWN])
    return repr(value)[:_SHOWN]


def checked_text(value: object, column: str, problems: list[str], *, optional: bool = False) -> Any:  # noqa: ANN401 - str, or None when optional
    """Read a text column; anything else is noted in `problems` and read as "" (or None)."""
    if isinstance(value, str) or (optional and value is None):
        return value
    problems.append(f"{column} is not text: {shown(value)}")
    return None if optional else ""


def checked_whole(  # noqa: PLR0913 - the value, where it is, and its bounds
    value: object,
    column: str,
    problems: list[str],
    *,
    least: int = 0,
    most: int = MOST_WHOLE,
    optional: bool = False,
) -> Any:  # noqa: ANN401 - an int, or None when optional
    """Read a whole-number column within bounds; anything else is noted and read as `least`."""
    if optional and value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and least <= value <= most:
        return value
    problems.append(f"{column} is not a whole number from {least} to {most}: {shown(value)}")
    return least


def checked_seconds(
    value: object,
    column: str,
    problems: list[str],
    *,
    most: float = MOST_SECONDS,
    optional: bool = False,
) -> Any:  # noqa: ANN401 - a float, or None when optional
    """Read a column of seconds from 0 to `most`; anything else is noted and read as 0.0."""
    if optional and value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= most:
        return float(value)  # NaN fails the comparison above
    problems.append(f"{column} is not a number of seconds from 0 to {most:.0f}: {shown(value)}")
    return 0.0


def _json_items(text: object, what: str, kind: type, problems: list[str]) -> tuple[Any, ...]:
    """Read a JSON list of `kind` values; anything else is noted in `problems` and read as ()."""
    try:
        loaded = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        loaded = None
    valid = isinstance(loaded, list) and all(
        isinstance(item, kind) and not isinstance(item, bool) for item in loaded
    )
    if not valid:
        problems.append(f"{what} is not a JSON list of {kind.__name__}: {str(text)[:80]!r}")
        return ()
    if kind is int and not all(0 < item <= _MOST_PID for item in loaded):  # type: ignore[union-attr] # a list, checked
        problems.append(f"{what} holds a number no process group has: {str(text)[:80]!r}")
        return ()
    return tuple(loaded)  # type: ignore[arg-type] # a list, checked above


def _error(text: object, problems: list[str]) -> PipelineError | None:
    """Read an error column; an unreadable one is noted and read as an error saying so."""
    if text is None:
        return None
    try:
        return decode_error(text)  # type: ignore[arg-type] # a str, or it raises below
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        problems.append(f"error is not readable ({type(exc).__name__}: {exc}): {str(text)[:80]!r}")
        return PipelineError("", "Unreadable", "the journal holds an error it cannot read")


def _pid(value: object, problems: list[str]) -> int | None:
    if value is None or (isinstance(value, int) and 0 < value <= _MOST_PID):
        return value
    problems.append(f"pid {value!r} is no process id")
    return None


def run_from_row(row: sqlite3.Row) -> RunRecord:
    """Build a `RunRecord` from a `runs` row; what cannot be read is listed in `problems`."""
    problems: list[str] = []
    steps = _json_items(row["steps"], "steps", str, problems)
    error = _error(row["error"], problems)
    children_column = column_of(row, "children")
    children = (
        () if children_column is None else _json_items(children_column, "children", int, problems)
    )
    wake_column = column_of(row, "wake_at")
    wake = checked_seconds(wake_column, "wake_at", problems, most=LATEST_CLOCK, optional=True)
    reason = checked_text(column_of(row, "parked_reason"), "parked_reason", problems, optional=True)
    return RunRecord(
        row["run_id"],
        row["workflow"],
        row["fingerprint"],
        row["status"],
        steps,
        column_of(row, "stored_inputs") or row["inputs"],
        row["started"],
        row["finished"],
        row["seconds"],
        error,
        row["failed_step"],
        _pid(row["pid"], problems),
        row["host"],
        row["resumes"],
        children,
        usage_from(
            column_of(row, "spent_usd"),
            column_of(row, "spent_in"),
            column_of(row, "spent_out"),
            column_of(row, "spent_turns"),
            None,
        ),
        RunOptions.from_json(column_of(row, "options")),
        tuple(problems),
        _row_id(column_of(row, "last_attempt")),
        wake,
        reason,
        CancelRecord.from_json(column_of(row, "cancel")),
        checked_text(column_of(row, "holder_started"), "holder_started", problems, optional=True),
    )


def attempt_from_row(row: Sequence[Any]) -> AttemptRecord:
    """Build an `AttemptRecord` from the columns `Journal.attempts` selects, in order.

    Every column is checked: a value no adws could have written is named in
    `problems` and read as a harmless one (see `AttemptRecord.checked` for
    the outputs).
    """
    step, index, attempt, status, recorded, seconds, error, context, outputs, fingerprint = row[:10]
    problems: list[str] = []
    values = (
        checked_text(step, "step", problems),
        checked_whole(index, "step_index", problems),
        checked_whole(attempt, "attempt", problems),
        checked_text(status, "status", problems),
        checked_text(recorded, "recorded", problems),
        checked_seconds(seconds, "seconds", problems),
        _error(error, problems),
        checked_text(context, "context", problems, optional=True),
        checked_text(outputs, "outputs", problems, optional=True),
        checked_text(fingerprint, "fingerprint", problems, optional=True),
    )
    sessions = checked_text(row[15], "session_ids", problems, optional=True)
    started = checked_seconds(row[16], "started", problems, most=LATEST_CLOCK, optional=True)
    return AttemptRecord(
        *values,
        usage_from(*row[10:15]),
        tuple(problems),
        tuple((sessions or "").split()),
        started,
    )


def _row_id(value: object) -> int | None:
    """Read a row id a query computed (None: no row, or nothing an id can be)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_from(*columns: object) -> Usage | None:
    """Rebuild a usage from its columns: cost, tokens in and out, turns, model (None: nothing).

    A value no adws could have written (negative, past the bounds, not a
    number) saturates: it counts as over any budget, never as unknown.
    """
    usage = Usage.from_sums(*columns)
    return usage if usage.known else None


def column_of(row: sqlite3.Row, name: str) -> str | None:
    """Read a column a journal opened read-only, and never migrated, may not have."""
    return row[name] if name in row.keys() else None  # noqa: SIM118 - sqlite3.Row has no __contains__ for names
