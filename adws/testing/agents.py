"""`FunctionAgent` and `SchemaAgent`: answers computed from the request, for tests."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, final

from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_callable
from adws.agents.base import AgentRequest, AgentResponse
from adws.engine.errors import ErrorType, PipelineError
from adws.testing._examples import satisfying

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["FunctionAgent", "SchemaAgent"]


class _Recorded:
    """Keep every request an agent was sent, in order (branches call from threads)."""

    def __init__(self) -> None:
        self._requests: list[AgentRequest] = []
        self._lock = threading.Lock()

    @property
    def requests(self) -> tuple[AgentRequest, ...]:
        """Return every request received so far, in order."""
        with self._lock:
            return tuple(self._requests)

    def _keep(self, request: AgentRequest) -> None:
        with self._lock:
            self._requests.append(request)


@final
class FunctionAgent(_Recorded):
    r"""Answer each request with `fn(request)`: a string, or an `AgentResponse` with usage.

    For answers that depend on the prompt or the feedback so far
    (`request.attempt`, `request.prompt`). Every request is recorded; an
    exception `fn` raises is the step's `StepException`, as any step's would be.

    >>> from returns.unsafe import unsafe_perform_io
    >>> agent = FunctionAgent(lambda request: f"STATUS: done\nECHO: {request.attempt}")
    >>> unsafe_perform_io(agent(AgentRequest("p", "s", attempt=2)).unwrap()).text
    'STATUS: done\nECHO: 2'
    """

    def __init__(self, fn: Callable[[AgentRequest], str | AgentResponse]) -> None:
        """Keep the function."""
        require_callable("FunctionAgent", "fn", fn)
        super().__init__()
        self.fn = fn

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Answer with what the function returns."""
        self._keep(request)
        answer = self.fn(request)
        return IOSuccess(answer if isinstance(answer, AgentResponse) else AgentResponse(answer))


@final
class SchemaAgent(_Recorded):
    """Answer every agent step with a valid report built from its own contract.

    `STATUS: done`, each plain key as `example`, each `*_JSON` key as a
    value its schema accepts (`{}` without a schema): the first choice of a
    `Literal` or an enum, and for a field whose validator refuses the
    example (an attrs validator, a pydantic `field_validator`), the first
    of a few likely values it accepts. `values` overrides a key's answer
    (the key as the contract spells it; a value that is not a string is
    written as JSON). For testing a workflow's wiring without writing
    answers: every agent step succeeds on its first attempt, or, when no
    value it tried satisfies a schema, fails `AgentFailed` naming the
    fields, so the test can give them in `values`.

    >>> from returns.unsafe import unsafe_perform_io
    >>> from adws.contract.validator import OutputContract
    >>> request = AgentRequest("p", "s", contract=OutputContract(("SUMMARY", "PLAN_JSON")))
    >>> print(unsafe_perform_io(SchemaAgent()(request).unwrap()).text)
    STATUS: done
    SUMMARY: example
    PLAN_JSON: {}
    """

    def __init__(self, values: Mapping[str, object] | None = None) -> None:
        """Keep the overrides."""
        super().__init__()
        self.values = dict(values or {})

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Answer from the request's contract."""
        self._keep(request)
        contract = request.contract
        if contract is None:
            message = (
                f"SchemaAgent needs the contract of step {request.step_name!r}; it answers"
                " requests agent_step makes, which carry it"
            )
            return IOFailure(PipelineError(request.step_name, ErrorType.AGENT_FAILED, message))
        lines = ["STATUS: done"]
        for key in contract.keys:
            value: object = "example"
            if key in self.values:
                value = self.values[key]
            elif key in contract.schemas:
                value, unsatisfied = satisfying(contract.schemas[key])
                if unsatisfied:
                    return IOFailure(_unsatisfied(request.step_name, key, unsatisfied))
            elif key.endswith("_JSON"):
                value = {}
            lines.append(f"{key}: {value if isinstance(value, str) else json.dumps(value)}")
        return IOSuccess(AgentResponse("\n".join(lines)))


def _unsatisfied(step_name: str, key: str, paths: tuple[str, ...]) -> PipelineError:
    message = (
        f"SchemaAgent could not build a {key} that its schema accepts: no value it tried"
        f" satisfies {', '.join(paths)}; give one with SchemaAgent(values={{{key!r}: ...}})"
    )
    return PipelineError(
        step_name, ErrorType.AGENT_FAILED, message, {"unsatisfied": list(paths), "permanent": True}
    )
