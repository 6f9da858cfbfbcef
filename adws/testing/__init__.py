"""The workflow author's kit: fakes, a recorder, run reports and a pytest plugin.

- `ScriptedAgent` (and `ScriptedAgent.by_step`), `FunctionAgent`, `SchemaAgent`:
  agents that answer offline, in order, from a function, or from the contract;
- `RecordingAgent`: a real agent's answers recorded once, replayed after;
- `FakeModelAPI`, `Reply`: a scripted model API on 127.0.0.1 that the real
  `claude` and `codex` CLIs (and `ClaudeAgent`) can be pointed at, offline;
- `run`, `resume`, `RunReport`: a run in a test, step by step;
- `approve`, `reject`: decide a run waiting at an approval step and continue it;
- `AgentRequest`, `AgentResponse`: what a `FunctionAgent`'s function is given and may return;
- `OFFLINE`: the switch the pytest plugin (`adws.testing.plugin`, registered
  through the `pytest11` entry point) turns on, so no test starts an agent
  process or reaches a hosted model unless it is marked `agent_process` or
  `live`.

Names are imported on first use; `ScriptedAgent` and the request types live in
`adws.agents`, below this kit, and are handed on from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._lazy import lazy_names

if TYPE_CHECKING:
    from adws.agents.base import AgentRequest, AgentResponse
    from adws.agents.offline import OFFLINE
    from adws.agents.scripted import ScriptedAgent
    from adws.runs.recording import RecordingAgent
    from adws.testing.agents import FunctionAgent, SchemaAgent
    from adws.testing.model_api import FakeModelAPI
    from adws.testing.replies import Reply
    from adws.testing.runs import RunReport, StepReport, approve, reject, resume, run

__all__ = [
    "OFFLINE",
    "AgentRequest",
    "AgentResponse",
    "FakeModelAPI",
    "FunctionAgent",
    "RecordingAgent",
    "Reply",
    "RunReport",
    "SchemaAgent",
    "ScriptedAgent",
    "StepReport",
    "approve",
    "reject",
    "resume",
    "run",
]

_HOMES = {
    "OFFLINE": "adws.agents.offline",
    "AgentRequest": "adws.agents.base",
    "AgentResponse": "adws.agents.base",
    "FakeModelAPI": "adws.testing.model_api",
    "FunctionAgent": "adws.testing.agents",
    "RecordingAgent": "adws.runs.recording",
    "Reply": "adws.testing.replies",
    "RunReport": "adws.testing.runs",
    "SchemaAgent": "adws.testing.agents",
    "ScriptedAgent": "adws.agents.scripted",
    "StepReport": "adws.testing.runs",
    "approve": "adws.testing.runs",
    "reject": "adws.testing.runs",
    "resume": "adws.testing.runs",
    "run": "adws.testing.runs",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
