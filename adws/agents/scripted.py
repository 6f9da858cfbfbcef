"""`ScriptedAgent`: canned answers for tests and offline demos."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias, final

from returns.io import IOFailure, IOResult, IOSuccess

from adws.agents.base import AgentRequest, AgentResponse
from adws.errors import ErrorType, PipelineError

__all__ = ["ScriptedAgent", "ScriptedResponse"]

ScriptedResponse: TypeAlias = str | Callable[[AgentRequest], str | AgentResponse]


@final
class ScriptedAgent:
    """Replay answers in order and record every request it was sent.

    Each response is a string or a function of the request (returning a
    string or an `AgentResponse`). Asking for more answers than there are
    is `AgentFailed`, naming the step.

    >>> agent = ScriptedAgent(["STATUS: done"])
    >>> agent(AgentRequest("hi", "s")).unwrap()
    <IO: AgentResponse(text='STATUS: done', metadata=FrozenMap({}), usage=None)>
    >>> print(agent(AgentRequest("again", "s")).failure())
    <IO: s: AgentFailed: ScriptedAgent has no answer left for step 's' (it had 1)>
    """

    def __init__(self, responses: Sequence[ScriptedResponse]) -> None:
        """Keep the answers to replay."""
        self._responses = tuple(responses)
        self._requests: list[AgentRequest] = []

    @property
    def requests(self) -> tuple[AgentRequest, ...]:
        """Return every request received so far, in order."""
        return tuple(self._requests)

    @property
    def prompts(self) -> tuple[str, ...]:
        """Return the prompt of every request received so far."""
        return tuple(request.prompt for request in self._requests)

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Answer with the next scripted response."""
        index = len(self._requests)
        self._requests.append(request)
        if index >= len(self._responses):
            return IOFailure(
                PipelineError(
                    request.step_name,
                    ErrorType.AGENT_FAILED,
                    f"ScriptedAgent has no answer left for step {request.step_name!r} "
                    f"(it had {len(self._responses)})",
                )
            )
        response = self._responses[index]
        answer = response if isinstance(response, str) else response(request)
        if isinstance(answer, AgentResponse):
            return IOSuccess(answer)
        return IOSuccess(AgentResponse(answer))
