"""Agent backends: the protocol and the scripted, command and Claude SDK agents."""

from adws.agents.base import AgentBackend, AgentRequest, AgentResponse
from adws.agents.command import CommandAgent
from adws.agents.scripted import ScriptedAgent, ScriptedResponse

__all__ = [
    "AgentBackend",
    "AgentRequest",
    "AgentResponse",
    "CommandAgent",
    "ScriptedAgent",
    "ScriptedResponse",
]
