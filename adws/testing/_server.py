"""What the fakes share: an HTTP server on 127.0.0.1 in a daemon thread, and a quiet handler.

`LocalServer` is the base of `FakeModelAPI` and `FakeGitHub`: it binds
127.0.0.1 (an ephemeral port unless given one), serves in a daemon thread
until `close` (or the end of a `with` block), and sets `closing` first, so a
reply waiting out a delay ends at once. Its handler reaches the fake as
`self.server.owner`. `serving` and `until_signalled` are what the fakes'
programs (`python -m adws.testing.model_api`, `... github_api`) share.
"""

from __future__ import annotations

import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Self, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["LocalServer", "QuietHandler", "serving", "until_signalled"]

Served = TypeVar("Served", bound="LocalServer")


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that keeps connections open (HTTP/1.1) and logs nothing."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        """Keep the test's output clean."""


class LocalServer:
    """Serve `handler` on 127.0.0.1 (port 0: any free one) in a daemon thread until closed."""

    def __init__(self, handler: type[QuietHandler], port: int = 0) -> None:
        """Bind `port` and start serving; the handler finds this object as `server.owner`."""
        self.closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        self._server.owner = self  # type: ignore[attr-defined] # the handler finds its fake here
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Return the base URL (`http://127.0.0.1:PORT`)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        """Return the running fake."""
        return self

    def __exit__(self, *_exc: object) -> None:
        """Stop serving."""
        self.close()

    def close(self) -> None:
        """Stop serving; a delayed answer ends at once."""
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def serving(program: str, port: int, start: Callable[[], Served]) -> Served:
    """Start a fake's server on `port`, or exit 2 saying why `program` cannot serve there."""
    try:
        return start()
    except OSError as exc:
        sys.stderr.write(f"{program}: cannot serve on port {port}: {exc}\n")
        raise SystemExit(2) from exc


def until_signalled() -> threading.Event:
    """Return the event SIGTERM or Ctrl-C sets: a fake's program serves until then."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop
