"""The one way the benchmarks time something: the median of several runs."""

from __future__ import annotations

import gc
import statistics
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


def median_seconds(action: Callable[[], object], repeats: int, *, warm_up: bool = True) -> float:
    """Run `action` once to warm up (unless told not to), then `repeats` times; return the median."""
    if warm_up:
        action()
    times = []
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)
