"""Export a run as OpenTelemetry spans: run → step → attempt → agent call (`adws[otel]`).

`SpanObserver` is a run observer: each event opens or closes a span, so a
run becomes one trace. Steps are children of the run, attempts of their
step, parallel branches of their step (with their own attempts), and
every agent call a child of the attempt that made it, named and
described by the OpenTelemetry GenAI semantic conventions:
`invoke_agent {agent step}`, span kind CLIENT, with
`gen_ai.operation.name`, `gen_ai.agent.name`, `gen_ai.provider.name`
(from the model's name: `anthropic` for Claude models, `openai` for GPT
ones, else `_OTHER`), `gen_ai.request.model` and `gen_ai.response.model`,
`gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens`, and
`gen_ai.conversation.id` (the session id). What a call cost has no
convention: it is `adws.cost_usd`. A failure is the span's status
(`ERROR`, with the error's first line) and its `error.type`; a cancelled
branch is not an error (`adws.cancelled`). Prompts and answers are not
exported: they stay in the journal. With transcripts off (`adws run
--no-transcripts`, `ADWS_TRANSCRIPTS=0`: `transcripts=False`) no output
leaves either: a status says only the error's kind and step
(`AgentFailed at step ask`), never its message, which may quote what an
agent or a command printed, and a failed verification round's event
carries no `error.message`.

`Tracing.over_otlp()` sends the spans over OTLP/HTTP to where the
standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) points,
`http://localhost:4318` by default; `adws run --otel` uses it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final, Self, final

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from adws.engine.events import (
    AgentExchanged,
    AttemptFailed,
    BranchAttemptFailed,
    BranchFinished,
    BranchStarted,
    RoundFailed,
    RunEvent,
    RunFinished,
    RunStarted,
    StepSkipped,
    StepStarted,
    StepSucceeded,
)

if TYPE_CHECKING:
    from types import TracebackType

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

    from adws.engine.errors import PipelineError
    from adws.engine.usage import Usage

__all__ = ["SpanObserver", "Tracing", "described", "provider_of"]

_PROVIDERS: Final = (("claude", "anthropic"), ("gpt", "openai"), ("o1", "openai"))


def provider_of(model: str | None) -> str:
    """Name the GenAI provider a model belongs to, as the conventions spell it.

    >>> provider_of("claude-sonnet-4"), provider_of("gpt-5"), provider_of(None)
    ('anthropic', 'openai', '_OTHER')
    """
    lowered = (model or "").lower()
    return next((name for prefix, name in _PROVIDERS if lowered.startswith(prefix)), "_OTHER")


def _now() -> int:
    return time.time_ns()


def described(error: PipelineError, *, transcripts: bool = True) -> str:
    r"""Say what failed, for a span's status: the kind and its first line, or kind and step.

    Without transcripts the message is left out: it may quote what an agent
    or a command printed.

    >>> from adws.engine.errors import PipelineError
    >>> error = PipelineError("ask", "AgentFailed", "exited with 1: SECRET\nmore")
    >>> described(error), described(error, transcripts=False)
    ('AgentFailed: exited with 1: SECRET', 'AgentFailed at step ask')
    """
    if not transcripts:
        return (
            f"{error.error_type} at step {error.step_name}" if error.step_name else error.error_type
        )
    first = error.message.strip().splitlines()[:1]
    return f"{error.error_type}: {first[0] if first else ''}"


def _failed(span: Span, error: PipelineError, *, transcripts: bool) -> None:
    span.set_attribute("error.type", str(error.error_type))
    span.set_status(Status(StatusCode.ERROR, described(error, transcripts=transcripts)))


def _usage(span: Span, usage: Usage | None, *, gen_ai: bool) -> None:
    """Put what calls cost on a span: GenAI token counts on an agent call, adws.* elsewhere."""
    if usage is None:
        return
    tokens = "gen_ai.usage" if gen_ai else "adws"
    values: dict[str, str | int | float | None] = {
        "adws.cost_usd": usage.cost_usd,
        f"{tokens}.input_tokens": usage.input_tokens,
        f"{tokens}.output_tokens": usage.output_tokens,
        "adws.turns": usage.turns,
    }
    for key, value in values.items():
        if value is not None:
            span.set_attribute(key, value)


@final
class SpanObserver:
    """Turn one run's events into spans on `tracer` (see the module docstring).

    `transcripts=False` keeps every error's message out of the spans.
    """

    def __init__(self, tracer: Tracer, *, transcripts: bool = True) -> None:
        """Start with no span open."""
        self.tracer = tracer
        self.transcripts = transcripts
        self.run: Span | None = None
        self.steps: dict[str, Span] = {}
        self.attempts: dict[str, Span] = {}

    def _start(self, name: str, parent: Span | None, **attributes: str | int) -> Span:
        context = None if parent is None else trace.set_span_in_context(parent)
        return self.tracer.start_span(name, context, attributes=attributes, start_time=_now())

    def _attempt(self, path: str, number: int) -> None:
        self.attempts[path] = self._start(
            f"attempt {number}", self.steps.get(path), **{"adws.attempt": number}
        )

    def _step(self, path: str, name: str, **attributes: str | int) -> Span:
        span = self.steps.get(path)
        if span is None:
            parent = self.steps.get(path.partition("[")[0]) if "[" in path else self.run
            span = self.steps[path] = self._start(name, parent, **attributes)
        return span

    def _end(self, path: str, error: PipelineError | None = None) -> None:
        """End a step's (or branch's) open attempt, then the step itself."""
        for spans in (self.attempts, self.steps):
            span = spans.pop(path, None)
            if span is not None:
                if error is not None:
                    _failed(span, error, transcripts=self.transcripts)
                span.end(end_time=_now())

    def __call__(self, event: RunEvent, /) -> None:  # noqa: C901, PLR0912 - one case per event
        """Open or close the spans one event says started or ended."""
        match event:
            case RunStarted():
                self.run = self._start(
                    f"workflow {event.workflow}",
                    None,
                    **{"adws.run_id": event.run_id, "adws.workflow": event.workflow},
                )
            case StepStarted():
                self._step(event.step, f"step {event.step}", **{"adws.step": event.step})
                self._attempt(event.step, 1)
            case BranchStarted():
                self._step(event.branch, f"branch {event.branch}", **{"adws.step": event.branch})
                self._attempt(event.branch, 1)
            case AttemptFailed() | BranchAttemptFailed():
                path = event.branch if isinstance(event, BranchAttemptFailed) else event.step
                span = self.attempts.pop(path, None)
                if span is not None:
                    _failed(span, event.error, transcripts=self.transcripts)
                    _usage(span, event.usage, gen_ai=False)
                    span.end(end_time=_now())
                if event.will_retry:
                    self._attempt(path, event.attempt + 1)
                elif isinstance(event, AttemptFailed):  # a branch ends with its BranchFinished
                    self._step(path, f"step {path}", **{"adws.step": path})
                    self._end(path, event.error)
            case StepSucceeded():
                _usage(self._step(event.step, f"step {event.step}"), event.usage, gen_ai=False)
                self._end(event.step)
            case BranchFinished():
                span = self._step(event.branch, f"branch {event.branch}")
                span.set_attribute("adws.branch_status", event.status)
                if event.status == "cancelled":
                    span.set_attribute("adws.cancelled", value=True)
                self._end(event.branch, event.error)
            case StepSkipped():
                span = self._step(event.step, f"step {event.step}", **{"adws.step": event.step})
                span.set_attribute("adws.skipped", event.reason)
                self._end(event.step)
            case RoundFailed():
                attempt = self.attempts.get(event.path)
                if attempt is not None:
                    first = event.error.message.strip().splitlines()[:1]
                    said: dict[str, str | int] = {
                        "adws.round": event.round,
                        "error.type": str(event.error.error_type),
                    }
                    if self.transcripts:
                        said["error.message"] = first[0] if first else ""
                    attempt.add_event("verification round failed", said)
            case AgentExchanged():
                self._exchange(event)
            case RunFinished():
                self._finish(event)
            case _:
                pass

    def _exchange(self, event: AgentExchanged) -> None:
        usage = event.usage
        model = None if usage is None else usage.model
        attributes: dict[str, str | int] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": event.asked_by,
            "gen_ai.provider.name": provider_of(model),
            "adws.step": event.path,
            "adws.attempt": event.attempt,
        }
        if model is not None:
            attributes["gen_ai.request.model"] = attributes["gen_ai.response.model"] = model
        if event.session_id is not None:
            attributes["gen_ai.conversation.id"] = event.session_id
        if event.exit_code is not None:
            attributes["adws.exit_code"] = event.exit_code
        parent = self.attempts.get(event.path)
        context = None if parent is None else trace.set_span_in_context(parent)
        end = _now()
        span = self.tracer.start_span(
            f"invoke_agent {event.asked_by}",
            context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=end - int(event.seconds * 1e9),
        )
        _usage(span, usage, gen_ai=True)
        if event.error is not None:
            _failed(span, event.error, transcripts=self.transcripts)
        span.end(end_time=end)

    def _finish(self, event: RunFinished) -> None:
        """End what is still open (a Ctrl-C leaves branches open), then the run."""
        for path in reversed(list({**self.steps, **self.attempts})):
            self._end(path)
        if self.run is None:
            return
        self.run.set_attribute("adws.status", event.status)
        _usage(self.run, event.usage, gen_ai=False)
        if event.error is not None:
            _failed(self.run, event.error, transcripts=self.transcripts)
        self.run.end(end_time=_now())
        self.run = None


@final
class Tracing:
    """A tracer provider for one run and the observer that feeds it; exits by flushing."""

    def __init__(self, provider: TracerProvider, *, transcripts: bool = True) -> None:
        """Trace into `provider` (its span processors decide where spans go).

        `transcripts=False` keeps every error's message out of the spans.
        """
        self.provider = provider
        self.observe = SpanObserver(provider.get_tracer("adws"), transcripts=transcripts)

    @classmethod
    def over_otlp(cls, *, transcripts: bool = True) -> Tracing:
        """Export over OTLP/HTTP to the endpoint the standard environment variables name."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415 - only for export
            OTLPSpanExporter,
        )
        from opentelemetry.sdk.resources import Resource  # noqa: PLC0415 - as above
        from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415 - as above
        from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415 - as above

        provider = TracerProvider(resource=Resource.create({"service.name": "adws"}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        return cls(provider, transcripts=transcripts)

    def __enter__(self) -> Self:
        """Trace the run."""
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Send what is left and stop the exporter's thread."""
        self.provider.shutdown()
