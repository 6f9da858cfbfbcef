"""The adws pytest plugin, registered through the `pytest11` entry point.

Installing adws adds it to every pytest run (`-p no:adws` leaves it out):

- offline by default: an agent call that would start a process or reach a
  service (`CommandAgent`, `ClaudeAgent`) runs nothing and fails the test,
  unless the test is marked `agent_process` (a local program, such as a demo
  agent) or `live` (a hosted model), or the ini option `adws_offline = false`
  turns the switch off for the suite;
- a `ScriptedAgent.by_step` created in a test must be used up: answers left
  over fail the test at teardown, naming the step and how many were left;
- the `fake_model_api` fixture: a `FakeModelAPI` on 127.0.0.1 for the test,
  closed after it, to run a workflow through the real `claude` or `codex`
  CLI offline (mark the test `agent_process`: the CLI is a local program).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from adws.agents.offline import OFFLINE
from adws.agents.scripted import ROUTED
from adws.testing.model_api import FakeModelAPI

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator

__all__ = [
    "adws_guard",
    "fake_model_api",
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_makereport",
]

MARKERS = {
    "live": "the test calls a hosted model: adws lets its agents reach the network",
    "agent_process": "the test runs a local agent program: adws lets its agents start processes",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the `adws_offline` ini option."""
    parser.addini(
        "adws_offline",
        "refuse agent calls that start a process or reach a service, unless a test is marked "
        "live or agent_process (default: true)",
        type="bool",
        default=True,
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the markers, so `--strict-markers` accepts them."""
    for name, meaning in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Note whether the test itself failed: its leftovers are then not worth a second report."""
    report = yield
    if call.when == "call":
        item.stash[_FAILED] = report.failed
    return report


@pytest.fixture(autouse=True)
def adws_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run the test offline (unless marked) and fail it for unused scripted answers."""
    marked = any(request.node.get_closest_marker(name) for name in MARKERS)
    OFFLINE.reset(enabled=bool(request.config.getini("adws_offline")) and not marked)
    ROUTED.watch(on=True)
    try:
        yield
        refused, routed = OFFLINE.refused, list(ROUTED.agents)
    finally:
        OFFLINE.reset(enabled=False)
        ROUTED.watch(on=False)
    if request.node.stash.get(_FAILED, False):
        return  # the failure already says what went wrong
    problems = [f"- {message}" for message in refused]
    for agent in routed:
        problems.extend(
            f"- ScriptedAgent.by_step left {count} answer{'s' * (count > 1)} unused for {route!r}"
            for route, count in agent.unused.items()
        )
    if problems:
        pytest.fail("adws:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture
def fake_model_api() -> Iterator[FakeModelAPI]:
    """Serve a scripted model API on 127.0.0.1 for this test (see `adws.testing.FakeModelAPI`)."""
    with FakeModelAPI() as api:
        yield api
