"""Swap the agents of a workflow: every agent step, nested ones too, asks another backend.

`adws run --agent`, `--record` and `--replay`, batch workers and tests
(`use_agent(workflow, ScriptedAgent(...))`) all go through `map_agents`:
each step that holds agent steps is built again by its own builder around
the swapped ones, and keeps what its builder does not know of (retry,
`always_run`, `when`, reads and writes, `rerun_on_resume`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from adws.agent_steps import AgentSpec, agent_step
from adws.combinators import SequenceSpec, VerificationSpec, sequence, with_verification
from adws.concurrency import FanOutSpec, ParallelSpec, fan_out, parallel
from adws.workspaces import BestOfSpec, WorktreeSpec, best_of, worktree

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.agents.base import AgentBackend
    from adws.step import Step, Workflow

__all__ = ["limits_of", "map_agents", "use_agent"]


def _rebuilt(step: Step, swap: Callable[[AgentBackend], AgentBackend]) -> Step | None:  # noqa: PLR0911 - one rebuild per kind of step
    """Build `step` again around swapped agents (None when it holds no agent step)."""
    spec = step.spec
    if isinstance(spec, AgentSpec):
        return agent_step(
            step.name,
            prompt=spec.prompt,
            agent=swap(spec.agent),
            contract=spec.contract,
            timeout=spec.timeout,
            cwd=spec.cwd,
            budget=spec.budget,
            edits=spec.edits,
            idle_timeout=spec.idle_timeout,
        )
    if isinstance(spec, VerificationSpec):
        return with_verification(
            _replace_agent(spec.main, swap),
            _replace_agent(spec.verify, swap),
            max_attempts=spec.max_attempts,
            name=step.name,
        )
    if isinstance(spec, SequenceSpec):
        return sequence(step.name, [_replace_agent(inner, swap) for inner in spec.steps])
    if isinstance(spec, ParallelSpec):
        return parallel(
            step.name,
            [_replace_agent(branch, swap) for branch in spec.branches],
            max_concurrency=spec.max_concurrency,
            min_successes=spec.min_successes,
            fail_fast=spec.fail_fast,
        )
    if isinstance(spec, WorktreeSpec):
        inner = _replace_agent(spec.step, swap)
        return worktree(inner, name=step.name, repo=spec.repo, base=spec.base, keep=spec.keep)
    if isinstance(spec, BestOfSpec):
        return best_of(
            step.name,
            _replace_agent(spec.step, swap),
            n=spec.n,
            repo=spec.repo,
            select=spec.select,
            max_concurrency=spec.max_concurrency,
        )
    if isinstance(spec, FanOutSpec):
        return fan_out(
            step.name,
            _replace_agent(spec.step, swap),
            over=spec.over,
            item=spec.item,
            max_concurrency=spec.max_concurrency,
            min_successes=spec.min_successes,
            fail_fast=spec.fail_fast,
        )
    return None


def _replace_agent(step: Step, swap: Callable[[AgentBackend], AgentBackend]) -> Step:
    rebuilt = _rebuilt(step, swap)
    if rebuilt is None:
        return step
    # What the step's builder does not know of, the step itself says.
    return attrs.evolve(
        rebuilt,
        always_run=step.always_run,
        retry=step.retry,
        when=step.when,
        reads=step.reads,
        writes=step.writes,
        rerun_on_resume=step.rerun_on_resume,
    )


def map_agents(workflow: Workflow, swap: Callable[[AgentBackend], AgentBackend]) -> Workflow:
    """Return `workflow` with every agent step's backend (nested ones too) replaced by `swap(it)`.

    `adws run --record DIR` wraps each backend in a `RecordingAgent` this way.
    """
    return attrs.evolve(workflow, steps=tuple(_replace_agent(s, swap) for s in workflow.steps))


def use_agent(workflow: Workflow, agent: AgentBackend) -> Workflow:
    """Return `workflow` with every agent step (nested ones too) asking `agent`.

    Tests use it to run a shipped workflow against a `ScriptedAgent`. The
    steps keep their own limits (timeout, idle timeout, edits, cwd); `adws
    run --agent CMD` also keeps each replaced backend's (`limits_of`),
    through `map_agents`.
    """
    return map_agents(workflow, lambda _current: agent)


def limits_of(agent: AgentBackend) -> dict[str, object]:
    """Return the limits a backend was given (`timeout`, `cwd`, `env`), for `--agent` to keep.

    >>> from adws.agents import CommandAgent
    >>> limits_of(CommandAgent("claude -p", timeout=5))
    {'timeout': 5, 'cwd': None, 'env': None}
    """
    return {name: getattr(agent, name, None) for name in ("timeout", "cwd", "env")}
