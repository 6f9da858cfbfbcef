"""Every agent exchange of a run, kept: the prompt, the answer, how the call ended.

Each `AgentExchanged` event becomes one `exchanges` row naming its attempt
(step or branch path, attempt number) and the texts by hash. A text is
stored once in `texts`, zlib-compressed and keyed by the SHA-256 of the
whole text, however many attempts, runs or branches sent or received it;
what is stored is capped at the step's output cap (`limit`, in bytes),
and the row keeps the whole text's size, so a reader can say it was cut.
With transcripts off (`--no-transcripts`, `ADWS_TRANSCRIPTS=0`) only the
hashes and sizes are kept: enough to tell two prompts apart, nothing to
read. Pruning a run removes its exchanges, then every text no exchange
still names.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from adws import io_ops
from adws.engine.usage import Usage
from adws.journal.records import usage_from

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.engine.events import AgentExchanged
    from adws.journal.schema import Statement
    from adws.journal.store import Journal

__all__ = [
    "TRANSCRIPTS_ENV",
    "ExchangeRecord",
    "Text",
    "exchange_statements",
    "exchanges",
    "keeps_transcripts",
    "text_digest",
]

TRANSCRIPTS_ENV: Final = "ADWS_TRANSCRIPTS"
_OFF: Final = frozenset({"0", "false", "no", "off"})
_HASH_CHARS: Final = 32
_INSERT_TEXT: Final = "INSERT OR IGNORE INTO texts (hash, data) VALUES (?, ?)"
_INSERT_EXCHANGE: Final = (
    "INSERT INTO exchanges (run_id, step, attempt, asked_by, recorded, started, seconds,"
    " prompt, prompt_size, answer, answer_size, stderr, stderr_size, exit_code, session_id,"
    " error_type, error, cost_usd, input_tokens, output_tokens, turns, model)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_COLUMNS: Final = (
    "e.step, e.attempt, e.asked_by, e.recorded, e.started, e.seconds, e.prompt, e.prompt_size,"
    " p.data, e.answer, e.answer_size, a.data, e.stderr, e.stderr_size, s.data, e.exit_code,"
    " e.session_id, e.error_type, e.error, e.cost_usd, e.input_tokens, e.output_tokens,"
    " e.turns, e.model"
)


def keeps_transcripts(*, refused: bool = False) -> bool:
    """Tell whether texts are kept: not when `refused` (`--no-transcripts`) or switched off.

    `ADWS_TRANSCRIPTS=0` (or `false`, `no`, `off`) switches them off.
    """
    return not refused and os.environ.get(TRANSCRIPTS_ENV, "1").strip().lower() not in _OFF


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def text_digest(text: str) -> str:
    """Name a text by a hash of all of it (lone surrogates included).

    >>> text_digest("hello")
    '2cf24dba5fb0a30e26e83b2ac5b9e29e'
    """
    return hashlib.sha256(_encoded(text)).hexdigest()[:_HASH_CHARS]


def _capped(data: bytes, limit: int) -> bytes:
    """Cut encoded text at `limit` bytes, never inside a character."""
    if len(data) <= limit:
        return data
    return data[:limit].decode("utf-8", "ignore").encode("utf-8")


def _text(
    text: str | None, limit: int, statements: list[Statement], *, keep: bool
) -> tuple[str | None, int | None]:
    """Return a text's hash and size; add the statement that stores it when kept."""
    if text is None:
        return None, None
    data = _encoded(text)
    digest = hashlib.sha256(data).hexdigest()[:_HASH_CHARS]
    if keep:
        statements.append((_INSERT_TEXT, (digest, zlib.compress(_capped(data, limit)))))
    return digest, len(data)


def exchange_statements(event: AgentExchanged, *, transcripts: bool = True) -> list[Statement]:
    """Return what recording one agent exchange writes: its texts (when kept) and its row."""
    statements: list[Statement] = []
    limit = max(event.limit, 0)
    prompt = _text(event.prompt, limit, statements, keep=transcripts)
    answer = _text(event.answer, limit, statements, keep=transcripts)
    stderr = _text(event.stderr or None, limit, statements, keep=transcripts)
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
                None if error is None else error.message,
                usage.cost_usd,
                usage.input_tokens,
                usage.output_tokens,
                usage.turns,
                usage.model,
            ),
        )
    )
    return statements


@final
@attrs.frozen
class Text:
    """One kept text: its hash, its whole size in bytes, and what the journal holds of it.

    `text` is None when transcripts were off; `cut` says the journal holds
    only its first bytes (the step's output cap).
    """

    digest: str
    size: int
    text: str | None

    @property
    def cut(self) -> bool:
        """Tell whether the journal holds less than the whole text."""
        return self.text is not None and len(_encoded(self.text)) < self.size


@final
@attrs.frozen
class ExchangeRecord:
    """One recorded agent exchange, as `adws status --step` and `adws report` show it."""

    step: str
    """The attempt's path: the step, or the branch (`verify_claims[2]`)."""
    attempt: int
    asked_by: str
    recorded: str
    started: float
    """When the call started, in Unix seconds."""
    seconds: float
    prompt: Text
    answer: Text | None
    stderr: Text | None
    exit_code: int | None
    session_id: str | None
    error_type: str | None
    error: str | None
    usage: Usage | None


def _read(digest: object, size: object, data: object) -> Text | None:
    if not isinstance(digest, str):
        return None
    try:
        text = (
            zlib.decompress(data).decode("utf-8", "surrogatepass")
            if isinstance(data, bytes)
            else None
        )
    except (zlib.error, UnicodeDecodeError):
        text = None  # a row no adws could have written: nothing to show
    return Text(digest, size if isinstance(size, int) else 0, text)


def _record(row: Sequence[Any]) -> ExchangeRecord:
    return ExchangeRecord(
        str(row[0]),
        int(row[1]),
        str(row[2]),
        str(row[3]),
        float(row[4]),
        float(row[5]),
        _read(*row[6:9]) or Text("", 0, None),
        _read(*row[9:12]),
        _read(*row[12:15]),
        row[15] if isinstance(row[15], int) else None,
        row[16] if isinstance(row[16], str) else None,
        row[17] if isinstance(row[17], str) else None,
        row[18] if isinstance(row[18], str) else None,
        usage_from(*row[19:24]),
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
    sql = (
        f"SELECT {_COLUMNS} FROM exchanges AS e"  # noqa: S608 - fixed column names
        " LEFT JOIN texts AS p ON p.hash = e.prompt"
        " LEFT JOIN texts AS a ON a.hash = e.answer"
        " LEFT JOIN texts AS s ON s.hash = e.stderr"
        " WHERE e.run_id = ?"
        " AND (? IS NULL OR e.step = ?) AND (? IS NULL OR e.attempt = ?) ORDER BY e.id"
    )
    params = (run_id, step, step, attempt, attempt)
    return [_record(row) for row in journal.query(sql, params)]
