"""Every agent exchange, as values: its texts (`Text`) and the call (`ExchangeRecord`).

`inflate` reads a stored text back, never past its recorded size;
`text_digest` names a text by its hash. The SQL that writes and reads the
`exchanges` and `texts` tables is `adws.journal.store.exchanges`.
"""

from __future__ import annotations

import hashlib
import zlib
from typing import Final, final

import attrs

from adws.engine.usage import Usage
from adws.journal.records.runs import (
    UnreadableError,
    shown,
)

__all__ = [
    "HASH_CHARS",
    "MOST_INFLATED",
    "ExchangeRecord",
    "Text",
    "encoded",
    "inflate",
    "text_digest",
]


HASH_CHARS: Final = 32
"""A text's key: the first 32 hex characters of its SHA-256."""
MOST_INFLATED: Final = 1_000_000_000
"""SQLite's own limit on one value: no text adws keeps is longer, whatever its row says."""


def encoded(text: str) -> bytes:
    """Encode a text as the journal stores it (lone surrogates kept)."""
    return text.encode("utf-8", "surrogatepass")


def text_digest(text: str) -> str:
    """Name a text by a hash of all of it (lone surrogates included).

    >>> text_digest("hello")
    '2cf24dba5fb0a30e26e83b2ac5b9e29e'
    """
    return hashlib.sha256(encoded(text)).hexdigest()[:HASH_CHARS]


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
        return self.text is not None and len(encoded(self.text)) < self.size


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
    problems: tuple[str, ...] = ()
    """What of the row could not be read (a corrupt or forged journal); () when all could."""
    patch: Text | None = None
    """What the call changed in its worktree ("" for nothing; None: no worktree, or not taken)."""


def inflate(data: object, size: int) -> str:
    """Inflate a stored text to at most `size` bytes of UTF-8 (and never past `MOST_INFLATED`).

    Stops inflating one byte past the bound, so a small row that would
    inflate to gigabytes costs no more memory than the text it claims to
    be. A text longer than that, data that is not one whole zlib stream,
    or bytes that are not UTF-8 raise `UnreadableError` saying which.

    >>> inflate(zlib.compress(b"hello"), 5)
    'hello'
    >>> inflate(zlib.compress(b"0" * 10**6), 5)
    Traceback (most recent call last):
    ...
    adws.journal.records.runs.UnreadableError: inflates past its recorded size of 5 bytes
    """
    if not isinstance(data, bytes):
        msg = f"is not compressed bytes: {shown(data)}"
        raise UnreadableError(msg)
    most = max(min(size, MOST_INFLATED), 0)
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, most + 1)  # a max_length of 0 would mean no bound
    except zlib.error as exc:
        msg = f"is not zlib data ({exc})"
        raise UnreadableError(msg) from exc
    if len(raw) > most:
        msg = f"inflates past its recorded size of {most} bytes"
        raise UnreadableError(msg)
    if not inflater.eof or inflater.unused_data:
        msg = "is not one whole zlib stream (cut short, or bytes past its end)"
        raise UnreadableError(msg)
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        msg = f"is not UTF-8 ({exc.reason} at byte {exc.start})"
        raise UnreadableError(msg) from exc
