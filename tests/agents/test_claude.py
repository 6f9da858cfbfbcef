"""ClaudeAgent with the SDK's query replaced by a fake async generator.

When the extra is installed the fake yields the SDK's own message types;
without it, stand-ins with the same fields. Either way the backend's own
code runs unchanged.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any, Final

import attrs
import pytest
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import Workflow, WorkflowContext, run_workflow
from adws.agent_steps import agent_step
from adws.agents import AgentRequest, AgentResponse, ClaudeAgent
from adws.agents.claude import INSTALL_HINT, SdkApi, load_sdk
from adws.contract import OutputContract
from adws.usage import Usage
from tests.conftest import failure as bad
from tests.conftest import success as ok


def _installed_sdk() -> Any:
    """Return the real SDK module when the extra is installed (typed alike either way)."""
    try:
        return importlib.import_module("claude_agent_sdk")
    except ImportError:
        return None


real_sdk: Any = _installed_sdk()


@attrs.define
class StandInResult:
    """Stand-in for claude_agent_sdk.ResultMessage when the extra is absent."""

    subtype: str
    duration_ms: int
    duration_api_ms: int
    is_error: bool
    num_turns: int
    session_id: str
    total_cost_usd: float | None = None
    usage: dict[str, Any] | None = None
    result: str | None = None
    errors: list[str] | None = None


@attrs.define
class StandInOptions:
    """Stand-in for claude_agent_sdk.ClaudeAgentOptions."""

    model: str | None = None
    cwd: str | None = None
    max_turns: int | None = None
    allowed_tools: list[str] | None = None
    permission_mode: str | None = None
    system_prompt: str | None = None


class StandInError(Exception):
    """Stand-in for claude_agent_sdk.ClaudeSDKError."""


INSTALLED = real_sdk is not None
RESULT: Any = real_sdk.ResultMessage if INSTALLED else StandInResult
OPTIONS: Any = real_sdk.ClaudeAgentOptions if INSTALLED else StandInOptions
SDK_ERROR: Any = real_sdk.ClaudeSDKError if INSTALLED else StandInError
PROCESS_ERROR: Any = real_sdk.ProcessError if INSTALLED else StandInError


TOKENS: Final = {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5}


def result(
    text: str | None = "STATUS: done",
    *,
    is_error: bool = False,
    errors: list[str] | None = None,
    usage: object = TOKENS,
) -> Any:
    return RESULT(
        subtype="error_during_execution" if is_error else "success",
        duration_ms=1200,
        duration_api_ms=900,
        is_error=is_error,
        num_turns=3,
        session_id="sess-1",
        total_cost_usd=0.0123,
        usage=usage,
        result=text,
        errors=errors,
    )


class FakeQuery:
    """Record each call's prompt and options; yield the scripted messages."""

    def __init__(
        self, *messages: object, raises: Exception | None = None, hang: bool = False
    ) -> None:
        self.messages = messages
        self.raises = raises
        self.hang = hang
        self.calls: list[tuple[str, Any]] = []

    async def __call__(self, *, prompt: str, options: Any) -> AsyncIterator[object]:
        self.calls.append((prompt, options))
        for message in self.messages:
            yield message
        if self.raises is not None:
            raise self.raises
        if self.hang:
            await asyncio.sleep(3600)


def agent_with(query: FakeQuery, **options: Any) -> ClaudeAgent:
    api = SdkApi(query, OPTIONS, RESULT, SDK_ERROR)
    return ClaudeAgent(sdk=lambda: api, **options)


def test_a_normal_answer_is_the_result_text_with_cost_and_turns() -> None:
    query = FakeQuery(object(), result("STATUS: done\nSUMMARY: ok"))
    agent = agent_with(
        query, model="sonnet", max_turns=5, system_prompt="Be terse.", allowed_tools=["Read"]
    )
    response = ok(agent(AgentRequest("do it", "implement", cwd="/repo")))
    assert response == AgentResponse(
        "STATUS: done\nSUMMARY: ok",
        {"cost_usd": 0.0123, "turns": 3, "duration_ms": 1200, "session_id": "sess-1"},
        Usage(0.0123, 100, 5, 3, "sonnet"),
    )
    [(prompt, options)] = query.calls
    assert prompt == "do it"
    assert (options.model, options.cwd, options.max_turns, options.system_prompt) == (
        "sonnet",
        "/repo",
        5,
        "Be terse.",
    )
    assert (options.allowed_tools, options.permission_mode) == (["Read"], None)


def test_the_agents_own_cwd_is_used_when_the_step_sets_none() -> None:
    query = FakeQuery(result())
    ok(agent_with(query, cwd="/home/me")(AgentRequest("p", "s")))
    assert query.calls[0][1].cwd == "/home/me"


def test_a_result_flagged_as_error_is_agent_failed() -> None:
    error = bad(
        agent_with(FakeQuery(result(None, is_error=True, errors=["overloaded"])))(
            AgentRequest("p", "write")
        )
    )
    assert (error.step_name, error.error_type, error.message) == (
        "write",
        "AgentFailed",
        "Claude reported an error (error_during_execution): overloaded",
    )
    assert error.context["session_id"] == "sess-1"
    assert error.context["usage"] == Usage(0.0123, 100, 5, 3).to_dict()  # a failure still costs
    silent = bad(agent_with(FakeQuery(result(None, is_error=True)))(AgentRequest("p", "write")))
    assert silent.message.endswith(": no detail")


def test_usage_that_is_not_an_object_is_agent_failed() -> None:
    """A result whose usage is not an object fails rather than counting as free."""
    error = bad(agent_with(FakeQuery(result(usage=["tokens"])))(AgentRequest("p", "s")))
    assert error.message == "Claude Agent SDK: claude's usage is not an object: ['tokens']"


def test_no_result_message_is_agent_failed() -> None:
    error = bad(agent_with(FakeQuery(object()))(AgentRequest("p", "s")))
    assert error.message == "the Claude Agent SDK ended without a result message"


def test_an_sdk_exception_is_agent_failed_with_its_message() -> None:
    error = bad(
        agent_with(FakeQuery(raises=PROCESS_ERROR("Command failed")))(AgentRequest("p", "s"))
    )
    assert error.error_type == "AgentFailed"
    assert error.message.startswith("Claude Agent SDK: Command failed")


def test_a_hang_past_the_timeout_is_a_timeout() -> None:
    error = bad(agent_with(FakeQuery(hang=True), timeout=0.05)(AgentRequest("p", "s")))
    assert (error.error_type, error.message) == (
        "Timeout",
        "Claude did not finish within its 0.05s timeout",
    )
    step_timeout = bad(
        agent_with(FakeQuery(hang=True), timeout=60)(AgentRequest("p", "s", timeout=0.05))
    )
    assert step_timeout.error_type == "Timeout"


def test_an_empty_result_text_is_an_empty_answer() -> None:
    assert ok(agent_with(FakeQuery(result(None)))(AgentRequest("p", "s"))).text == ""


def test_metadata_becomes_the_steps_agent_output() -> None:
    step = agent_step("write", prompt="go", agent=agent_with(FakeQuery(result("STATUS: done"))))
    final = run_workflow(Workflow("w", (step,)))
    assert isinstance(final, IOSuccess)
    ctx: WorkflowContext = unsafe_perform_io(final.unwrap())
    assert dict(ctx.inputs["write_agent"]) == {
        "cost_usd": 0.0123,
        "turns": 3,
        "duration_ms": 1200,
        "session_id": "sess-1",
    }


@pytest.mark.live  # the real SDK loader runs (and finds no SDK to reach the service with)
def test_without_the_extra_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)
    message = load_sdk()
    assert isinstance(message, str)
    assert message.startswith(f"ClaudeAgent needs the Claude Agent SDK: {INSTALL_HINT} (")
    error = bad(ClaudeAgent()(AgentRequest("p", "research")))
    assert (error.step_name, error.error_type) == ("research", "AgentFailed")
    assert INSTALL_HINT in error.message


def test_load_sdk_finds_the_sdks_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    if real_sdk is None:
        fake = type(sys)("claude_agent_sdk")
        fake.__dict__.update(
            query=FakeQuery(),
            ClaudeAgentOptions=StandInOptions,
            ResultMessage=StandInResult,
            ClaudeSDKError=StandInError,
        )
        monkeypatch.setitem(sys.modules, "claude_agent_sdk", fake)
    api = load_sdk()
    assert isinstance(api, SdkApi)
    assert (api.options, api.result_message, api.sdk_error) == (OPTIONS, RESULT, SDK_ERROR)


def test_importing_adws_does_not_import_the_sdk() -> None:
    code = "import sys, adws, adws.agents, adws.cli; print('claude_agent_sdk' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False\n"


def test_repr_shows_the_options_that_are_set() -> None:
    assert repr(ClaudeAgent(model="opus", max_turns=2)) == "ClaudeAgent(model='opus', max_turns=2)"


@pytest.mark.live
@pytest.mark.skipif(
    not os.environ.get("ANTHROPIC_API_KEY") or shutil.which("claude") is None or real_sdk is None,
    reason="needs ANTHROPIC_API_KEY, the claude CLI and the adws[claude] extra",
)
def test_a_hello_sized_step_against_the_real_sdk() -> None:
    step = agent_step(
        "greet",
        prompt="Reply with a one-word greeting as GREETING.",
        agent=ClaudeAgent(max_turns=1, timeout=120),
        contract=OutputContract(("GREETING",)),
    )
    final = run_workflow(Workflow("live", (step,)))
    assert isinstance(final, IOSuccess)
    ctx: WorkflowContext = unsafe_perform_io(final.unwrap())
    assert ctx.inputs["greeting"]
    assert ctx.inputs["greet_agent"]["turns"] >= 1
