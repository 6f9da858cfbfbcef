"""Every preset and ClaudeAgent through the real CLIs (pinned, from npm) against the fake model API.

`claude` 2.1.330 and `codex` 0.169.0 from `.cache/agent-clis`, and the Claude
Agent SDK with its bundled CLI: each test scripts the fake API, runs an
agent step through the real executor, and checks what adws made of what the
CLI did. Nothing here reaches the network or needs a key.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from returns.io import IOResult

from adws import (
    OutputContract,
    RetryPolicy,
    Workflow,
    WorkflowContext,
    agent_step,
    io_ops,
    run_workflow,
)
from adws.engine.errors import PipelineError
from adws.engine.events import AgentActivity, RunFinished
from adws.testing import FakeModelAPI, Reply
from tests.agents.clis import backend, git_repo, kinds, needs, on_path
from tests.conftest import Events, FakeSleep, failure, success

pytestmark = [pytest.mark.agent_process, pytest.mark.agent_cli]

DONE = "STATUS: done\nSUMMARY: all good"


@pytest.fixture(autouse=True)
def clis_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", on_path())


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A git repository for the agent to work in (codex refuses anything else)."""
    return git_repo(tmp_path / "work")


def run_step(  # noqa: PLR0913 - a step's knobs, all keyword-only
    kind: str,
    api: FakeModelAPI,
    home: Path,
    work: Path,
    *,
    prompt: str = "Say it is all good.",
    contract: OutputContract = OutputContract(("SUMMARY",)),  # noqa: B008 - frozen
    retry: RetryPolicy = RetryPolicy(max_attempts=3),  # noqa: B008 - frozen
    events: Events | None = None,
    sleep: FakeSleep | None = None,
    **step: object,
) -> IOResult[WorkflowContext, PipelineError]:
    agent = backend(kind, api, home)
    ask = agent_step(
        "ask",
        prompt=prompt,
        agent=agent,
        contract=contract,
        retry=retry,
        cwd=str(work),
        **step,  # type: ignore[arg-type] # timeouts and edits
    )
    return run_workflow(
        Workflow("real", (ask,)),
        observers=[events] if events is not None else (),
        sleep=sleep or FakeSleep(),
    )


def prompts(api: FakeModelAPI) -> list[str]:
    from adws.testing._wire import prompt_of  # noqa: PLC0415 - a helper of the fake's

    return [prompt_of(request["body"]) for request in api.requests]


@pytest.mark.parametrize("kind", kinds())
def test_a_good_answer_is_the_steps_outputs_with_its_usage_and_session(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(Reply.text(DONE, input_tokens=1000, output_tokens=100))
    events = Events()
    ctx = success(run_step(kind, fake_model_api, tmp_path / "home", work, events=events))
    assert ctx.inputs["summary"] == "all good"
    agent = ctx.inputs["ask_agent"]
    assert isinstance(agent["session_id"], str)
    assert agent["session_id"]
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.usage is not None
    assert (finished.usage.input_tokens, finished.usage.output_tokens, finished.usage.turns) == (
        1000,
        100,
        1,
    )
    if kind == "codex":
        assert finished.usage.cost_usd is None  # codex reports no cost
    else:
        assert finished.usage.cost_usd is not None
        assert finished.usage.cost_usd > 0
        assert finished.usage.model  # the model the CLI used is recorded


@pytest.mark.parametrize("kind", kinds())
def test_a_malformed_answer_is_fed_back_and_the_next_one_passes(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(Reply.text("I did it!"), Reply.text(DONE))
    ctx = success(run_step(kind, fake_model_api, tmp_path / "home", work))
    assert ctx.inputs["summary"] == "all good"
    first, second = prompts(fake_model_api)
    assert "Feedback from earlier attempts" not in first
    assert "attempt 1/3 failed: ContractViolation" in second


@pytest.mark.parametrize("kind", kinds())
def test_a_blocked_answer_ends_the_step_blocked_without_a_retry(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(Reply.text("STATUS: blocked\nREASON: the repository is read-only"))
    error = failure(run_step(kind, fake_model_api, tmp_path / "home", work))
    assert (error.error_type, error.message) == ("Blocked", "the repository is read-only")
    assert len(fake_model_api.requests) == 1


API_ERRORS = [(429, "rate limited"), (529, "overloaded"), (500, "server error")]


@pytest.mark.parametrize(("status", "name"), API_ERRORS)
@pytest.mark.parametrize("kind", ["claude", "claude-sdk"])
def test_claude_api_errors_are_readable_charged_and_not_retried_again(  # noqa: PLR0913, PLR0917 - parameters and fixtures
    kind: str, status: int, name: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    needs_cli = needs(kind)
    if needs_cli.args[0]:
        pytest.skip(needs_cli.kwargs["reason"])
    fake_model_api.script(*[Reply.error(status, "the API is unhappy")] * 5)
    events = Events()
    error = failure(run_step(kind, fake_model_api, tmp_path / "home", work, events=events))
    assert error.error_type == "AgentUnavailable"
    assert error.message.startswith(f"claude: API error {status} ({name}): API Error: ")
    assert error.context["api_error_status"] == status
    assert error.context["attempts"] == 1  # the CLI retried already: adws does not multiply it
    assert error.context["feedback"] == ()
    assert len(fake_model_api.requests) == 3  # one call and the CLI's own two retries
    assert error.context["usage"]["turns"] == 1  # charged, though it cost nothing


@pytest.mark.parametrize("kind", [pytest.param("codex", marks=needs("codex"))])
@pytest.mark.parametrize(
    ("status", "expected", "requests"),
    [(429, "API error 429 (rate limited)", 1), (500, "the model API failed", 9)],
)
def test_codex_api_errors_are_readable_and_not_retried_again(  # noqa: PLR0913, PLR0917 - parameters and fixtures
    kind: str,
    status: int,
    expected: str,
    requests: int,
    fake_model_api: FakeModelAPI,
    tmp_path: Path,
    work: Path,
) -> None:
    fake_model_api.script(*[Reply.error(status, "the API is unhappy")] * 20)
    error = failure(run_step(kind, fake_model_api, tmp_path / "home", work))
    assert error.error_type == "AgentUnavailable"
    assert error.message.startswith(f"codex: {expected}: ")
    assert error.context["attempts"] == 1
    # codex 0.169 gives up on a 429 without retry-after at once, and retries a 500 as
    # request retries times stream retries ((1 + 2) x (1 + 2)): its own count, not multiplied.
    assert len(fake_model_api.requests) == requests


@pytest.mark.parametrize(
    "kind", [pytest.param(k, marks=needs(k)) for k in ("claude", "claude-sdk")]
)
def test_a_costly_call_that_then_failed_is_charged(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    (work / "notes.txt").write_text("notes\n")
    read = Reply.tool("Read", {"file_path": str(work / "notes.txt")}, input_tokens=20_000)
    fake_model_api.script(read, *[Reply.error(500, "boom")] * 5)
    events = Events()
    error = failure(run_step(kind, fake_model_api, tmp_path / "home", work, events=events))
    assert error.error_type == "AgentUnavailable"
    cost = error.context["usage"]["cost_usd"]
    assert cost > 0.05
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.usage is not None
    assert finished.usage.cost_usd == cost  # a failed call's cost counts against budgets


@pytest.mark.parametrize("kind", kinds())
def test_a_timeout_stops_the_cli_and_everything_it_started(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(Reply.text(DONE, delay=60))
    started = time.monotonic()
    error = failure(
        run_step(kind, fake_model_api, tmp_path / "home", work, timeout=4, retry=RetryPolicy())
    )
    elapsed = time.monotonic() - started
    assert error.error_type == "Timeout"
    assert elapsed < 4 + 1 + 1.5  # the timeout, a second to stop, a little slack to start
    assert io_ops.GROUPS.current() == ()


@pytest.mark.parametrize("kind", kinds())
def test_silence_past_the_idle_timeout_is_a_hang(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(Reply.text(DONE, delay=60))
    error = failure(
        run_step(kind, fake_model_api, tmp_path / "home", work, idle_timeout=3, retry=RetryPolicy())
    )
    assert error.error_type == "AgentHung"
    assert error.message.endswith("printed nothing for 3s (idle_timeout) and was stopped")


@pytest.mark.parametrize("kind", kinds())
def test_a_megabyte_answer_arrives_whole(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    summary = "x" * 1_000_000
    fake_model_api.script(Reply.text(f"STATUS: done\nSUMMARY: {summary}"))
    ctx = success(run_step(kind, fake_model_api, tmp_path / "home", work))
    assert ctx.inputs["summary"] == summary


@pytest.mark.parametrize("kind", kinds())
def test_an_answer_past_the_contracts_cap_fails_naming_it(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(Reply.text(f"STATUS: done\nSUMMARY: {'y' * 30_000}"))
    contract = OutputContract(("SUMMARY",), max_output_bytes=20_000)
    error = failure(
        run_step(
            kind, fake_model_api, tmp_path / "home", work, contract=contract, retry=RetryPolicy()
        )
    )
    assert error.error_type == "AgentFailed"
    assert error.message.endswith(
        "answered 30022 bytes, more than the step's max_output_bytes of 20000"
    )


def write_reply(kind: str, work: Path) -> Reply:
    if kind == "codex":
        return Reply.tool("exec_command", {"cmd": "printf 'hi\\n' > hello.txt"})
    return Reply.tool("Write", {"file_path": str(work / "hello.txt"), "content": "hi\n"})


@pytest.mark.parametrize("kind", kinds())
def test_a_step_that_may_edit_files_gets_its_edit(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(write_reply(kind, work), Reply.text(DONE))
    events = Events()
    success(run_step(kind, fake_model_api, tmp_path / "home", work, edits=True, events=events))
    assert (work / "hello.txt").read_text() == "hi\n"
    doing = [event.text for event in events.events if isinstance(event, AgentActivity)]
    expected = "$ " if kind == "codex" else f"Write {work / 'hello.txt'}"
    assert doing
    assert doing[0].startswith(expected)


@pytest.mark.parametrize(
    "kind", [pytest.param(k, marks=needs(k)) for k in ("claude", "claude-sdk")]
)
def test_claude_refused_an_edit_is_permission_denied_never_retried(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(write_reply(kind, work), Reply.text(DONE))
    error = failure(run_step(kind, fake_model_api, tmp_path / "home", work))
    assert not (work / "hello.txt").exists()
    assert error.error_type == "PermissionDenied"
    assert error.message == (
        f"claude was refused Write on {work / 'hello.txt'};"
        " let the step change files with agent_step(..., edits=True)"
    )
    assert error.context["attempts"] == 1


@needs("codex")
def test_codex_without_edits_runs_in_a_read_only_sandbox(
    fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    """Codex reports no refusals in its events: the sandbox refuses, and the model answers."""
    fake_model_api.script(write_reply("codex", work), Reply.text(DONE))
    success(run_step("codex", fake_model_api, tmp_path / "home", work))
    assert not (work / "hello.txt").exists()
    tool_result = str(fake_model_api.requests[1]["body"]["input"][-1])
    assert "Read-only file system" in tool_result


@needs("codex")
def test_a_codex_reconnect_followed_by_an_answer_is_an_answer(
    fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(Reply.drop(), Reply.text(DONE))
    ctx = success(run_step("codex", fake_model_api, tmp_path / "home", work))
    assert ctx.inputs["ask_agent"]["reconnects"] == 1
    assert len(fake_model_api.requests) == 2


@needs("codex")
def test_codex_outside_git_is_a_permanent_failure_never_retried(
    fake_model_api: FakeModelAPI, tmp_path: Path
) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    error = failure(run_step("codex", fake_model_api, tmp_path / "home", outside))
    assert error.error_type == "AgentFailed"
    assert error.message.endswith(
        "exited with 1: Not inside a trusted directory and --skip-git-repo-check was not specified."
    )
    assert error.context["permanent"] is True
    assert error.context["attempts"] == 1
    assert fake_model_api.requests == []


@needs("codex")
def test_a_codex_usage_limit_with_a_reset_is_waited_for_through_the_runs_sleep(
    fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(Reply.usage_limit(150, io_ops.wall_clock()), Reply.text(DONE))
    sleep = FakeSleep()
    ctx = success(run_step("codex", fake_model_api, tmp_path / "home", work, sleep=sleep))
    assert ctx.inputs["summary"] == "all good"
    [waited] = sleep.calls
    # Codex names the reset to the minute, its seconds cut off: adws waits for that minute's end.
    assert 145 <= waited <= 211
    assert "Feedback from earlier attempts" not in prompts(fake_model_api)[-1]


@needs("codex")
def test_a_reset_past_the_runs_max_wait_parks_the_run_whatever_the_steps_timeout(
    fake_model_api: FakeModelAPI, tmp_path: Path, work: Path
) -> None:
    fake_model_api.script(Reply.usage_limit(4 * 3600, io_ops.wall_clock()))
    sleep = FakeSleep()
    error = failure(
        run_step("codex", fake_model_api, tmp_path / "home", work, sleep=sleep, timeout=600)
    )
    assert (error.error_type, error.context["reason"]) == ("Parked", "codex usage limit")
    assert error.context["wake_at"] > io_ops.wall_clock() + 4 * 3600 - 60
    assert (sleep.calls, len(fake_model_api.requests)) == ([], 1)
