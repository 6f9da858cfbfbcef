"""`adws serve`: time to the first byte of the runs page, and a step's end to the page's change.

Imported by `benchmarks/run.py` (or run alone: `python benchmarks/serve_bench.py`).
First byte: a journal holding 10,000 runs (queued rows, written at once),
`adws serve` started on a free port, a session made through the login
page; the figure is the median time from sending `GET /` to its first
byte, on SQLite and on a PostgreSQL server started here (skipped, saying
why, where none can start). Delay: with an event stream open, a running
run's step is let go (its hold file removed); the figure is the median
time from then to the stream's `change` (the step ends, the journal
records it, the poller reads it every 0.5 s), plus the page fetched again,
as the open page does.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

REPO: Final = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from adws.journal import Journal  # noqa: E402
from adws.journal.store import queue  # noqa: E402
from tests import postgres  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator

RUNS: Final = 10_000
REPEATS: Final = 7
FLOWS: Final = """
import os
import time

from returns.io import IOSuccess

from adws import Step, Workflow


def slow(ctx):
    while os.path.exists(ctx.inputs["hold"]):
        time.sleep(0.005)
    return IOSuccess(ctx)


def done(ctx):
    time.sleep(1.0)
    return IOSuccess(ctx)


held = Workflow(
    "held",
    (Step("slow", slow, reads=("hold",), writes=()), Step("done", done, reads=(), writes=())),
    inputs=("hold",),
)
"""


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _env(journal: str) -> dict[str, str]:
    return {**os.environ, "ADWS_JOURNAL": journal, "PYTHONPATH": str(REPO)}


@contextlib.contextmanager
def _serving(folder: Path, journal: str) -> Iterator[tuple[int, str]]:
    """Start `adws serve`; yield its port and a session cookie; stop it after."""
    port = _port()
    process = subprocess.Popen(
        [sys.executable, "-m", "adws", "serve", "--port", str(port)],
        cwd=folder,
        env=_env(journal),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = process.stderr.readline() if process.stderr is not None else ""
        token = Path(said.rpartition("with the token in ")[2].split(" (")[0].strip())
        deadline = time.monotonic() + 30
        cookie = None
        while cookie is None:
            try:
                cookie = _session(port, token.read_text().strip())
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield port, cookie
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
        if process.stderr is not None:
            process.stderr.close()


def _session(port: int, token: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/login")
    page = connection.getresponse().read().decode()
    start = page.index('name="csrf" value="') + len('name="csrf" value="')
    csrf = page[start : page.index('"', start)]
    connection.request(
        "POST",
        "/login",
        body=f"csrf={csrf}&token={token}&name=bench",
        headers={
            "content-type": "application/x-www-form-urlencoded",
            "origin": f"http://127.0.0.1:{port}",
        },
    )
    answer = connection.getresponse()
    answer.read()
    connection.close()
    return answer.getheader("set-cookie", "").split(";")[0]


def _first_byte(port: int, cookie: str) -> float:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.connect()
    started = time.perf_counter()
    connection.request("GET", "/", headers={"cookie": cookie})
    answer = connection.getresponse()
    answer.read(1)
    took = time.perf_counter() - started
    answer.read()
    connection.close()
    return took


def _fill(journal: str) -> None:
    opened = Journal(journal)
    statements = []
    for number in range(RUNS):
        statements += queue.queued(
            f"{number:012x}",
            f"w{number % 7}",
            fingerprint="f",
            steps=("a", "b"),
            inputs="{}",
            options=None,
        )
    opened.apply(statements)
    opened.close()


def _ttfb(folder: Path, journal: str) -> float:
    _fill(journal)
    with _serving(folder, journal) as (port, cookie):
        _first_byte(port, cookie)  # warm up
        times = sorted(_first_byte(port, cookie) for _ in range(REPEATS))
    return times[len(times) // 2]


def _changes(stream: socket.socket, wait: float) -> int:
    """Read what the stream sent within `wait` seconds; count its `change` events."""
    seen = b""
    deadline = time.monotonic() + wait
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([stream], [], [], left)
        if not ready:
            break
        seen += stream.recv(65_536)
        if wait > 1 and b"event: change" in seen:
            break
    return seen.count(b"event: change")


def _delay(folder: Path, journal: str) -> float:
    Journal(journal).close()
    (folder / "workflows").mkdir(exist_ok=True)
    (folder / "workflows" / "flows.py").write_text(FLOWS)
    delays = []
    with _serving(folder, journal) as (port, cookie):
        stream = socket.create_connection(("127.0.0.1", port))
        stream.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        stream.sendall(f"Cookie: {cookie}\r\n\r\n".encode())
        for number in range(5):
            hold = folder / f"hold{number}"
            hold.touch()
            run = subprocess.Popen(
                [sys.executable, "-m", "adws", "run", "held", "-i", f"hold={hold}", "-q"],
                cwd=folder,
                env=_env(journal),
            )
            time.sleep(2.0)  # started, and its first change seen
            _changes(stream, 0.8)  # what came before
            started = time.perf_counter()
            hold.unlink()
            if not _changes(stream, 30.0):
                msg = "the page was not told of the step's end within 30 s"
                raise TimeoutError(msg)
            _first_byte(port, cookie)  # the open page fetches itself again
            delays.append(time.perf_counter() - started)
            run.wait(timeout=60)
        stream.close()
    return sorted(delays)[len(delays) // 2]


def measure() -> dict[str, Any]:
    """Measure the first byte on both backends and the delay on SQLite."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite_ttfb_ms"] = _ttfb(Path(tmp), str(Path(tmp) / "runs.db")) * 1e3
    with tempfile.TemporaryDirectory() as tmp:
        results["delay_s"] = _delay(Path(tmp), str(Path(tmp) / "runs.db"))
    reason = postgres.missing()
    if reason is None:
        with postgres.running_server() as server, tempfile.TemporaryDirectory() as tmp:
            url = postgres.Databases(server).fresh()
            results["postgres_ttfb_ms"] = _ttfb(Path(tmp), url) * 1e3
    else:
        results["postgres_skipped"] = reason
    return results


def render(b: dict[str, Any]) -> list[str]:
    """Table rows, each figure beside its target."""
    rows = [
        (
            f"| runs page, first byte, {RUNS:,} runs, SQLite | {b['sqlite_ttfb_ms']:.0f} ms |"
            " under 200 ms (a page shows the newest 200) |"
        ),
    ]
    if "postgres_ttfb_ms" in b:
        rows.append(
            f"| runs page, first byte, {RUNS:,} runs, PostgreSQL | {b['postgres_ttfb_ms']:.0f} ms"
            " | under 200 ms |"
        )
    else:
        rows.append(f"| runs page, first byte, PostgreSQL | skipped: {b['postgres_skipped']} | |")
    rows.append(
        f"| a step's end to the open page showing it | {b['delay_s']:.2f} s |"
        " about the poll interval (0.5 s) |"
    )
    return rows


if __name__ == "__main__":
    print("\n".join(render(measure())))
