"""Printing for the CLI: escaped for the terminal, and quiet when the reader has left.

The writing itself is `adws.io_ops.terminal`'s, which a batch worker's signal
handler shares; `err` comes from there.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import TYPE_CHECKING

from adws.io_ops.terminal import err, escape_controls, escape_json, write_line

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["colour", "err", "err_unreadable", "out", "out_json", "write_text"]


def out(message: str) -> None:
    """Print a line on stdout, control characters escaped."""
    write_line(sys.stdout, escape_controls(message))


def err_unreadable(path: str, problems: Sequence[str]) -> None:
    """Name, on stderr, the rows of the journal at `path` that could not be read whole."""
    err(f"adws: the journal {path} holds rows it cannot read:")
    for problem in problems:
        err(f"  {problem}")


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
    write_line(sys.stdout, escape_json(text))


def colour() -> bool:
    """Tell whether stdout takes colour: a terminal, unless NO_COLOR is set or TERM is dumb.

    (NO_COLOR counts when it is set to anything but nothing: https://no-color.org.)
    """
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return sys.stdout.isatty()


def write_text(document: str) -> None:
    """Print what escaped its own text (an HTML page, a coloured diff) on stdout, as it is."""
    write_line(sys.stdout, document.rstrip("\n"))
