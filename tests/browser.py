"""A real headless Chromium, driven over the DevTools protocol with the standard library only.

Chromium speaks the protocol on two pipes (`--remote-debugging-pipe`: it
reads commands on fd 3 and writes answers and events on fd 4, each message
a JSON object ended by a NUL byte), so no WebSocket client is needed. The
browser runs in its own session with a fresh profile, and is stopped, its
whole process group killed, when the `with` block ends.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Browser", "browser", "chromium"]

FLAGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    "--window-size=1200,900",
)
TIMEOUT: Final = 60.0


def chromium() -> str | None:
    """Find Debian's chromium (`make check` installs it where it can)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One page in a headless Chromium: navigate, evaluate, click, screenshot; console errors."""

    def __init__(self, process: subprocess.Popen[bytes], commands: int, answers: int) -> None:
        self.process = process
        self.commands = commands
        self.answers = answers
        self.buffer = b""
        self.next_id = 0
        self.session = ""
        self.events: list[dict[str, Any]] = []

    def _send(self, method: str, params: dict[str, Any], *, session: bool) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        return self.next_id

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.answers], [], [], max(left, 0))
            if not ready:
                msg = "chromium did not answer in time"
                raise TimeoutError(msg)
            chunk = os.read(self.answers, 1 << 16)
            if not chunk:
                msg = "chromium closed its pipe"
                raise ConnectionError(msg)
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        loaded: dict[str, Any] = json.loads(message)
        return loaded

    def call(self, method: str, *, session: bool = True, **params: Any) -> dict[str, Any]:
        """Send one command and return its result, keeping the events that come meanwhile."""
        wanted = self._send(method, params, session=session)
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._receive(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    msg = f"{method}: {message['error']}"
                    raise RuntimeError(msg)
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        """Wait for an event (seen already, or to come)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            for event in self.events:
                if event.get("method") == method:
                    self.events.remove(event)
                    return event
            self.events.append(self._receive(deadline))

    def open(self, url: str) -> None:
        """Open a page at `url` and wait until it has loaded."""
        target = self.call("Target.createTarget", session=False, url="about:blank")
        attached = self.call(
            "Target.attachToTarget", session=False, targetId=target["targetId"], flatten=True
        )
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its value."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            msg = f"the page raised: {result['exceptionDetails']}"
            raise RuntimeError(msg)
        return result["result"].get("value")

    def console_errors(self) -> list[str]:
        """Return every error the page reported: console errors, exceptions, log errors."""
        self.evaluate("1")  # let events queued so far arrive
        errors = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                errors.append(str(params.get("args")))
            elif method == "Runtime.exceptionThrown":
                errors.append(str(params.get("exceptionDetails")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(str(params["entry"].get("text")))
        return errors

    def screenshot(self, path: Path) -> Path:
        """Save the whole page as a PNG."""
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@contextlib.contextmanager
def browser(profile: Path) -> Iterator[Browser]:
    """Start a headless Chromium with a fresh profile; stop it and all its processes after.

    What it prints goes to `chromium.log` beside the profile.
    """
    program = chromium()
    assert program is not None  # the caller skips without one
    commands_read, commands_write = os.pipe()
    answers_read, answers_write = os.pipe()
    # The protocol lives on fds 3 and 4 of the browser; a small Python puts the pipes there
    # (dash cannot redirect a descriptor above 9).
    place = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4);"
    place += " os.execvp(sys.argv[3], sys.argv[3:])"
    argv = [program, *FLAGS, f"--user-data-dir={profile}", "about:blank"]
    log = (profile.parent / "chromium.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-c", place, str(commands_read), str(answers_write), *argv],
        pass_fds=(commands_read, answers_write),
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    os.close(commands_read)
    os.close(answers_write)
    driver = Browser(process, commands_write, answers_read)
    try:
        yield driver
    finally:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError, ConnectionError):
            driver.call("Browser.close", session=False)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever it left: renderers, helpers
        process.wait()
        os.close(commands_write)
        os.close(answers_read)
