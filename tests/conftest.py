"""Shared fixtures and fakes: recording steps, a fake sleep, a workflows folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest
from hypothesis import settings
from returns.io import IOFailure, IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import ErrorType, PipelineError, WorkflowContext
from tests import packaging, postgres

# The adws plugin (offline agents, unused scripted answers) is loaded here rather than
# through its entry point (pyproject passes -p no:adws), so coverage measures it; pytester
# runs inner pytest sessions that load it through the entry point, as users get it.
pytest_plugins = ["adws.testing.plugin", "pytester"]

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from adws.engine.events import RunEvent
    from adws.runs import Runs

REPO = Path(__file__).resolve().parent.parent

# No example may fail for taking long: a deadline is a timed assertion, and these machines
# are shared and noisy (a property over batch inputs once missed Hypothesis's 200 ms).
settings.register_profile("adws", deadline=None)
settings.load_profile("adws")

T = TypeVar("T")
E = TypeVar("E")


def success(result: IOResult[T, E]) -> T:
    """Unwrap an IOSuccess, failing the test on anything else."""
    assert isinstance(result, IOSuccess), result
    value: T = unsafe_perform_io(result.unwrap())
    return value


def failure(result: IOResult[T, E]) -> E:
    """Unwrap an IOFailure, failing the test on anything else."""
    assert isinstance(result, IOFailure), result
    error: E = unsafe_perform_io(result.failure())
    return error


class Recorder:
    """Record which steps ran and the context each saw."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, WorkflowContext]] = []

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def seen(self, name: str) -> list[WorkflowContext]:
        return [ctx for step, ctx in self.calls if step == name]

    def ok(
        self, name: str, **outputs: object
    ) -> Callable[[WorkflowContext], IOResult[WorkflowContext, PipelineError]]:
        def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
            self.calls.append((name, ctx))
            return IOSuccess(ctx.merge_outputs(outputs))

        return run

    def fail(
        self,
        name: str,
        error_type: str = ErrorType.SHELL_FAILED,
        *,
        times: int | None = None,
        **outputs: object,
    ) -> Callable[[WorkflowContext], IOResult[WorkflowContext, PipelineError]]:
        """Fail `times` times (always when None), then succeed with `outputs`."""

        def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
            self.calls.append((name, ctx))
            if times is None or len(self.seen(name)) <= times:
                return IOFailure(PipelineError("", error_type, f"{name} broke"))
            return IOSuccess(ctx.merge_outputs(outputs))

        return run

    def boom(
        self, name: str
    ) -> Callable[[WorkflowContext], IOResult[WorkflowContext, PipelineError]]:
        def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
            self.calls.append((name, ctx))
            msg = f"{name} exploded"
            raise RuntimeError(msg)

        return run


class FakeSleep:
    """Record requested sleeps instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class Events:
    """An observer that keeps every event."""

    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    def __call__(self, event: RunEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [type(event).__name__ for event in self.events]


@pytest.fixture(autouse=True)
def _shared_worktrees(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Make worktrees no test names a folder for in the test session's folder, never in ~/.cache."""
    monkeypatch.setenv("ADWS_WORKTREES", str(tmp_path_factory.getbasetemp() / "shared-worktrees"))


def shared_worktree(repo: Path, run_id: str, label: str) -> Path:
    """Name the folder of a run's worktree in the shared worktrees folder (`_shared_worktrees`)."""
    from adws.workspaces._home import repository_key  # noqa: PLC0415 - only tests that look

    key = repository_key(repo.resolve(), repo.resolve() / ".git")
    return Path(os.environ["ADWS_WORKTREES"]) / key / run_id / label


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def fake_sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test from an empty temporary directory with no ADWS_* settings."""
    monkeypatch.chdir(tmp_path)
    for name in ("ADWS_WORKFLOWS", "ADWS_JOURNAL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def start_adws(
    project: Path, *argv: str, env: dict[str, str] | None = None, **popen: object
) -> subprocess.Popen[str]:
    """Start a real `python -m adws` in `project`, journaling to `project/runs.db`."""
    full_env = {
        **os.environ,
        "ADWS_JOURNAL": str(project / "runs.db"),
        "PYTHONPATH": str(REPO),
        **(env or {}),
    }
    full_env.pop("ADWS_WORKFLOWS", None)
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return] # popen options passed through
        [sys.executable, "-m", "adws", *argv],
        cwd=project,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def adws_json(
    project: Path, *argv: str, seed: int, timeout: float = 180
) -> tuple[int, dict[str, object], str]:
    """Run `adws ARGV` (a `--json` command) in its own process with `PYTHONHASHSEED=seed`.

    Return its exit code, its JSON report (`{}` when it printed none) and its stderr.
    """
    process = start_adws(project, *argv, env={"PYTHONHASHSEED": str(seed)})
    out, err = process.communicate(timeout=timeout)
    return process.returncode, json.loads(out or "{}"), err


def dead_pid() -> int:
    """Return the id of a process that has ended (a crashed coordinator's, say)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def queued_echo(tmp_path: Path) -> tuple[Runs, str]:
    """Queue a run of a one-step workflow that echoes, in `tmp_path/runs.db`; return it by id."""
    from adws.runs import RunRequest, Runs  # noqa: PLC0415 - only the tests that queue one

    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "echo.py").write_text(
        "from adws import Workflow, shell_step\necho = Workflow('echo', (shell_step('say', 'echo hi'),))\n"
    )
    runs = Runs(where=tmp_path / "runs.db", whole_process=False)
    run_id = runs.submit(RunRequest("echo", workflows=folder))
    assert isinstance(run_id, str)
    return runs, run_id


def wait_for(condition: Callable[[], object], seconds: float = 30.0) -> None:
    """Poll `condition` until it holds, failing the test after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail("timed out waiting for the process")


@pytest.fixture(scope="session")
def adws_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built once for the session (see tests/packaging.py)."""
    return packaging.build(tmp_path_factory.mktemp("adws-dist"))


@pytest.fixture(scope="session")
def installed_adws(adws_dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed, offline and with nothing else; its python."""
    python = packaging.fresh_venv(tmp_path_factory.mktemp("adws-installed") / "venv")
    packaging.pip_into(python, "--find-links", adws_dist, "adws")
    return python


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[postgres.Server]:
    """One real PostgreSQL server for the whole run (skipped, saying why, where none can start)."""
    reason = postgres.missing()
    if reason is not None:
        pytest.skip(reason)
    with postgres.running_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: postgres.Server) -> Iterator[str]:
    """The URL of a fresh, empty database on the session's server (with its password)."""
    databases = postgres.Databases(postgres_server)
    url = databases.fresh()
    yield url
    databases.drop(url)


@pytest.fixture(params=["sqlite", "postgres"])
def journal_at(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's journal lives, on each backend: a SQLite file's path, or a server's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "j" / "runs.db")
    return str(request.getfixturevalue("postgres_url"))
