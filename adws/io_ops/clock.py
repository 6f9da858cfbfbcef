"""The clock: `sleep`, `monotonic` and `utc_now`, swappable in tests."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["monotonic", "sleep", "utc_now", "wall_clock"]

sleep: Final[Callable[[float], None]] = time.sleep
monotonic: Final[Callable[[], float]] = time.monotonic
wall_clock: Final[Callable[[], float]] = time.time
"""Seconds since the epoch: for reset times a service names (`resetsAt`)."""


def utc_now() -> str:
    """Return the current UTC time as ISO 8601 with seconds."""
    return datetime.now(tz=UTC).isoformat(timespec="seconds")
