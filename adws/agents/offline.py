"""The offline switch: while it is on, no agent call starts a process or reaches a service.

The pytest plugin (`adws.testing.plugin`) turns it on for every test not
marked `live` or `agent_process`. `CommandAgent` and `ClaudeAgent` ask it
before doing anything: refused, the call is an `AgentFailed` that runs
nothing, and the refusal is kept so the plugin fails the test even when the
workflow under test expected a failure. `adws batch` hands the switch to its
workers with each run, and notes their refusals here.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, final

from adws.engine.errors import ErrorType, PipelineError

if TYPE_CHECKING:
    from adws.agents.base import AgentRequest

__all__ = ["OFFLINE", "OfflineSwitch"]


@final
class OfflineSwitch:
    """Refuse agent calls that would leave the process, while `enabled`."""

    def __init__(self) -> None:
        """Start off, with nothing refused."""
        self.enabled = False
        self._refused: list[str] = []
        self._lock = threading.Lock()

    @property
    def refused(self) -> tuple[str, ...]:
        """Return every refusal since the last `reset`."""
        with self._lock:
            return tuple(self._refused)

    def reset(self, *, enabled: bool) -> None:
        """Switch on or off and forget earlier refusals."""
        with self._lock:
            self.enabled = enabled
            self._refused.clear()

    def note(self, message: str) -> None:
        """Keep a refusal made elsewhere (a batch worker's), so the plugin fails the test."""
        with self._lock:
            self._refused.append(message)

    def refuse(self, request: AgentRequest, backend: str) -> PipelineError | None:
        """Return the error that stops `backend` from running, or None when offline is off."""
        if not self.enabled:
            return None
        message = (
            f"offline: {backend} was not started for step {request.step_name!r}; tests run"
            " offline under the adws pytest plugin. Mark the test @pytest.mark.agent_process"
            " (a local program) or @pytest.mark.live (a hosted model), or set"
            " adws_offline = false in the pytest configuration"
        )
        self.note(message)
        context = {"offline": True, "permanent": True}
        return PipelineError(request.step_name, ErrorType.AGENT_FAILED, message, context)


OFFLINE = OfflineSwitch()
"""The process's switch: off unless the pytest plugin (or you) turns it on."""
