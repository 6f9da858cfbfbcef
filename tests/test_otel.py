"""OpenTelemetry: a run as spans run → step → attempt → agent call, with GenAI attributes."""

from __future__ import annotations

import http.server
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from returns.io import IOFailure, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
    run_workflow,
    with_verification,
)
from adws.agents import AgentResponse, ScriptedAgent
from adws.cli import main
from adws.engine.events import (
    AttemptFailed,
    BranchFinished,
    ObserverFailed,
    RoundFailed,
    RunFinished,
    RunStarted,
    StepStarted,
    StepSucceeded,
)
from adws.engine.usage import Usage
from adws.otel import SpanObserver, Tracing

if TYPE_CHECKING:
    from collections.abc import Iterator

DONE = "STATUS: done\nNOTE: fine\n"
CONTRACT = OutputContract(("NOTE",))


@pytest.fixture
def spans() -> Iterator[tuple[SpanObserver, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield SpanObserver(provider.get_tracer("test")), exporter
    provider.shutdown()


def attributes_of(span: ReadableSpan | Event) -> dict[str, Any]:
    return dict(span.attributes or {})


def by_name(finished: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in finished}


def parent_of(span: ReadableSpan, finished: tuple[ReadableSpan, ...]) -> str | None:
    if span.parent is None:
        return None
    return next(s.name for s in finished if s.context.span_id == span.parent.span_id)


def test_a_run_is_a_trace_of_steps_attempts_and_agent_calls(
    spans: tuple[SpanObserver, InMemorySpanExporter],
) -> None:
    observer, exporter = spans
    answer = AgentResponse(DONE, {"session_id": "s-9"}, Usage(0.25, 100, 20, 2, "claude-sonnet-4"))
    agent = ScriptedAgent(["no report", lambda _r: answer])
    ask = agent_step("ask", prompt="Go.", agent=agent, contract=CONTRACT)
    broken = Step("ship", lambda _ctx: IOFailure(PipelineError("", "ShellFailed", "no\nmore")))
    skipped = Step("later", IOSuccess)
    run_workflow(Workflow("w", (ask, broken, skipped)), observers=[observer], run_id="r1")
    finished = exporter.get_finished_spans()
    named = by_name(finished)
    assert {span.name for span in finished} == {
        "workflow w",
        "step ask",
        "attempt 1",
        "attempt 2",
        "invoke_agent ask",
        "step ship",
        "step later",
    }
    run = named["workflow w"]
    assert (run.parent, attributes_of(run)["adws.run_id"], attributes_of(run)["adws.status"]) == (
        None,
        "r1",
        "failed",
    )
    assert run.status.status_code == StatusCode.ERROR
    assert run.status.description == "ShellFailed: no"
    assert attributes_of(run)["adws.cost_usd"] == 0.25
    calls = [span for span in finished if span.name == "invoke_agent ask"]
    assert [parent_of(call, finished) for call in calls] == ["attempt 1", "attempt 2"]
    first, second = calls
    assert first.status.status_code == StatusCode.ERROR
    assert attributes_of(first)["error.type"] == "ContractViolation"
    assert dict(second.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "ask",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4",
        "gen_ai.response.model": "claude-sonnet-4",
        "gen_ai.conversation.id": "s-9",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
        "adws.cost_usd": 0.25,
        "adws.turns": 2,
        "adws.step": "ask",
        "adws.attempt": 2,
    }
    assert second.kind.name == "CLIENT"
    assert parent_of(named["step ask"], finished) == "workflow w"
    assert named["step ship"].status.status_code == StatusCode.ERROR
    assert attributes_of(named["step later"])["adws.skipped"] == "halted"


def test_branches_rounds_and_cancellations_have_their_spans(
    spans: tuple[SpanObserver, InMemorySpanExporter],
) -> None:
    observer, exporter = spans
    item = agent_step(
        "check",
        prompt="Check {item}.",
        agent=ScriptedAgent.by_step(
            {"checks[0]": [DONE], "checks[1]": ["STATUS: blocked\nREASON: x\n"]}
        ),
        contract=CONTRACT,
        retry=RetryPolicy(1),
    )
    main_step = agent_step(
        "draft", prompt="Draft.", agent=ScriptedAgent([DONE, DONE]), contract=CONTRACT
    )
    review = agent_step(
        "review",
        prompt="Review.",
        agent=ScriptedAgent(["STATUS: retry\nREASON: short\n", "STATUS: done\n"]),
        retry=RetryPolicy(1),
    )
    flow = Workflow(
        "w",
        (
            fan_out("checks", item, over="items", min_successes=1, max_concurrency=1),
            with_verification(main_step, review),
        ),
    )
    run_workflow(flow, WorkflowContext(inputs={"items": ["a", "b"]}), observers=[observer])
    finished = exporter.get_finished_spans()
    named = by_name(finished)
    assert parent_of(named["branch checks[0]"], finished) == "step checks"
    assert attributes_of(named["branch checks[0]"])["adws.branch_status"] == "succeeded"
    assert named["branch checks[1]"].status.status_code == StatusCode.ERROR
    verified = [s for s in finished if parent_of(s, finished) == "step draft_verified"]
    [attempt] = verified
    [event] = attempt.events
    assert (event.name, attributes_of(event)["adws.round"]) == ("verification round failed", 1)
    assert attributes_of(event)["error.type"] == "AgentRetryRequested"
    assert attributes_of(named["invoke_agent review"])["gen_ai.provider.name"] == "_OTHER"


def test_spans_left_open_by_an_interruption_end_with_the_run(
    spans: tuple[SpanObserver, InMemorySpanExporter],
) -> None:
    observer, exporter = spans
    ctx = WorkflowContext()
    error = PipelineError("s", "Interrupted", "interrupted by Ctrl-C")
    for event in (
        BranchFinished("r", "p", 0, 1, "p[0]", "cancelled", 0, 0.0, None, {}, 0, 0, 1),
        AttemptFailed("r", "q", 1, 2, 1, 1, error, False, 0.0, 0.0),
        RoundFailed("r", "v", 0, 1, "v", 1, 1, 2, error, True),  # no attempt open: no mark
        StepSucceeded("r", "v", 0, 1, 1, 0.0, ctx, {}, None),
        RunFinished("r", "w", "interrupted", error, ctx, 0.0),  # no run span: nothing to end
    ):
        observer(event)
    named = by_name(exporter.get_finished_spans())
    assert attributes_of(named["branch p[0]"])["adws.cancelled"] is True
    assert named["step q"].status.status_code == StatusCode.ERROR
    observer(ObserverFailed("r", "journal", "disk full"))  # nothing to draw


class Collector(http.server.BaseHTTPRequestHandler):
    """A local OTLP/HTTP endpoint that keeps what it is sent."""

    received: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        Collector.received.append(self.rfile.read(length))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    Collector.received = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


FLOW = """
from adws import OutputContract, Workflow, agent_step
from adws.testing import FunctionAgent

agent = FunctionAgent(lambda request: "STATUS: done\\nNOTE: fine\\n")
traced = Workflow("traced", (agent_step("ask", prompt="Go.", agent=agent,
                                        contract=OutputContract(("NOTE",))),))
"""


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_the_cli_exports_a_run_over_otlp(
    in_tmp: Path,
    collector: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "traced.py").write_text(FLOW)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{collector}/v1/traces")
    flags = ["--otel"] if how == "flag" else []
    if how == "environment":
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
    assert main(["run", "traced", "-q", *flags]) == 0
    names = []
    for body in Collector.received:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            assert service["service.name"] == "adws"
            names += [span.name for scope in resource.scope_spans for span in scope.spans]
    assert sorted(names) == ["attempt 1", "invoke_agent ask", "step ask", "workflow traced"]
    capsys.readouterr()


def test_otel_without_the_sdk_says_how_to_install_it(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "traced.py").write_text(FLOW)
    monkeypatch.setitem(sys.modules, "adws.otel", None)  # as if the extra were not installed
    assert main(["run", "traced", "--otel"]) == 2
    assert "--otel needs the OpenTelemetry SDK: pip install 'adws[otel]'" in capsys.readouterr().err


def test_tracing_flushes_when_the_run_ends() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with Tracing(provider) as tracing:
        run_workflow(Workflow("w", ()), observers=[tracing.observe])
    assert [span.name for span in exporter.get_finished_spans()] == ["workflow w"]


def test_a_call_says_how_its_process_exited_and_only_what_it_reported(
    spans: tuple[SpanObserver, InMemorySpanExporter],
) -> None:
    from adws.engine.events import AgentExchanged, StepStarted  # noqa: PLC0415 - only here

    observer, exporter = spans
    ctx = WorkflowContext()
    for event in (
        StepStarted("r", "a", 0, 1, 1, False),
        AgentExchanged("r", "a", 1, "a", "p", "x", 0, "", None, 0.1, Usage(0.2), None, 10),
        RunFinished("r", "w", "succeeded", None, ctx, 0.2),  # the step's spans end with the run
    ):
        observer(event)
    named = by_name(exporter.get_finished_spans())
    attributes = dict(named["invoke_agent a"].attributes or {})
    assert (attributes["adws.exit_code"], attributes["adws.cost_usd"]) == (0, 0.2)
    assert "gen_ai.usage.input_tokens" not in attributes
    assert {"step a", "attempt 1"} <= set(named)


LEAKY = """
from adws import OutputContract, RetryPolicy, Workflow, agent_step
from adws.agents import CommandAgent

agent = CommandAgent(["sh", "agent.sh"])
leaky = Workflow("leaky", (agent_step("ask", prompt="Go.", agent=agent,
                                      contract=OutputContract(("NOTE",)),
                                      retry=RetryPolicy(max_attempts=1)),))
"""
# The key is put together as it is printed: the command line never holds it.
AGENT = 'echo "the key is sk-$(printf live)-4242" >&2\nexit 3\n'


def exported(bodies: list[bytes]) -> list[Any]:
    """Every span the collector was sent."""
    found = []
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            found += [span for scope in resource.scope_spans for span in scope.spans]
    return found


@pytest.mark.agent_process
@pytest.mark.parametrize("how", ["flag", "environment"])
def test_no_transcripts_keeps_what_the_agent_printed_out_of_the_exported_spans(
    in_tmp: Path,
    collector: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "leaky.py").write_text(LEAKY)
    (in_tmp / "agent.sh").write_text(AGENT)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{collector}/v1/traces")
    if how == "environment":
        monkeypatch.setenv("ADWS_TRANSCRIPTS", "0")
    flags = ["--no-transcripts"] if how == "flag" else []
    assert main(["run", "leaky", "-q", "--otel", *flags]) == 1
    assert "sk-live-4242" in capsys.readouterr().err  # the terminal is the person's own
    spans = exported(Collector.received)
    assert "sk-live-4242" not in repr(spans)
    statuses = {span.name: span.status.message for span in spans}
    assert statuses == {
        "workflow leaky": "AgentFailed at step ask",
        "step ask": "AgentFailed at step ask",
        "attempt 1": "AgentFailed at step ask",
        "invoke_agent ask": "AgentFailed at step ask",
    }


def test_without_transcripts_a_failed_round_keeps_only_its_kind() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observer = SpanObserver(provider.get_tracer("t"), transcripts=False)
    error = PipelineError("v", "ShellFailed", "`make` exited with 2: sk-live-4242")
    stopped = PipelineError("", "Interrupted", "interrupted by Ctrl-C")
    for each in (
        RunStarted("r", "w", ("v",), WorkflowContext()),
        StepStarted("r", "v", 0, 1, 1, False),
        RoundFailed("r", "v", 0, 1, "v", 1, 1, 2, error, True),
        RunFinished("r", "w", "interrupted", stopped, WorkflowContext(), 0.0),
    ):
        observer(each)
    named = by_name(exporter.get_finished_spans())
    [round_failed] = named["attempt 1"].events
    assert attributes_of(round_failed) == {"adws.round": 1, "error.type": "ShellFailed"}
    assert named["workflow w"].status.description == "Interrupted"  # no step to name
    provider.shutdown()
