"""Parse the numbers options take (counts, dollars, days, tokens) within their bounds."""

from __future__ import annotations

import argparse
import math
from typing import Final

from adws.engine._limits import MAX_COST_USD, MAX_COUNT

__all__ = ["MOST_WAIT", "days", "money", "positive", "seconds", "share", "tokens", "whole"]


def positive(text: str) -> int:
    """Parse a whole number of at least 1, for argparse."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"expected a whole number of at least 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _bounded(text: str, most: float, what: str) -> float:
    """Parse a finite number from 0 to `most`, or refuse it naming `what` it should be."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or not 0 <= value <= most:
        msg = f"expected {what} from 0 to {most:,.0f}, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def money(text: str) -> float:
    """Parse a finite amount of US dollars from 0 to `MAX_COST_USD`, for argparse."""
    return _bounded(text, MAX_COST_USD, "an amount in US dollars")


MOST_WAIT: Final = 30 * 86_400.0
"""A month: no usage window a service names is longer; waiting longer in one process is a bug."""


def share(text: str) -> float:
    """Parse a share from 0 to 1 (`--park-at 0.95`: 95%), for argparse."""
    return _bounded(text, 1.0, "a share (0.95 is 95%)")


def seconds(text: str) -> float:
    """Parse a finite number of seconds from 0 to a month (`--max-wait`), for argparse."""
    return _bounded(text, MOST_WAIT, "a number of seconds")


def _digits(text: str, most: int) -> bool:
    """Tell whether `text` is at most `most` ASCII digits (`"²".isdigit()` is true, too)."""
    return text.isascii() and text.isdigit() and len(text) <= most


_MOST_ROWS: Final = 2**63 - 1
"""SQLite's largest integer: a LIMIT past it is an error there."""
_MOST_DAYS: Final = 700_000.0
"""About 1,900 years: any more and the cutoff date falls before the year 1."""


def whole(text: str) -> int:
    """Parse a whole number from 0 to SQLite's largest, for argparse."""
    value = int(text) if _digits(text, len(str(_MOST_ROWS))) else -1
    if not 0 <= value <= _MOST_ROWS:
        msg = f"expected a whole number of at least 0, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def days(text: str) -> float:
    """Parse a finite number of days from 0 to about 1,900 years, for argparse."""
    return _bounded(text, _MOST_DAYS, "a number of days")


def tokens(text: str) -> int:
    """Parse a whole number of tokens from 0 to `MAX_COUNT`, for argparse."""
    value = int(text) if _digits(text, len(str(MAX_COUNT))) else -1
    if not 0 <= value <= MAX_COUNT:
        msg = f"expected a whole number of tokens from 0 to {MAX_COUNT:,}, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value
