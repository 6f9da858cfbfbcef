"""Every agent exchange of a run, kept: the prompt, the answer, how the call ended.

Each `AgentExchanged` event becomes one `exchanges` row naming its attempt
(step or branch path, attempt number) and the texts by hash. A text is
stored once in `texts`, zlib-compressed and keyed by the SHA-256 of the
whole text, however many attempts, runs or branches sent or received it;
what is stored is capped at the step's output cap (`limit`, in bytes),
and the row keeps the whole text's size, so a reader can say it was cut.
Reading is as wary as writing is sure: a text inflates to at most its
recorded size (`inflate`), and every column of a row is checked; what no
adws could have written is named in the record's `problems`, never raised.
With transcripts off (`--no-transcripts`, `ADWS_TRANSCRIPTS=0`) only the
hashes and sizes are kept: enough to tell two prompts apart, nothing to
read (an error's message keeps no output it quotes either). A call in a
worktree also keeps its `patch`, what it changed there, as a text like
the others (`adws run --replay` applies it). Pruning a run removes its
exchanges, then every text no exchange or diff still names.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from typing import TYPE_CHECKING, Any, Final

from adws import io_ops
from adws.engine.usage import Usage
from adws.journal.records.codec import without_transcripts
from adws.journal.records.exchanges import HASH_CHARS, ExchangeRecord, Text, encoded, inflate
from adws.journal.records.runs import (
    LATEST_CLOCK,
    UnreadableError,
    checked_seconds,
    checked_text,
    checked_whole,
    shown,
    usage_from,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.engine.events import AgentExchanged
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = [
    "TRANSCRIPTS_ENV",
    "exchange_statements",
    "exchanges",
    "keeps_transcripts",
    "kept_text",
    "read_text",
]

TRANSCRIPTS_ENV: Final = "ADWS_TRANSCRIPTS"
_OFF: Final = frozenset({"0", "false", "no", "off"})
_MOST_SIZE: Final = 2**63 - 1
"""The largest whole number SQLite holds."""
_MOST_EXIT: Final = 2**31
_INSERT_TEXT: Final = "INSERT INTO texts (hash, data) VALUES (?, ?) ON CONFLICT DO NOTHING"
_INSERT_EXCHANGE: Final = (
    "INSERT INTO exchanges (run_id, step, attempt, asked_by, recorded, started, seconds,"
    " prompt, prompt_size, answer, answer_size, stderr, stderr_size, exit_code, session_id,"
    " error_type, error, cost_usd, input_tokens, output_tokens, turns, model, patch,"
    " patch_size)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_COLUMNS: Final = (
    "e.step, e.attempt, e.asked_by, e.recorded, e.started, e.seconds, e.prompt, e.prompt_size,"
    " p.data, e.answer, e.answer_size, a.data, e.stderr, e.stderr_size, s.data, e.exit_code,"
    " e.session_id, e.error_type, e.error, e.cost_usd, e.input_tokens, e.output_tokens,"
    " e.turns, e.model, e.patch, e.patch_size, d.data"
)
_BEFORE_16: Final = _COLUMNS.replace("e.patch, e.patch_size, d.data", "NULL, NULL, NULL")


def keeps_transcripts(*, refused: bool = False) -> bool:
    """Tell whether texts are kept: not when `refused` (`--no-transcripts`) or switched off.

    `ADWS_TRANSCRIPTS=0` (or `false`, `no`, `off`) switches them off.
    """
    return not refused and os.environ.get(TRANSCRIPTS_ENV, "1").strip().lower() not in _OFF


def _capped(data: bytes, limit: int) -> bytes:
    """Cut encoded text at `limit` bytes, never inside a character."""
    if len(data) <= limit:
        return data
    return data[:limit].decode("utf-8", "ignore").encode("utf-8")


def kept_text(
    text: str | None, limit: int, statements: list[Statement], *, keep: bool
) -> tuple[str | None, int | None]:
    """Return a text's hash and size; add the statement that stores it when kept.

    The text is stored once however often it comes (keyed by its hash),
    compressed, and cut at `limit` bytes; the size is the whole text's.
    """
    if text is None:
        return None, None
    data = encoded(text)
    digest = hashlib.sha256(data).hexdigest()[:HASH_CHARS]
    if keep:
        statements.append((_INSERT_TEXT, (digest, zlib.compress(_capped(data, limit)))))
    return digest, len(data)


def _said(message: str, *, keep: bool) -> str:
    """Keep an error's message, or, with transcripts off, only what it did not quote."""
    return message if keep else without_transcripts(message)


def exchange_statements(event: AgentExchanged, *, transcripts: bool = True) -> list[Statement]:
    """Return what recording one agent exchange writes: its texts (when kept) and its row."""
    statements: list[Statement] = []
    limit = max(event.limit, 0)
    prompt = kept_text(event.prompt, limit, statements, keep=transcripts)
    answer = kept_text(event.answer, limit, statements, keep=transcripts)
    stderr = kept_text(event.stderr or None, limit, statements, keep=transcripts)
    patch = kept_text(event.patch, limit, statements, keep=transcripts)  # "": nothing changed
    usage = event.usage or Usage()
    error = event.error
    statements.append(
        (
            _INSERT_EXCHANGE,
            (
                event.run_id,
                event.path,
                event.attempt,
                event.asked_by,
                io_ops.utc_now(),
                io_ops.wall_clock() - event.seconds,
                event.seconds,
                *prompt,
                *answer,
                *stderr,
                event.exit_code,
                event.session_id,
                None if error is None else error.error_type,
                None if error is None else _said(error.message, keep=transcripts),
                usage.cost_usd,
                usage.input_tokens,
                usage.output_tokens,
                usage.turns,
                usage.model,
                *patch,
            ),
        )
    )
    return statements


def read_text(
    column: str, row: Sequence[Any], problems: list[str], *, optional: bool = True
) -> Text | None:
    """Read one text of a row (its hash, size and stored data); what is wrong is noted.

    `optional`: a row may name no such text (no answer, nothing on stderr).
    """
    digest, size, data = row
    if digest is None and optional:  # no such text: no answer, or nothing on stderr
        if size is not None:
            problems.append(f"{column}_size is given for no text: {shown(size)}")
        return None
    if not isinstance(digest, str):
        problems.append(f"{column} is not a text's hash: {shown(digest)}")
        return Text("", 0, None)
    known = len(problems)
    whole = checked_whole(size, f"{column}_size", problems, most=_MOST_SIZE)
    if data is None or len(problems) > known:
        return Text(digest, whole, None)  # transcripts were off, or no size bounds the text
    try:
        text = inflate(data, whole)
    except UnreadableError as exc:
        problems.append(f"{column} text {exc}")
        return Text(digest, whole, None)
    data = encoded(text)
    if len(data) == whole and hashlib.sha256(data).hexdigest()[:HASH_CHARS] != digest:
        problems.append(f"{column} text is not the text its hash {shown(digest)} names")
        return Text(digest, whole, None)
    return Text(digest, whole, text)


def _record(row: Sequence[Any]) -> ExchangeRecord:
    """Build a record from a row, checking every column (see `ExchangeRecord.problems`)."""
    problems: list[str] = []
    step = checked_text(row[0], "step", problems)
    attempt = checked_whole(row[1], "attempt", problems)
    asked_by = checked_text(row[2], "asked_by", problems)
    recorded = checked_text(row[3], "recorded", problems)
    started = checked_seconds(row[4], "started", problems, most=LATEST_CLOCK)
    seconds = checked_seconds(row[5], "seconds", problems)
    prompt = read_text("prompt", row[6:9], problems, optional=False)
    answer = read_text("answer", row[9:12], problems)
    stderr = read_text("stderr", row[12:15], problems)
    exit_code = checked_whole(
        row[15], "exit_code", problems, least=-_MOST_EXIT, most=_MOST_EXIT, optional=True
    )
    session_id = checked_text(row[16], "session_id", problems, optional=True)
    error_type = checked_text(row[17], "error_type", problems, optional=True)
    error = checked_text(row[18], "error", problems, optional=True)
    return ExchangeRecord(
        step,
        attempt,
        asked_by,
        recorded,
        started,
        seconds,
        prompt or Text("", 0, None),
        answer,
        stderr,
        exit_code,
        session_id,
        error_type,
        error,
        usage_from(*row[19:24]),
        tuple(problems),
        read_text("patch", row[24:27], problems),
    )


def exchanges(
    journal: Journal, run_id: str, *, step: str | None = None, attempt: int | None = None
) -> list[ExchangeRecord]:
    """List a run's agent exchanges in the order they happened, texts included.

    `step` keeps those of one step or branch path (`verify_claims[2]`),
    `attempt` those of one attempt. A journal older than schema 9 has none.
    """
    if not journal.has_table("exchanges"):
        return []
    # A journal read without being migrated (schema 15) kept no patches: read as none.
    patches = "patch" in journal.columns("exchanges")
    sql = (
        f"SELECT {_COLUMNS if patches else _BEFORE_16} FROM exchanges AS e"  # noqa: S608 - fixed column names
        " LEFT JOIN texts AS p ON p.hash = e.prompt"
        " LEFT JOIN texts AS a ON a.hash = e.answer"
        " LEFT JOIN texts AS s ON s.hash = e.stderr"
        + (" LEFT JOIN texts AS d ON d.hash = e.patch" if patches else "")
        + " WHERE e.run_id = ?"
        " AND (? IS NULL OR e.step = ?) AND (? IS NULL OR e.attempt = ?) ORDER BY e.id"
    )
    params = (run_id, step, step, attempt, attempt)
    return [_record(row) for row in journal.query(sql, params)]
