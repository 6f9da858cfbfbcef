"""`ScriptedAgent` lives in `adws.testing.scripted`; this module keeps the old import path."""

from adws.testing.scripted import ScriptedAgent, ScriptedResponse

__all__ = ["ScriptedAgent", "ScriptedResponse"]
