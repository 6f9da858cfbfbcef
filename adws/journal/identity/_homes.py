"""Where adws's own modules lived when journals were written, for names stored in them.

A fingerprint names a library object by `module:qualname`, and a stored
schema instance names its class the same way. adws moved its modules into
folders (`adws.errors` is `adws.engine.errors` now); a journal written
before the move still names the old homes, and a resume after an upgrade
must not see every step as "changed" for it. So names are written with a
module's first home, and read back through either.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["FIRST_HOMES", "first_home", "first_homes_in", "home_now"]

FIRST_HOMES: Final[dict[str, str]] = {
    "adws.engine.step": "adws.step",
    "adws.engine.context": "adws.context",
    "adws.engine.errors": "adws.errors",
    "adws.engine.events": "adws.events",
    "adws.engine.inner_events": "adws.inner_events",
    "adws.engine.executor": "adws.executor",
    "adws.engine.retry": "adws.retry",
    "adws.engine.retry_policy": "adws.retry_policy",
    "adws.engine.scope": "adws.scope",
    "adws.engine.combinators": "adws.combinators",
    "adws.engine.concurrency": "adws.concurrency",
    "adws.engine._scheduler": "adws._scheduler",
    "adws.engine._start": "adws._start",
    "adws.engine._emitter": "adws._emitter",
    "adws.engine.metering": "adws.metering",
    "adws.engine.usage": "adws.usage",
    "adws.engine._limits": "adws._limits",
    "adws.contract.validator": "adws.contract",
    "adws.contract._schemas": "adws._schemas",
    "adws.contract._strict": "adws._strict",
    "adws.contract._structure": "adws._structure",
    "adws.contract._describe": "adws._describe",
    "adws.contract.keys": "adws.keys",
    "adws.contract.template": "adws.template",
    "adws.shell.step": "adws.shell",
    "adws.shell._argv": "adws._argv",
    "adws.shell._script": "adws._shell_script",
    "adws.shell._outcome": "adws._shell_outcome",
    "adws.agents.step": "adws.agent_steps",
    "adws.agents.swap": "adws.agent_swap",
    "adws.agents._failures": "adws._agent_failures",
    "adws.agents.scripted": "adws.testing.scripted",
    "adws.io_ops.terminal": "adws._terminal",
    "adws.runs.interrupts": "adws.cli._interrupts",
    "adws.testing.replies": "adws.testing.model_api",
    "adws.runs.summary": "adws.summary",
    "adws.runs.recording": "adws.testing.recording",
}
"""Each moved module, by its home now, with the home it had first."""

_NOW: Final = {first: now for now, first in FIRST_HOMES.items()}
_MOVED: Final = re.compile(
    "|".join(re.escape(now) for now in sorted(FIRST_HOMES, key=len, reverse=True)) + r"(?!\w)"
)


def first_home(module: str) -> str:
    """Return the name a journal gives a module: its first home.

    >>> first_home("adws.engine.errors"), first_home("workflows.hello")
    ('adws.errors', 'workflows.hello')
    """
    return FIRST_HOMES.get(module, module)


def home_now(module: str) -> str:
    """Return where a module a journal names lives now.

    >>> home_now("adws.errors"), home_now("adws.engine.errors"), home_now("adws.shell")
    ('adws.engine.errors', 'adws.engine.errors', 'adws.shell.step')
    """
    return _NOW.get(module, module)


def first_homes_in(text: str) -> str:
    """Write every moved module a text names (a type's repr) under its first home.

    >>> first_homes_in("tuple[adws.engine.errors.PipelineError, ...]")
    'tuple[adws.errors.PipelineError, ...]'
    """
    return _MOVED.sub(lambda match: FIRST_HOMES[match.group()], text)
