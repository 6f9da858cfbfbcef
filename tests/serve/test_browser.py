"""`adws serve` as people use it: the real server in its own process, a real headless Chromium.

Each test starts `python -m adws serve` on a free port in a project with
a real journal (SQLite, and PostgreSQL where the run is cheap), logs in
through the login page as a person would, and watches the pages the
server draws: live updates by server-sent events, a decision from the
page, and what a page without the session, or another site's form, can
do (nothing). The screenshots in docs/serve/ are made here: with
`ADWS_SCREENSHOTS=docs/serve` they are written there (a plain run writes
them to a temporary folder, so `make check` leaves the checkout as it was).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from adws.journal.store.workspaces import approvals_of
from tests.browser import Browser, browser, chromium
from tests.conftest import REPO, wait_for
from tests.serve.conftest import adws, waiting_run

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium() is None, reason="no chromium (make browser installs it)"),
]

_CHOSEN = os.environ.get("ADWS_SCREENSHOTS")
SHOTS = REPO / _CHOSEN if _CHOSEN else None
"""Where the docs' screenshots go (None: each test's temporary folder)."""


def shots(tmp_path: Path) -> Path:
    """Return the folder a test writes its screenshots to."""
    return SHOTS or tmp_path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class Server:
    """A running `adws serve`: its address and the token its file holds."""

    def __init__(self, process: subprocess.Popen[str], url: str, token: str) -> None:
        self.process, self.url, self.token = process, url, token


@contextlib.contextmanager
def serving(project: Path, journal: str) -> Iterator[Server]:
    """Start `adws serve` on a free port; stop it (and wait for it) after."""
    port = free_port()
    env = {**os.environ, "ADWS_JOURNAL": journal, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "adws", "serve", "--port", str(port)],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        said = process.stderr.readline()
        url = f"http://127.0.0.1:{port}/"
        assert said.startswith(f"adws serve: {url} over the journal "), said
        token_file = said.rpartition("with the token in ")[2].split(" (")[0].strip()
        wait_for(lambda: _answers(port), 30)
        yield Server(process, url, Path(token_file).read_text().strip())
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def _answers(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/login")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def log_in(driver: Browser, server: Server, name: str) -> None:
    """Log in through the login page, typing the token and a name, as a person would."""
    driver.open(f"{server.url}login")
    driver.evaluate(
        f"document.querySelector('input[name=token]').value = {server.token!r};"
        f"document.querySelector('input[name=name]').value = {name!r};"
        "document.querySelector('form').submit()"
    )
    driver.wait_for("Page.loadEventFired")
    assert driver.evaluate("location.pathname") == "/"


def awaited(driver: Browser, expression: str) -> object:
    """Evaluate a promise in the page and return what it resolves to."""
    found = driver.call(
        "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
    )
    return found["result"].get("value")


def shows(driver: Browser, text: str) -> bool:
    return bool(driver.evaluate(f"document.querySelector('main').textContent.includes({text!r})"))


def test_a_run_appears_while_it_runs_and_its_end_shows_without_a_reload(
    project: Path, sqlite_journal: str, tmp_path: Path
) -> None:
    Journal(sqlite_journal).close()
    (project / "hold").touch()
    with serving(project, sqlite_journal) as server, browser(tmp_path / "profile") as driver:
        log_in(driver, server, "ada")
        driver.evaluate("window.sameDocument = true")
        run = subprocess.Popen(
            [sys.executable, "-m", "adws", "run", "held", "-i", "n=7", "-q"],
            cwd=project,
            env={**os.environ, "ADWS_JOURNAL": sqlite_journal, "PYTHONPATH": str(REPO)},
        )
        try:
            wait_for((project / "started.log").exists)
            [record] = Journal(sqlite_journal).runs()
            wait_for(lambda: shows(driver, record.run_id), 20)
            assert shows(driver, "running")
            shots(tmp_path).mkdir(exist_ok=True)
            driver.screenshot(shots(tmp_path) / "runs.png")
            (project / "hold").unlink()
            assert run.wait(timeout=60) == 0
            wait_for(lambda: shows(driver, "succeeded"), 20)
        finally:
            run.kill()
            run.wait()
        assert driver.evaluate("window.sameDocument") is True  # updated in place, no reload
        driver.open(f"{server.url}runs/{record.run_id}")
        assert driver.evaluate("document.title") == f"held succeeded · run {record.run_id}"
        driver.screenshot(shots(tmp_path) / "run.png")
        for page in ("cost", "workers", "caps"):
            driver.open(f"{server.url}{page}")
            assert driver.evaluate("document.querySelector('h1').textContent") in {
                "cost over time",
                "workers",
                "caps",
            }
        assert driver.console_errors() == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_approval_from_the_page_continues_the_run_exactly_once(
    project: Path, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    journal = (
        str(project / ".adws" / "runs.db")
        if backend == "sqlite"
        else str(request.getfixturevalue("postgres_url"))
    )
    run_id = waiting_run(project, journal, "1")
    with serving(project, journal) as server, browser(tmp_path / "profile") as driver:
        log_in(driver, server, "grace <hopper>")
        driver.open(f"{server.url}approvals")
        assert shows(driver, "ship 1?")
        if backend == "sqlite":
            driver.screenshot(shots(tmp_path) / "approvals.png")
        driver.evaluate(
            "document.querySelector('form.approve textarea').value = 'looks <b>right</b>';"
            "document.querySelector('form.approve button').click()"
        )
        driver.wait_for("Page.loadEventFired")
        assert driver.evaluate("document.querySelector('h1').textContent") == f"approve {run_id}"
        assert driver.console_errors() == []
    wait_for(lambda: Journal(journal).find(run_id).status == "succeeded", 60)  # type: ignore[union-attr]
    record = Journal(journal).find(run_id)
    assert not isinstance(record, str)
    [asked] = approvals_of(Journal(journal), run_id)
    assert asked.decision is not None
    assert (record.status, asked.decision.by, asked.decision.note) == (
        "succeeded",
        "grace <hopper>",
        "looks <b>right</b>",
    )
    assert (project / "ran.log").read_text() == "1\n"


def test_a_page_opened_without_the_session_shows_nothing_and_changes_nothing(
    project: Path, sqlite_journal: str, tmp_path: Path
) -> None:
    run_id = waiting_run(project, sqlite_journal)
    with serving(project, sqlite_journal) as server, browser(tmp_path / "profile") as driver:
        driver.open(f"{server.url}runs/{run_id}")
        assert driver.evaluate("location.pathname") == "/login"
        assert not shows(driver, run_id)
        status = awaited(
            driver,
            f"fetch('/runs/{run_id}/approve', {{method: 'POST', body: new URLSearchParams("
            "{csrf: 'x', note: 'n'})}).then(r => r.status)",
        )
        events = awaited(driver, "fetch('/events').then(r => r.status)")
        driver.screenshot(shots(tmp_path) / "login.png")
    assert (status, events) == (403, 401)
    assert Journal(sqlite_journal).find(run_id).status == "waiting"  # type: ignore[union-attr]


ATTACKER = """<!DOCTYPE html><html><body>
<form method="post" action="{target}"><input name="csrf" value="guess">
<input name="note" value="pwned"></form>
<script>document.forms[0].submit()</script></body></html>
"""


def test_a_cross_site_form_post_is_refused(
    project: Path, sqlite_journal: str, tmp_path: Path
) -> None:
    run_id = waiting_run(project, sqlite_journal)
    site = tmp_path / "attacker"
    site.mkdir()
    with serving(project, sqlite_journal) as server:
        target = f"{server.url}runs/{run_id}/approve"
        (site / "index.html").write_text(ATTACKER.format(target=target))
        port = free_port()
        other = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=site,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(lambda: _listening(port))
            with browser(tmp_path / "profile") as driver:
                log_in(driver, server, "ada")
                driver.open(f"http://127.0.0.1:{port}/index.html")
                wait_for(lambda: driver.evaluate("location.href") == target)
                wait_for(lambda: driver.evaluate("document.readyState") == "complete")
                said = driver.evaluate("document.body.textContent")
        finally:
            other.terminate()
            other.wait()
    assert said == "refused: this change comes from another site\n"
    assert Journal(sqlite_journal).find(run_id).status == "waiting"  # type: ignore[union-attr]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_event_streams_say_change_when_the_journal_changes(
    project: Path, sqlite_journal: str
) -> None:
    Journal(sqlite_journal).close()
    with serving(project, sqlite_journal) as server:
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        cookie = _session(port, server.token)
        streams, connections = [], []
        for _ in range(3):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            connections.append(connection)
            connection.request("GET", "/events", headers={"cookie": cookie})
            answer = connection.getresponse()
            assert answer.getheader("content-type", "").startswith("text/event-stream")
            assert answer.readline() == b"retry: 2000\n"
            streams.append(answer)
        for answer in streams:  # the first change: whatever happened since the page was drawn
            assert [answer.readline() for _ in range(3)][1] == b"event: change\n"
        started = time.monotonic()
        assert adws(project, sqlite_journal, "run", "held", "-i", "n=1", "-q").returncode == 0
        for answer in streams:
            assert [answer.readline() for _ in range(3)][1] == b"event: change\n"
        assert time.monotonic() - started < 20
        for answer, connection in zip(streams, connections, strict=True):
            answer.close()
            connection.close()


def _session(port: int, token: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/login")
    page = connection.getresponse().read().decode()
    connection.close()
    marker = 'name="csrf" value="'
    start = page.index(marker) + len(marker)
    csrf = page[start : page.index('"', start)]
    connection.request(
        "POST",
        "/login",
        body=f"csrf={csrf}&token={token}&name=bot",
        headers={
            "content-type": "application/x-www-form-urlencoded",
            "origin": f"http://127.0.0.1:{port}",
        },
    )
    answer = connection.getresponse()
    answer.read()
    connection.close()
    assert answer.status == 303
    return answer.getheader("set-cookie", "").split(";")[0]


def test_the_server_stays_up_under_200_event_streams(project: Path, sqlite_journal: str) -> None:
    Journal(sqlite_journal).close()
    with serving(project, sqlite_journal) as server:
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        cookie = _session(port, server.token)
        streams = []
        try:
            for _ in range(200):
                stream = socket.create_connection(("127.0.0.1", port), timeout=30)
                streams.append(stream)
                stream.sendall(
                    f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n".encode()
                )
            heads = [stream.recv(4096) for stream in streams]
            assert all(head.startswith(b"HTTP/1.1 200 OK") for head in heads)
            assert _answers(port)
            assert adws(project, sqlite_journal, "run", "held", "-i", "n=1", "-q").returncode == 0
            assert _answers(port)
        finally:
            for stream in streams:
                stream.close()
        assert server.process.poll() is None
