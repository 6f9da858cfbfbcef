"""`RunOptions`: how a run was started, journaled so that a resume starts it the same way.

`adws run W --agent claude --max-cost 5` records `agent` and `max_cost`
with the run (`--notify CMD` too, so `adws approve` notifies the same
way, and `--max-wait`, or `$ADWS_MAX_WAIT`, so a resume parks as the run
did); a plain `adws resume RUN` uses them again, and an option given to
the resume overrides the recorded one (and is recorded in its
place, so a later resume keeps it). Paths (`workflows`, `record`,
`replay`) are kept absolute, so a resume works from any folder; a
`replay` that names a run (`--replay RUN_ID`) is kept as its id. A run
started with `--no-transcripts` keeps none in its resumes either. `adws
approve RUN --max-cost USD` records the raised budget here, in the claim
that records the decision, so every later resume keeps it.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final, final

import attrs

from adws.engine.usage import Budget

__all__ = ["RunOptions"]

_NAMES: Final = (
    "agent",
    "model",
    "agent_output",
    "max_cost",
    "max_tokens",
    "max_agents",
    "workflows",
    "record",
    "replay",
    "no_transcripts",
    "notify",
    "on_budget",
    "raised",
    "max_wait",
    "park_at",
)
_KINDS: Final[dict[str, tuple[type, ...]]] = {
    "agent": (str,),
    "model": (str,),
    "agent_output": (str,),
    "max_cost": (float, int),
    "max_tokens": (int,),
    "max_agents": (int,),
    "workflows": (str,),
    "record": (str,),
    "replay": (str,),
    "no_transcripts": (bool,),
    "notify": (str,),
    "on_budget": (str,),
    "raised": (bool,),
    "max_wait": (float, int),
    "park_at": (float, int),
}
_EXCLUSIVE: Final = ("record", "replay")
"""Giving one of these to a resume replaces both: a run records or replays, never both."""


_MAX_INT: Final = 2**63 - 1
"""The largest whole number SQLite holds: a row claiming more was not written by adws."""


def _valid(name: str, value: object) -> bool:
    """Tell whether a decoded value is one `adws run` could have recorded for `name`."""
    if isinstance(value, bool):
        return name in {"no_transcripts", "raised"} and value
    if not isinstance(value, _KINDS[name]):
        return False
    if isinstance(value, str):
        return name != "on_budget" or value in {"fail", "ask"}
    number = float(value) if isinstance(value, int) and value <= _MAX_INT else value
    if name == "park_at" and isinstance(number, float) and number > 1:
        return False
    return isinstance(number, float) and math.isfinite(number) and number >= (name == "max_agents")


@final
@attrs.frozen
class RunOptions:
    """The command-line options a run was started with (None: not given).

    >>> RunOptions(agent="claude", max_cost=5.0).describe()
    "agent: 'claude', max_cost: 5.0"
    """

    agent: str | None = None
    model: str | None = None
    agent_output: str | None = None
    max_cost: float | None = None
    max_tokens: int | None = None
    max_agents: int | None = None
    workflows: str | None = None
    record: str | None = None
    replay: str | None = None
    no_transcripts: bool | None = None
    """True when the run keeps only hashes of what agents were asked and answered."""
    notify: str | None = None
    """A command run with the run id and the message when the run starts waiting for approval."""
    on_budget: str | None = None
    """`ask`: a run its budget cannot pay for waits for a person instead of failing."""
    raised: bool | None = None
    """True once `adws approve --max-cost/--max-tokens` raised the budget: `max_cost` and
    `max_tokens` then replace the workflow's and every step's limits instead of tightening them."""
    max_wait: float | None = None
    """How long the run waits in its process for an agent's limit to reset before it parks."""
    park_at: float | None = None
    """The used share (0 to 1) of an agent account's window past which calls park (0.95)."""

    def budget(self) -> Budget | None:
        """Return the budget `--max-cost`, `--max-tokens` and `--on-budget` set (None: none).

        >>> RunOptions(max_cost=5.0, on_budget="ask").budget()
        Budget(max_cost_usd=5.0, max_tokens=None, on_exceeded='ask', unestimated='ask')
        """
        ask = self.on_budget == "ask"
        if self.max_cost is None and self.max_tokens is None and not ask:
            return None
        return Budget(self.max_cost, self.max_tokens, on_exceeded="ask" if ask else "fail")

    def raised_budget(self) -> Budget | None:
        """Return the budget a person raised (`adws approve --max-cost`), whose limits replace."""
        return self.budget() if self.raised else None

    def to_dict(self) -> dict[str, object]:
        """Return the options that are set, by name, for the journal and `--json`."""
        return {name: getattr(self, name) for name in _NAMES if getattr(self, name) is not None}

    def to_json(self) -> str | None:
        """Encode the options for the journal (None when there are none)."""
        given = self.to_dict()
        return json.dumps(given, sort_keys=True) if given else None

    @classmethod
    def from_json(cls, text: str | None) -> RunOptions:
        """Decode what `to_json` wrote; anything else in the row is ignored, never trusted.

        >>> RunOptions.from_json('{"agent": "x", "max_cost": -1, "other": 2}')
        RunOptions(agent='x', model=None, agent_output=None, max_cost=None, max_tokens=None, max_agents=None, workflows=None, record=None, replay=None, no_transcripts=None, notify=None, on_budget=None, raised=None, max_wait=None, park_at=None)
        """  # noqa: E501
        try:
            loaded: Any = json.loads(text) if text else {}
        except (ValueError, RecursionError):
            return cls()
        if not isinstance(loaded, dict):
            return cls()
        return cls(**{n: loaded[n] for n in _NAMES if n in loaded and _valid(n, loaded[n])})

    def merged(self, given: RunOptions) -> tuple[RunOptions, dict[str, object]]:
        """Apply the options given to a resume over these recorded ones.

        Returns the options to use and, by name, the recorded value (None
        where none was) of each option the resume changed. `record` and
        `replay` go together: giving either drops the other.

        >>> recorded = RunOptions(agent="sh demo.sh", max_cost=0.01)
        >>> used, changed = recorded.merged(RunOptions(agent="claude"))
        >>> used.describe(changed)
        "agent: 'claude' (recorded: 'sh demo.sh'), max_cost: 0.01"
        """
        recorded = self.to_dict()
        values = dict(recorded)
        if given.record is not None or given.replay is not None:
            values.pop("record", None)
            values.pop("replay", None)
        values.update(given.to_dict())
        changed = {
            name: recorded.get(name) for name in _NAMES if recorded.get(name) != values.get(name)
        }
        return RunOptions(**values), changed  # type: ignore[arg-type] # each value keeps its type

    def describe(
        self, changed: dict[str, object] | None = None, *, hide: tuple[str, ...] = ()
    ) -> str:
        """Name each option that is set and, after one a resume changed, what was recorded.

        `hide` leaves out options not worth a line unless changed (the
        workflows folder, when it is the usual one).
        """
        changed = changed or {}
        parts = []
        for name in _NAMES:
            value = getattr(self, name)
            if name not in changed and (value is None or name in hide):
                continue
            shown = f"{name}: {_show(value)}"
            if name in changed:
                shown += f" (recorded: {_show(changed[name])})"
            parts.append(shown)
        return ", ".join(parts)


def _show(value: object) -> str:
    return "none" if value is None else repr(value)
