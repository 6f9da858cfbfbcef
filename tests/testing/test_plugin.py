"""The pytest plugin as users get it: through its pytest11 entry point, in a pytest of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from adws.agents import AgentRequest, ClaudeAgent
from adws.agents.offline import OFFLINE
from adws.agents.scripted import ROUTED
from adws.testing import ScriptedAgent
from tests.conftest import failure

if TYPE_CHECKING:
    from pathlib import Path

UNUSED = """
from adws.agents import AgentRequest
from adws.testing import ScriptedAgent


def test_uses_one_of_two_answers():
    agent = ScriptedAgent.by_step({"plan": ["STATUS: done", "STATUS: done"], "write": ["x"]})
    agent(AgentRequest("p", "plan"))
"""

STARTS_A_PROCESS = """
import pytest
from adws.agents import AgentRequest, CommandAgent

MARK


def test_asks_a_real_agent():
    CommandAgent(["touch", "MARKER"])(AgentRequest("p", "plan"))
"""


def test_answers_left_unused_fail_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(UNUSED)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ScriptedAgent.by_step left 1 answer unused for 'plan'",
            "*ScriptedAgent.by_step left 1 answer unused for 'write'",
        ]
    )


def test_an_agent_process_under_the_plugin_runs_nothing_and_fails_the_test(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    pytester.makepyfile(STARTS_A_PROCESS.replace("MARKER", str(marker)).replace("MARK", ""))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*offline: CommandAgent('touch *') was not started for step 'plan'*"]
    )
    assert not marker.exists()


@pytest.mark.parametrize("mark", ["agent_process", "live"])
def test_a_marked_test_may_start_its_agent(
    pytester: pytest.Pytester, tmp_path: Path, mark: str
) -> None:
    marker = tmp_path / "ran"
    source = STARTS_A_PROCESS.replace("MARKER", str(marker))
    pytester.makepyfile(source.replace("MARK", f"pytestmark = pytest.mark.{mark}"))
    result = pytester.runpytest_subprocess("--strict-markers")
    result.assert_outcomes(passed=1)
    assert marker.exists()


def test_the_ini_option_turns_offline_off_for_a_suite(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    pytester.makeini("[pytest]\nadws_offline = false\n")
    pytester.makepyfile(STARTS_A_PROCESS.replace("MARKER", str(marker)).replace("MARK", ""))
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    assert marker.exists()


def test_claude_agent_is_refused_offline_before_it_loads_the_sdk() -> None:
    """Offline (as in this very test), the real SDK is not even imported."""
    error = failure(ClaudeAgent()(AgentRequest("p", "plan")))
    assert error.message.startswith("offline: ClaudeAgent() was not started for step 'plan'")
    assert OFFLINE.refused == (error.message,)
    OFFLINE.reset(enabled=True)  # this test expected the refusal: it must not fail it


def test_by_step_agents_made_while_nobody_watches_are_not_kept() -> None:
    ROUTED.watch(on=False)
    ScriptedAgent.by_step({"plan": ["left over"]})
    assert ROUTED.agents == []
    ROUTED.watch(on=True)


def test_a_test_that_failed_is_not_reported_twice(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(UNUSED + "    raise AssertionError('the real failure')\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    assert "left 1 answer unused" not in result.stdout.str()
