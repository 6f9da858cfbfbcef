"""The agent boundary: backends, presets and parsers, `agent_step`, and swapping agents.

`base` is the protocol (`AgentBackend`, `AgentRequest`, `AgentResponse`);
`command`, `claude` (the Claude Agent SDK, `_sdk_session`) and `scripted`
are backends; `presets` are the real CLIs' command lines and `parsers`
read their output (`answers`, `claude_output`); `offline` is the switch
tests turn on; `sessions` says which backends continue a session, how to
ask, and how a lost one is told apart. `step` builds `agent_step` (what it adds to an agent's
failure is `_failures`); `swap` gives a workflow's agent steps another
backend (`use_agent`, `--agent`).
"""

from adws.agents.base import AgentBackend, AgentRequest, AgentResponse
from adws.agents.claude import ClaudeAgent
from adws.agents.command import CommandAgent
from adws.agents.presets import PRESETS, CommandPreset
from adws.agents.scripted import ScriptedAgent, ScriptedResponse
from adws.engine.usage import Usage

__all__ = [
    "PRESETS",
    "AgentBackend",
    "AgentRequest",
    "AgentResponse",
    "ClaudeAgent",
    "CommandAgent",
    "CommandPreset",
    "ScriptedAgent",
    "ScriptedResponse",
    "Usage",
]
