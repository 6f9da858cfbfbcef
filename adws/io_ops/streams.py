"""Read a process's stdout and stderr as they come, each up to a cap, stdout line by line."""

from __future__ import annotations

import contextlib
import os
import selectors
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable

__all__ = ["DRAIN_SECONDS", "LINE_LIMIT", "Streams", "tail"]

_TAIL_CHARS: Final = 2000
_CHUNK: Final = 64 << 10
LINE_LIMIT: Final = 1 << 20
"""The longest stdout line handed to a line listener; a longer one is skipped whole."""

DRAIN_SECONDS: Final = 1.0
"""After a kill, how long output is still read before the pipes are abandoned.

A detached grandchild (`setsid`) may hold a pipe open forever; past this
grace adws stops reading, so a timeout bounds the whole step.
"""


def tail(text: str, limit: int = _TAIL_CHARS) -> str:
    """Return the last `limit` characters of `text`, marking a cut.

    >>> tail("abcdef", 3)
    '…def'
    """
    if len(text) <= limit:
        return text
    return "…" + text[-limit:]


class _Lines:
    """Cut stdout into lines for a listener, skipping any line longer than `LINE_LIMIT`."""

    def __init__(self, listener: Callable[[str], None]) -> None:
        self.listener = listener
        self.partial = bytearray()
        self.skipping = False

    def feed(self, chunk: bytes) -> None:
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            if not self.skipping and len(self.partial) + len(piece) <= LINE_LIMIT:
                self.partial += piece
                self.listener(self.partial.decode("utf-8", errors="replace"))
            self.partial.clear()
            self.skipping = False
        if not self.skipping:
            self.partial += rest
            if len(self.partial) > LINE_LIMIT:
                self.partial.clear()
                self.skipping = True


class Streams:
    """Read a process's stdout and stderr as they come, each up to a cap.

    `pump` returns whether any output arrived, so the caller can tell a
    silent process (`idle_timeout`) from a busy one; `on_line` hears each
    complete stdout line as it arrives (a streaming CLI's events).
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        stdin: bytes | None,
        cap: int,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        """Watch the process's pipes; the prompt in `stdin` is written as the process reads."""
        self.cap = cap
        self.data: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        self.overflowed: str | None = None
        self.lines = None if on_line is None else _Lines(on_line)
        self.selector = selectors.DefaultSelector()
        self.pending = memoryview(stdin or b"")
        assert process.stdout is not None  # noqa: S101 - Popen was given PIPE for all three
        assert process.stderr is not None  # noqa: S101 - as above
        assert process.stdin is not None  # noqa: S101 - as above
        self.selector.register(process.stdout, selectors.EVENT_READ, "stdout")
        self.selector.register(process.stderr, selectors.EVENT_READ, "stderr")
        self.stdin = process.stdin
        self.pipes = (process.stdin, process.stdout, process.stderr)
        if self.pending:
            os.set_blocking(self.stdin.fileno(), False)
            self.selector.register(self.stdin, selectors.EVENT_WRITE, "stdin")
        else:
            self.stdin.close()

    @property
    def reading(self) -> bool:
        """Tell whether stdout or stderr may still say something."""
        return any(key.data != "stdin" for key in self.selector.get_map().values())

    def _write(self, key: selectors.SelectorKey) -> None:
        try:
            written = os.write(key.fd, self.pending[:_CHUNK])
        except OSError as exc:
            # Full for now: try again later. Closed: the process has read all it wants.
            written = 0 if isinstance(exc, BlockingIOError) else len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            # The prompt is all there: closing stdin tells the agent no more is coming.
            self.selector.unregister(self.stdin)
            self.stdin.close()

    def pump(self, seconds: float | None) -> bool:
        """Move data for up to `seconds` (None: until something happens); tell if output came."""
        heard = False
        for key, _ in self.selector.select(seconds):
            if key.data == "stdin":
                self._write(key)
                continue
            chunk = os.read(key.fd, _CHUNK)
            if not chunk:
                self.selector.unregister(key.fileobj)
                continue
            heard = True
            buffer = self.data[key.data]
            room = self.cap - len(buffer)
            buffer += chunk[: max(room, 0)]
            if len(chunk) > room and self.overflowed is None:
                self.overflowed = key.data
            if key.data == "stdout" and self.lines is not None and self.overflowed is None:
                self.lines.feed(chunk)
        return heard

    def close(self) -> None:
        """Stop watching and close every pipe."""
        self.selector.close()
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                pipe.close()

    def text(self, name: str, errors: str = "replace") -> str:
        """Return what `name` (`stdout` or `stderr`) printed, decoded (`errors`: as `decode`)."""
        return self.data[name].decode("utf-8", errors=errors)
