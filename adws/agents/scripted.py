"""`ScriptedAgent`: canned answers, in order or routed by step, for tests and offline demos."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeAlias, final

import attrs
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

    `sessions=True` makes it continue sessions as the real CLIs do: a call
    that names no session starts a new one (`scripted-1`, `scripted-2`, ...),
    one that names a session continues it; each answer's metadata says its
    `session_id`, and the request's `on_session` hears it first. `forget`
    loses sessions, as a deleted home does: continuing one then fails the
    way claude does (`No conversation found with session ID: ...`), before
    any answer is used.

    >>> agent = ScriptedAgent(["STATUS: done"])
    >>> agent(AgentRequest("hi", "s")).unwrap().map(lambda response: response.text)
    <IO: STATUS: done>
    >>> print(agent(AgentRequest("again", "s")).failure())
    <IO: s: AgentFailed: ScriptedAgent has no answer left for step 's' at attempt 1 (it had 1)>
    """

    def __init__(self, responses: Sequence[ScriptedResponse], *, sessions: bool = False) -> None:
        """Keep the answers to replay (and, with `sessions`, continue sessions)."""
        self._queues: dict[str, deque[ScriptedResponse]] = {"": deque(responses)}
        self._given: dict[str, int] = {"": len(responses)}
        self._requests: list[AgentRequest] = []
        self._lock = threading.Lock()
        self._sessions = sessions
        self._numbers = itertools.count(1)
        self._forgotten: set[str] = set()

    @property
    def continues_sessions(self) -> bool:
        """Tell whether it continues the sessions requests name (`sessions=True`)."""
        return self._sessions

    def forget(self, *session_ids: str) -> None:
        """Lose these sessions: continuing one fails as claude does when it cannot find it."""
        with self._lock:
            self._forgotten.update(session_ids)

    @classmethod
    def by_step(
        cls, answers: Mapping[str, Sequence[ScriptedResponse]], *, sessions: bool = False
    ) -> ScriptedAgent:
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
        agent = cls((), sessions=sessions)
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
            session = self._session_for(request)
            if request.session is not None and session in self._forgotten:
                return IOFailure(_lost(request, session))
            route = self._route(request)
            queue = self._queues.get(route) if route is not None else None
            response = queue.popleft() if queue else None
        if response is None:
            return IOFailure(self._exhausted(request, route))
        if session is not None and request.on_session is not None:
            request.on_session(session)
        answer = response if isinstance(response, str) else response(request)
        if not isinstance(answer, AgentResponse):
            answer = AgentResponse(answer)
        if session is not None and "session_id" not in answer.metadata:
            answer = attrs.evolve(answer, metadata={**answer.metadata, "session_id": session})
        return IOSuccess(answer)

    def _session_for(self, request: AgentRequest) -> str | None:
        """Name the session a call runs in: the one it continues, or a new one."""
        if not self._sessions:
            return None
        return request.session or f"scripted-{next(self._numbers)}"

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


def _lost(request: AgentRequest, session: str) -> PipelineError:
    said = f"No conversation found with session ID: {session}"
    return PipelineError(
        request.step_name,
        ErrorType.AGENT_FAILED,
        f"ScriptedAgent exited with 1: {said}",
        {"returncode": 1, "stderr_tail": said + "\n"},
    )
