"""The former home of `agent_step`, kept so `from adws.agent_step import ...` still works.

The implementation lives in `adws.agent_steps`. A module named like the
function it exports would otherwise take the function's place: importing
`adws.agent_step` sets the package attribute `adws.agent_step` to this
module, and `from adws import agent_step` would then return a module. So
this module is callable and forwards to the function: whichever one a
user's `from adws import agent_step` finds, calling it builds the step.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

from adws.agent_steps import AgentSpec, agent_step, compose_prompt, use_agent

if TYPE_CHECKING:
    from adws.step import Step

__all__ = ["AgentSpec", "agent_step", "compose_prompt", "use_agent"]


class _CallableModule(types.ModuleType):
    """This module, callable as `agent_step` itself."""

    def __call__(self, *args: object, **kwargs: object) -> Step:
        """Build an agent step, exactly as `adws.agent_steps.agent_step` does."""
        return agent_step(*args, **kwargs)  # type: ignore[arg-type] # forwarded as given


sys.modules[__name__].__class__ = _CallableModule
