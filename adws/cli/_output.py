"""Printing for the CLI: escaped for the terminal, and quiet when the reader has left."""

from __future__ import annotations

import errno
import json
import math
import os
import sys
from typing import Final, TextIO

from adws._terminal import escape_controls, escape_json

__all__ = ["err", "out", "out_json", "write_text"]


_READER_GONE: Final = frozenset({errno.EPIPE, errno.EIO})
"""A pipe whose reader left (`| head`), a terminal that was closed (after SIGHUP)."""


def _write(stream: TextIO, text: str) -> None:
    try:
        print(text, file=stream, flush=True)
    except OSError as exc:
        if exc.errno not in _READER_GONE:
            raise
        # `adws runs | head`, or a closed terminal: the reader has gone. Point the
        # stream at /dev/null, so neither this print nor the interpreter's last flush
        # fails, and carry on: the exit code still tells how the command went.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def err(message: str) -> None:
    """Print a line on stderr, control characters escaped."""
    _write(sys.stderr, escape_controls(message))


def out(message: str) -> None:
    """Print a line on stdout, control characters escaped."""
    _write(sys.stdout, escape_controls(message))


def _finite(value: object) -> object:
    """Replace non-finite floats (which JSON cannot hold) by their names, anywhere in `value`.

    >>> _finite({"cost": float("inf"), "ok": [1.5, float("nan")]})
    {'cost': 'inf', 'ok': [1.5, 'nan']}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def out_json(payload: object) -> None:
    """Print strict JSON (never `Infinity`) with the exact text of every value, escaped.

    Nothing a terminal would obey gets through, and whatever the payload
    holds, what is printed is JSON every parser reads.
    """
    text = json.dumps(_finite(payload), indent=2, ensure_ascii=False, allow_nan=False)
    _write(sys.stdout, escape_json(text))


def write_text(document: str) -> None:
    """Print a document that escaped its own text (an HTML page) on stdout, as it is."""
    _write(sys.stdout, document.rstrip("\n"))
