"""Durations as people write them: `30s`, `5m`, `5h`, `7d` (caps' windows, `--older-than`)."""

from __future__ import annotations

import re
from typing import Final

from adws._exceptions import MalformedError

__all__ = ["parse_duration"]

_DURATION: Final = re.compile(r"([1-9][0-9]{0,5})([smhd])")
_UNIT: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, what: str = "duration") -> int:
    """Read a duration in seconds: a whole number, more than 0, and one of `s`, `m`, `h`, `d`.

    >>> parse_duration("30s"), parse_duration("5h"), parse_duration("7d")
    (30, 18000, 604800)
    >>> parse_duration("0h", "--older-than")
    Traceback (most recent call last):
    ...
    adws._exceptions.MalformedError: --older-than '0h' is not a duration (30s, 5h, 7d)
    """
    matched = _DURATION.fullmatch(text)
    if matched is None:
        msg = f"{what} {text!r} is not a duration (30s, 5h, 7d)"
        raise MalformedError(msg)
    return int(matched[1]) * _UNIT[matched[2]]
