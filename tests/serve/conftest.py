"""A project with workflows (one stops for approval) and a journal, for `adws serve`'s tests.

Runs are made by real `python -m adws` processes in the project; the
journal is named in the environment, as `adws serve`'s own children get it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from adws.serve.access import Sessions
from tests.conftest import REPO

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from starlette.testclient import TestClient

FLOWS = """
import os
import time

from returns.io import IOSuccess

from adws import Step, Workflow, approval_step
from adws.agents import AgentResponse, ScriptedAgent
from adws.agents.step import agent_step
from adws.contract.validator import OutputContract
from adws.engine.usage import Usage


def log(name, line):
    with open(name, "a") as out:
        out.write(line + "\\n")


def go(ctx):
    log("ran.log", ctx.inputs["n"])
    return IOSuccess(ctx)


def slow(ctx):
    log("started.log", ctx.inputs["n"])
    while os.path.exists("hold"):
        time.sleep(0.05)
    return IOSuccess(ctx)


gated = Workflow(
    "gated",
    (approval_step("ship", message="ship {n}?"), Step("go", go, reads=("n",), writes=())),
    inputs=("n",),
)
def answer(request):
    return AgentResponse("STATUS: done\\nPLAN: yes\\n", {}, Usage(0.25, 100, 10, 1, "m"))


priced = Workflow(
    "priced",
    (agent_step("plan", prompt="p", agent=ScriptedAgent([answer]), contract=OutputContract(("PLAN",))),),
)
held = Workflow(
    "held",
    (Step("slow", slow, reads=("n",), writes=()), Step("go", go, reads=("n",), writes=())),
    inputs=("n",),
)
"""

TOKEN = "the-server-token"  # noqa: S105 - a test server's token, made up
SITE = "http://127.0.0.1:8765"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with `workflows/flows.py`, the current folder while the test runs."""
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ADWS_WORKFLOWS", raising=False)
    return tmp_path


def adws(project: Path, journal: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run `adws ARGV` in `project` to its end, its journal in the environment."""
    env = {**os.environ, "ADWS_JOURNAL": journal, "PYTHONPATH": str(REPO)}
    env.pop("ADWS_WORKFLOWS", None)
    return subprocess.run(
        [sys.executable, "-m", "adws", *argv],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def waiting_run(project: Path, journal: str, n: str = "1") -> str:
    """Start `gated` to its approval; return the run's id."""
    done = adws(project, journal, "run", "gated", "-i", f"n={n}", "--json", "-q")
    assert done.returncode == 3, done.stderr
    return Journal(journal).runs(status="waiting")[0].run_id


@pytest.fixture
def sqlite_journal(project: Path) -> str:
    return str(project / ".adws" / "runs.db")


def client_for(
    journal: str, hosts: frozenset[str] | None = None, interval: float = 0.05
) -> TestClient:
    """An in-process client of the app over `journal`, reached as 127.0.0.1:8765."""
    from starlette.testclient import TestClient  # noqa: PLC0415 - the serve extra

    from adws.serve.app import build_app  # noqa: PLC0415 - as above

    app = build_app(Journal(journal), Sessions(TOKEN), hosts=hosts, interval=interval)
    return TestClient(app, base_url=SITE, follow_redirects=False)


def log_in(client: TestClient, name: str = "ada") -> None:
    """Log in through the login page, as a browser would."""
    csrf = form_token(client.get("/login").text)
    answer = client.post(
        "/login", data={"csrf": csrf, "token": TOKEN, "name": name}, headers={"origin": SITE}
    )
    assert answer.status_code == 303, answer.text


def form_token(page: str, index: int = 0) -> str:
    """Return the `index`th form token of a page."""
    marker = 'name="csrf" value="'
    at = -1
    for _ in range(index + 1):
        at = page.index(marker, at + 1)
    start = at + len(marker)
    return page[start : page.index('"', start)]


@pytest.fixture
def client(sqlite_journal: str) -> Iterator[TestClient]:
    Journal(sqlite_journal).close()  # made, empty
    with client_for(sqlite_journal) as made:
        yield made
