"""Agent backends: the protocol, the scripted, command and Claude SDK agents, and usage."""

from adws.agents.base import AgentBackend, AgentRequest, AgentResponse
from adws.agents.claude import ClaudeAgent
from adws.agents.command import CommandAgent
from adws.agents.presets import PRESETS, CommandPreset
from adws.testing.scripted import ScriptedAgent, ScriptedResponse
from adws.usage import Usage

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
