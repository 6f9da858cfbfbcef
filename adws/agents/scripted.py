"""`ScriptedAgent`: canned answers, in order or routed by step, for tests and offline demos."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeAlias, final

from returns.io import IOFailure, IOResult, IOSuccess

from adws.agents.base import AgentRequest, AgentResponse
from adws.engine.errors import ErrorType, PipelineError

__all__ = ["ROUTED", "ScriptedAgent", "ScriptedResponse"]

ScriptedResponse: TypeAlias = str | Callable[[AgentRequest], str | AgentResponse]


@final
class _Routed:
    """The `by_step` agents a test made, kept while the pytest plugin watches (only then)."""

    def __init__(self) -> None:
        self.watching = False
        self.agents: list[ScriptedAgent] = []

    def watch(self, *, on: bool) -> None:
        """Start or stop keeping them; either way, forget the ones kept so far."""
        self.watching = on
        self.agents.clear()


ROUTED: Final = _Routed()
"""The pytest plugin fails a test whose `ScriptedAgent.by_step` agents left answers unused."""


@final
class ScriptedAgent:
    """Replay answers in order and record every request it was sent.

    Each response is a string or a function of the request (returning a
    string or an `AgentResponse`). Asking for more answers than there are
    is `AgentFailed`, naming the step and the attempt. `by_step` routes
    answers by step (or branch) instead of one queue for all.

    >>> agent = ScriptedAgent(["STATUS: done"])
    >>> agent(AgentRequest("hi", "s")).unwrap().map(lambda response: response.text)
    <IO: STATUS: done>
    >>> print(agent(AgentRequest("again", "s")).failure())
    <IO: s: AgentFailed: ScriptedAgent has no answer left for step 's' at attempt 1 (it had 1)>
    """

    def __init__(self, responses: Sequence[ScriptedResponse]) -> None:
        """Keep the answers to replay."""
        self._queues: dict[str, deque[ScriptedResponse]] = {"": deque(responses)}
        self._given: dict[str, int] = {"": len(responses)}
        self._requests: list[AgentRequest] = []
        self._lock = threading.Lock()

    @classmethod
    def by_step(cls, answers: Mapping[str, Sequence[ScriptedResponse]]) -> ScriptedAgent:
        """Route answers by step: `{"research": [first, second], "verify_claims[1]": [...]}`.

        A request takes the next answer of its branch's path when there is a
        queue for it (`verify_claims[1]`), else of its step's name (`verify`,
        shared by every branch, in the order they ask). A call with no
        answer left is an `AgentFailed` naming the step and the attempt;
        under the pytest plugin, answers left unused fail the test.

        >>> agent = ScriptedAgent.by_step({"a": ["STATUS: done"], "b": ["STATUS: done"]})
        >>> agent(AgentRequest("p", "b")).map(lambda response: response.text)
        <IOResult: <Success: STATUS: done>>
        >>> agent.unused
        {'a': 1}
        >>> print(agent(AgentRequest("p", "c")).failure())
        <IO: c: AgentFailed: ScriptedAgent has no answers for step 'c'; it has answers for: a, b>
        >>> _ = agent(AgentRequest("p", "a"))  # under the plugin, an unused answer fails the test
        """
        agent = cls(())
        agent._queues = {name: deque(queue) for name, queue in answers.items()}
        agent._given = {name: len(queue) for name, queue in answers.items()}
        if ROUTED.watching:
            ROUTED.agents.append(agent)
        return agent

    @property
    def requests(self) -> tuple[AgentRequest, ...]:
        """Return every request received so far, in order."""
        with self._lock:
            return tuple(self._requests)

    @property
    def prompts(self) -> tuple[str, ...]:
        """Return the prompt of every request received so far."""
        return tuple(request.prompt for request in self.requests)

    @property
    def unused(self) -> dict[str, int]:
        """Return how many answers each route still holds (only the ones with some)."""
        with self._lock:
            return {name: len(queue) for name, queue in self._queues.items() if queue}

    def _route(self, request: AgentRequest) -> str | None:
        if "" in self._queues:
            return ""  # one queue, in order, for every step
        for name in (request.branch, request.step_name):
            if name in self._queues:
                return name
        return None

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Answer with the next scripted response for this request's route."""
        with self._lock:
            self._requests.append(request)
            route = self._route(request)
            queue = self._queues.get(route) if route is not None else None
            response = queue.popleft() if queue else None
        if response is None:
            return IOFailure(self._exhausted(request, route))
        answer = response if isinstance(response, str) else response(request)
        if isinstance(answer, AgentResponse):
            return IOSuccess(answer)
        return IOSuccess(AgentResponse(answer))

    def _exhausted(self, request: AgentRequest, route: str | None) -> PipelineError:
        where = f"step {request.step_name!r}" + (f" ({request.branch})" if request.branch else "")
        if route is None:
            routes = ", ".join(sorted(self._queues)) or "none"
            message = f"ScriptedAgent has no answers for {where}; it has answers for: {routes}"
        else:
            message = (
                f"ScriptedAgent has no answer left for {where} at attempt {request.attempt}"
                f" (it had {self._given[route]})"
            )
        return PipelineError(request.step_name, ErrorType.AGENT_FAILED, message)
