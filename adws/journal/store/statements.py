"""What the journal writes for each run event, as SQL statements with their values.

Turning an event into statements is apart from executing them so that a
worker process of `adws batch` can do the first (its values are already
encoded text: nothing but strings and numbers crosses the process
boundary) while the coordinator, the journal's one writer, does the
second. `JournalObserver` does both in one process.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.engine.events import (
    AgentExchanged,
    AgentSessionStarted,
    AttemptFailed,
    BranchAttemptFailed,
    BranchFinished,
    RoundFailed,
    RunEvent,
    RunFinished,
    RunStarted,
    StepSkipped,
    StepSucceeded,
    WorktreeRecorded,
)
from adws.engine.parking import wake_at
from adws.engine.usage import Usage
from adws.journal.records.codec import encode_context, encode_error, encode_outputs
from adws.journal.records.holders import started_here
from adws.journal.records.workspaces import stored
from adws.journal.store.diffs import diff_statements
from adws.journal.store.exchanges import exchange_statements
from adws.journal.store.sessions import ended_statement, session_statement
from adws.journal.store.workspaces import asked_statement

if TYPE_CHECKING:
    from adws.engine.errors import PipelineError
    from adws.journal.store.schema import Statement

__all__ = ["starting_statement", "statements_for"]

_INSERT_ATTEMPT = (
    "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded, seconds,"
    " error, outputs, fingerprint, cost_usd, input_tokens, output_tokens, turns, model,"
    " session_ids, started) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_NO_USAGE: Final = Usage()


def _sessions(error: PipelineError | None, outputs: Mapping[str, object] | None) -> str | None:
    """Name the agent sessions an attempt used: a failure's, or each `<step>_agent` output's.

    >>> _sessions(None, {"ask_agent": {"session_id": "s-1"}, "answer": "x"})
    's-1'
    """
    found: list[object] = []
    if error is not None:
        found.append(error.context.get("session_id"))
    found.extend(
        value.get("session_id") for value in (outputs or {}).values() if isinstance(value, Mapping)
    )
    names = [str(name) for name in found if isinstance(name, str) and name]
    return " ".join(dict.fromkeys(names)) or None


def _attempt(  # noqa: PLR0913 - one row's columns
    event: AttemptFailed
    | StepSucceeded
    | StepSkipped
    | BranchAttemptFailed
    | BranchFinished
    | RoundFailed,
    attempt: int,
    status: str,
    seconds: float,
    fingerprint: str | None,
    *,
    error: PipelineError | None = None,
    outputs: Mapping[str, object] | None = None,
    transcripts: bool = True,
) -> Statement:
    if isinstance(event, RoundFailed):
        path, usage = event.path, _NO_USAGE  # the attempt that holds the round has its usage
    elif isinstance(event, BranchAttemptFailed | BranchFinished):
        path, usage = event.branch, event.usage or _NO_USAGE
    else:
        path = event.step
        usage = (None if isinstance(event, StepSkipped) else event.usage) or _NO_USAGE
    return (
        _INSERT_ATTEMPT,
        (
            event.run_id,
            path,
            event.index,
            attempt,
            status,
            io_ops.utc_now(),
            seconds,
            encode_error(error, transcripts=transcripts),
            None if outputs is None else encode_outputs(outputs),
            fingerprint,
            usage.cost_usd,
            usage.input_tokens,
            usage.output_tokens,
            usage.turns,
            usage.model,
            _sessions(error, outputs),
            io_ops.wall_clock() - seconds,
        ),
    )


_RESTART = (
    "UPDATE runs SET status = 'running', finished = NULL, error = NULL, failed_step = NULL,"
    " wake_at = NULL, parked_reason = NULL, fingerprint = ?, pid = ?, host = ?,"
    " holder_started = ?, resumes = resumes + ?, options = COALESCE(?, options) WHERE run_id = ?"
)
_INSERT_RUN = (
    "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started, pid, host,"
    " holder_started, options) VALUES (?, ?, ?, 'running', ?, '', ?, ?, ?, ?, ?)"
)
_FINISH = (
    "UPDATE runs SET status = ?, finished = ?, seconds = COALESCE(seconds, 0) + ?,"
    " error = ?, failed_step = ?, wake_at = ?, parked_reason = ? WHERE run_id = ?"
)


def _started(
    event: RunStarted,
    fingerprint: str,
    options: str | None,
    *,
    row_exists: bool,
    holder: tuple[int, str] | None,
) -> list[Statement]:
    pid, host = holder or (os.getpid(), socket.gethostname())
    here = (pid, host, started_here(pid))  # a batch's coordinator holds its runs, on this host
    if event.resumed or row_exists:
        return [(_RESTART, (fingerprint, *here, int(event.resumed), options, event.run_id))]
    steps = json.dumps(list(event.steps))
    row = (event.run_id, event.workflow, fingerprint, steps, io_ops.utc_now(), *here, options)
    return [
        (_INSERT_RUN, row),
        (
            "INSERT INTO run_inputs (run_id, inputs) VALUES (?, ?)",
            (event.run_id, encode_context(event.context)),
        ),
    ]


def starting_statement(run_id: str) -> Statement:
    """Return the write a step's start makes in a run's own journal: when the step started.

    A real change of a row (SQLite skips an update that changes nothing,
    and a full disk may still take that), so a journal that cannot take
    writes (a server gone, a full disk) is found before the step runs, not
    after (see `JournalObserver`). A batch's workers send no such
    statement: their coordinator writes for them.
    """
    return ("UPDATE runs SET step_started = ? WHERE run_id = ?", (io_ops.utc_now(), run_id))


def statements_for(  # noqa: C901, PLR0911, PLR0913 - one case per kind of event; keyword-only options
    event: RunEvent,
    fingerprint: str,
    steps: Mapping[str, str],
    *,
    row_exists: bool = False,
    options: str | None = None,
    holder: tuple[int, str] | None = None,
    transcripts: bool = True,
) -> list[Statement]:
    """Return what recording `event` writes; empty for events the journal does not keep.

    `row_exists` says the run's row was made before the run started (a batch
    queues its runs), so a first start updates it instead of inserting.
    `options` is the run's encoded `RunOptions`: recorded when it starts,
    and when a resume starts (None keeps what was recorded). `holder` is
    the `(pid, host)` recorded as running it (a batch's coordinator, not
    its worker: it is the one `adws resume` must find alive); by default,
    this process. Unless `transcripts` is false, an agent exchange keeps
    its texts, and an error what agents and commands said (only sizes and
    hashes then); a failed verification round is a `round_failed` row.
    """
    match event:
        case RunStarted():
            return _started(event, fingerprint, options, row_exists=row_exists, holder=holder)
        case AttemptFailed() | BranchAttemptFailed():
            status = "failed" if not event.will_retry else "retried"
            where = steps.get(event.step) if isinstance(event, AttemptFailed) else None
            return [
                _attempt(
                    event,
                    event.attempt,
                    status,
                    event.seconds,
                    where,
                    error=event.error,
                    transcripts=transcripts,
                )
            ]
        case StepSucceeded():
            fp = steps.get(event.step)
            return [
                _attempt(
                    event, event.attempts, "succeeded", event.seconds, fp, outputs=event.outputs
                )
            ]
        case StepSkipped():
            return [_attempt(event, 0, f"skipped:{event.reason}", 0.0, steps.get(event.step))]
        case BranchFinished(status="succeeded"):
            attempts = max(event.attempts, 1)
            return [
                _attempt(event, attempts, "succeeded", event.seconds, None, outputs=event.outputs)
            ]
        case BranchFinished(status="cancelled"):
            return [_attempt(event, event.attempts, "cancelled", event.seconds, None)]
        case AgentExchanged():
            ended = ended_statement(event)
            statements = exchange_statements(event, transcripts=transcripts)
            return statements if ended is None else [*statements, ended]
        case AgentSessionStarted():
            return [session_statement(event)]
        case RoundFailed():
            marked = event.error.with_context(round=event.round)
            return [
                _attempt(
                    event,
                    event.attempt,
                    "round_failed",
                    0.0,
                    None,
                    error=marked,
                    transcripts=transcripts,
                )
            ]
        case RunFinished():
            return _finished(event, transcripts=transcripts)
        case WorktreeRecorded():
            return [_worktree(event), *diff_statements(event, transcripts=transcripts)]
    return []


def _finished(event: RunFinished, *, transcripts: bool) -> list[Statement]:
    """Record how the run ended; a run that waits for approval records the question too.

    A parked run records when it may go on and why (`wake_at`, `parked_reason`).
    """
    error = event.error
    failed_step = None if error is None else error.step_name or None
    encoded = encode_error(error, transcripts=transcripts)
    finished = (event.status, io_ops.utc_now(), event.seconds, encoded, failed_step)
    waking = wake_at(error)
    reason = None if waking is None or error is None else str(error.context.get("reason") or "")
    statements: list[Statement] = [(_FINISH, (*finished, waking, reason, event.run_id))]
    if event.status == "waiting" and error is not None:
        timeout = error.context.get("timeout")
        statements.append(asked_statement(event.run_id, error.step_name, error.message, timeout))
    return statements


_WORKTREE: Final = (
    "INSERT INTO worktrees (run_id, label, step, repo, path, branch, base, tree, state, recorded,"
    " gitdir, attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
    " (SELECT COUNT(*) FROM attempts WHERE run_id = ?)) ON CONFLICT (run_id, label) DO UPDATE SET"
    " step = excluded.step, repo = excluded.repo, path = excluded.path,"
    " branch = excluded.branch, base = excluded.base, tree = excluded.tree,"
    " state = excluded.state, recorded = excluded.recorded, gitdir = excluded.gitdir,"
    " attempts = excluded.attempts"
)
"""Keep one row per worktree, where it was first made (`adws status` lists them in that order).

`attempts` counts the run's attempt rows recorded before this one: an
attempt of the worktree's step recorded after it ended after it.
"""
_REMOVED: Final = (
    "UPDATE worktrees SET state = ?, tree = '', recorded = ? WHERE run_id = ? AND label = ?"
)


def _worktree(event: WorktreeRecorded) -> Statement:
    """Keep the latest state of one worktree; a removal keeps its base for a later resume."""
    now = io_ops.utc_now()
    if event.state in {"removed", "discarded"}:
        return (_REMOVED, (event.state, now, event.run_id, event.label))
    places = (stored(event.repo), stored(event.path))
    values = (event.run_id, event.label, event.step, *places, event.branch)
    known = (event.base, event.tree, "present", now, stored(event.gitdir), event.run_id)
    return (_WORKTREE, (*values, *known))
