"""Live pages: the journal polled once for every open event stream, each stream bounded.

One poller reads what the pages could show (`adws.serve.reading.stamp`)
every `interval` seconds while any stream is open, and tells each stream
when it changed. A stream holds at most one pending change (a flag, not a
queue: ten changes while a browser was slow are one refresh), so a
stream's memory is bounded whatever the journal does; at most
`MOST_STREAMS` are open at once (past it, 503: try again).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Final, final

from anyio import to_thread

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

__all__ = ["MOST_STREAMS", "Poller"]

MOST_STREAMS: Final = 1_000
"""Event streams open at once at most."""
KEEPALIVE: Final = 15.0
"""Seconds between comments on a quiet stream (a proxy would close it; a gone client is seen)."""


@final
class Poller:
    """Read `stamp()` every `interval` seconds while streams are open; wake them on a change."""

    def __init__(
        self, stamp: Callable[[], str], interval: float, keepalive: float = KEEPALIVE
    ) -> None:
        """Keep what to read and how often; nothing is read until a stream opens."""
        self._stamp = stamp
        self.interval = interval
        self.keepalive = keepalive
        self._streams: set[asyncio.Event] = set()
        self._task: asyncio.Task[None] | None = None
        self.last: str | None = None

    async def _poll(self) -> None:
        while self._streams:
            now = await to_thread.run_sync(self._stamp)
            if now != self.last:
                self.last = now
                for stream in self._streams:
                    stream.set()
            await asyncio.sleep(self.interval)
        self._task = None

    def full(self) -> bool:
        """Tell whether no other stream may open."""
        return len(self._streams) >= MOST_STREAMS

    async def stream(self) -> AsyncGenerator[str]:
        """Yield server-sent events: `change` whenever what a page shows changed."""
        changed = asyncio.Event()
        changed.set()  # what changed between drawing the page and opening its stream
        self._streams.add(changed)
        if self._task is None:
            self._task = asyncio.create_task(self._poll())
        try:
            yield "retry: 2000\n\n"
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), self.keepalive)
                if changed.is_set():
                    changed.clear()
                    yield "event: change\ndata: 1\n\n"
                else:
                    yield ": still here\n\n"
        finally:
            self._streams.discard(changed)
