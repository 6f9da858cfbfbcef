"""Output is a capped stream and a timeout bounds the whole step: real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adws import Workflow, io_ops, run_workflow
from adws.agents import AgentRequest, CommandAgent
from adws.shell.step import shell_step
from tests.conftest import REPO, failure, success

pytestmark = pytest.mark.slow

DETACHED = "setsid sleep 30 & echo started; sleep 30"
"""A command whose grandchild leaves the process group but keeps the pipes open."""


def test_a_shell_step_that_prints_endlessly_is_killed_at_its_cap() -> None:
    started = time.monotonic()
    error = failure(
        run_workflow(Workflow("w", (shell_step("loud", "yes", max_output_bytes=100_000),)))
    )
    assert (error.error_type, error.message) == (
        "ShellFailed",
        "`yes` printed more than 100000 bytes on stdout (max_output_bytes) and was killed",
    )
    assert error.context["limit"] == 100_000
    assert time.monotonic() - started < 5


def test_a_cap_on_stderr_counts_too() -> None:
    error = failure(
        run_workflow(Workflow("w", (shell_step("loud", "yes >&2", max_output_bytes=1000),)))
    )
    assert "on stderr (max_output_bytes)" in error.message


def test_output_under_the_cap_is_kept_whole() -> None:
    step = shell_step("s", "head -c 5000 /dev/zero | tr '\\0' x", max_output_bytes=5000)
    ctx = success(run_workflow(Workflow("w", (step,))))
    assert ctx.inputs["s_stdout"] == "x" * 5000


@pytest.mark.agent_process  # a real agent process
def test_an_agent_that_prints_endlessly_is_agent_failed_naming_the_limit() -> None:
    agent = CommandAgent(["yes"])
    error = failure(agent(AgentRequest("prompt", "research", max_output_bytes=1 << 20)))
    assert (error.step_name, error.error_type, error.message) == (
        "research",
        "AgentFailed",
        (
            "agent command `yes` printed more than 1048576 bytes on stdout (max_output_bytes 1048576) "
            "and was killed"
        ),
    )


def test_a_timeout_bounds_the_step_even_when_a_detached_grandchild_holds_the_pipe() -> None:
    started = time.monotonic()
    error = failure(run_workflow(Workflow("w", (shell_step("s", DETACHED, timeout=1),))))
    elapsed = time.monotonic() - started
    assert error.error_type == "Timeout"
    assert error.context["stdout_tail"] == "started\n"
    assert elapsed < 1 + io_ops.GRACE_SECONDS + io_ops.DRAIN_SECONDS + 1


@pytest.mark.agent_process  # a real agent process
def test_an_agent_timeout_is_bounded_the_same_way() -> None:
    agent = CommandAgent(["sh", "-c", DETACHED], timeout=1)
    started = time.monotonic()
    error = failure(agent(AgentRequest("prompt", "s")))
    assert error.error_type == "Timeout"
    assert time.monotonic() - started < 1 + io_ops.GRACE_SECONDS + io_ops.DRAIN_SECONDS + 1


def test_a_background_child_left_in_the_group_does_not_outlive_the_step(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    step = shell_step("s", f"sleep 30 & echo $! > {pid_file}; echo done")
    ctx = success(run_workflow(Workflow("w", (step,))))
    assert ctx.inputs["s_stdout"] == "done\n"
    pid = int(pid_file.read_text(encoding="utf-8"))
    deadline = time.monotonic() + 5
    while io_ops.process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not io_ops.process_alive(pid) or _zombie(pid)
    assert io_ops.GROUPS.current() == ()


def _zombie(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return True
    return "State:\tZ" in status


@pytest.mark.agent_process  # a real agent process
def test_a_large_prompt_reaches_an_agent_that_reads_it_all() -> None:
    agent = CommandAgent(["wc", "-c"])
    response = success(agent(AgentRequest("x" * 3_000_000, "s")))
    assert response.text.strip() == "3000000"


@pytest.mark.agent_process  # a real agent process
def test_an_agent_that_never_reads_its_prompt_still_answers() -> None:
    agent = CommandAgent(["sh", "-c", "exec 0<&-; sleep 0.3; echo STATUS: done"])
    response = success(agent(AgentRequest("x" * 3_000_000, "s")))
    assert response.text == "STATUS: done\n"


def test_adws_stays_small_while_an_agent_prints_endlessly(tmp_path: Path) -> None:
    """The 2.8 GB reproduction: `yes` as the agent under a 5 s timeout stays under 100 MB."""
    workflows = tmp_path / "workflows"
    workflows.mkdir()
    (workflows / "ask.py").write_text(
        "from adws import Workflow, agent_step, CommandAgent\n"
        "workflow = Workflow('ask', (agent_step('a', prompt='hi', agent=CommandAgent(['yes'],"
        " timeout=5), retry=__import__('adws').RetryPolicy(max_attempts=1)),))\n",
        encoding="utf-8",
    )
    script = (
        "import sys\nfrom adws.cli import main\n"
        "code = main(['run', 'ask', '--no-journal', '-q'])\n"
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "print(code, int(peak.split()[1]))\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    code, peak_kib = done.stdout.split()
    assert code == "1", done.stderr
    assert int(peak_kib) < 100 * 1024
    assert time.monotonic() - started < 10
    assert "printed more than 1048576 bytes on stdout" in done.stderr


def test_a_process_that_closes_its_output_but_keeps_running_still_times_out() -> None:
    error = failure(
        run_workflow(Workflow("w", (shell_step("s", "exec >&- 2>&-; sleep 30", timeout=0.5),)))
    )
    assert error.error_type == "Timeout"
