"""Printing for the CLI: escaped for the terminal, and quiet when the reader has left."""

from __future__ import annotations

import json
import os
import sys
from typing import TextIO

from adws._terminal import escape_controls, escape_json

__all__ = ["err", "out", "out_json"]


def _write(stream: TextIO, text: str) -> None:
    try:
        print(text, file=stream, flush=True)
    except BrokenPipeError:
        # `adws runs | head`: the reader has gone. Point the stream at /dev/null, so
        # neither this print nor the interpreter's last flush fails, and carry on:
        # the exit code still tells how the command went.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def err(message: str) -> None:
    """Print a line on stderr, control characters escaped."""
    _write(sys.stderr, escape_controls(message))


def out(message: str) -> None:
    """Print a line on stdout, control characters escaped."""
    _write(sys.stdout, escape_controls(message))


def out_json(payload: object) -> None:
    """Print JSON with the exact text of every value, nothing a terminal would obey."""
    _write(sys.stdout, escape_json(json.dumps(payload, indent=2, ensure_ascii=False)))
