"""Agent backends: the protocol and the scripted, command and Claude SDK agents."""

from adws.agents.base import AgentBackend, AgentRequest, AgentResponse
from adws.agents.claude import ClaudeAgent
from adws.agents.command import CommandAgent
from adws.agents.presets import PRESETS, CommandPreset
from adws.agents.scripted import ScriptedAgent, ScriptedResponse

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
]
