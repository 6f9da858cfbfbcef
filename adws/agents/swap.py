"""Swap the agents of a workflow: every agent step, nested ones too, asks another backend.

`adws run --agent`, `--record` and `--replay`, batch workers and tests
(`use_agent(workflow, ScriptedAgent(...))`) all go through `map_agents`:
each step that holds agent steps is built again by its own builder around
the swapped ones, and keeps what its builder does not know of (retry,
`always_run`, `when`, reads and writes, `rerun_on_resume`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from adws._exceptions import AdwsError
from adws.agents.claude import ClaudeAgent
from adws.agents.command import CommandAgent
from adws.agents.parsers import PARSERS
from adws.agents.presets import CLAUDE_SDK, PRESETS
from adws.agents.step import AgentSpec
from adws.engine.combinators import SequenceSpec, VerificationSpec, sequence, with_verification
from adws.engine.concurrency import FanOutSpec, ParallelSpec, fan_out, parallel
from adws.engine.step import iter_steps
from adws.workspaces import (
    BestOfSpec,
    ReproduceSpec,
    WorktreeSpec,
    best_of,
    reproduce,
    worktree,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.agents.base import AgentBackend
    from adws.engine.step import Step, Workflow
    from adws.workspaces.seeds import SeedSpec

__all__ = ["AgentChoiceError", "limits_of", "map_agents", "select_agent", "use_agent"]


class AgentChoiceError(AdwsError, ValueError):
    """An `--agent` choice (with `--model`, `--agent-output`) that makes no agent for a workflow."""


def _seeded(seed: SeedSpec | None) -> dict[str, Any]:
    """Return the keywords that declare `seed` again (none for a worktree without one)."""
    return {} if seed is None else attrs.asdict(seed)


def _rebuilt(step: Step, swap: Callable[[AgentBackend], AgentBackend]) -> Step | None:  # noqa: PLR0911 - one rebuild per kind of step
    """Build `step` again around swapped agents (None when it holds no agent step)."""
    spec = step.spec
    if isinstance(spec, AgentSpec):
        return attrs.evolve(spec, agent=swap(spec.agent)).build(step)
    if isinstance(spec, VerificationSpec):
        return with_verification(
            _replace_agent(spec.main, swap),
            _replace_agent(spec.verify, swap),
            max_attempts=spec.max_attempts,
            name=step.name,
            baseline=spec.baseline,
            recheck=spec.recheck,
            protect=spec.protect,
            must_pass=spec.must_pass,
            baseline_unnamed=spec.baseline_unnamed,
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
        return worktree(
            inner,
            name=step.name,
            repo=spec.repo,
            base=spec.base,
            keep=spec.keep,
            protect=spec.protect,
            **_seeded(spec.seed),
        )
    if isinstance(spec, BestOfSpec):
        return best_of(
            step.name,
            _replace_agent(spec.step, swap),
            n=spec.n,
            repo=spec.repo,
            select=spec.select,
            max_concurrency=spec.max_concurrency,
            early_stop=spec.early_stop,
            protect=spec.protect,
            base=spec.base,
            **_seeded(spec.seed),
        )
    if isinstance(spec, ReproduceSpec):
        return reproduce(
            _replace_agent(spec.step, swap),
            _replace_agent(spec.verify, swap),
            name=step.name,
            tests=spec.tests,
            max_attempts=spec.max_attempts,
            baseline_unnamed=spec.baseline_unnamed,
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


def select_agent(
    workflow: Workflow, agent: str | None, model: str | None, output: str | None = None
) -> Workflow:
    """Swap every agent step's backend for the one `--agent` names.

    `claude-sdk` is `ClaudeAgent`; a preset name (`claude`, `codex`) is that
    CLI's documented command line; anything else is a command to run, whose
    stdout `--agent-output` (`output`) names the format of. Only the command
    changes: each step keeps its timeout, idle timeout, edits and cwd, and
    each replaced backend's own timeout, cwd and env are carried over. A
    workflow with no agent step has nothing to swap. A choice that makes no
    agent raises `AgentChoiceError`, with the message the CLI prints.
    """
    if agent is None:
        if model is not None or output is not None:
            flag = "--model" if model is not None else "--agent-output"
            msg = f"{flag} needs --agent (claude-sdk, a preset such as claude, or a command)"
            raise AgentChoiceError(msg)
        return workflow

    if not any(step.kind == "agent" for step in iter_steps(workflow.steps)):
        msg = f"--agent {agent}: workflow {workflow.name!r} has no agent step to run it"
        raise AgentChoiceError(msg)
    build: Callable[[dict[str, Any]], AgentBackend]
    if output is not None and (agent == CLAUDE_SDK or agent in PRESETS):
        msg = f"--agent-output is for a command of your own; --agent {agent} reads its own format"
        raise AgentChoiceError(msg)
    if agent == CLAUDE_SDK:
        build = lambda limits: ClaudeAgent(model=model, **limits)  # noqa: E731 - one line each
    elif agent in PRESETS:
        build = lambda limits: PRESETS[agent].agent(model, **limits)  # noqa: E731 - as above
    elif model is not None:
        msg = f"--model works with --agent {CLAUDE_SDK} or a preset ({', '.join(PRESETS)})"
        raise AgentChoiceError(msg)
    else:
        try:
            CommandAgent(agent)
        except ValueError as exc:
            msg = f"--agent: {exc}"
            raise AgentChoiceError(msg) from exc
        parse = PARSERS[output or "text"]
        build = lambda limits: CommandAgent(agent, parse=parse, **limits)  # noqa: E731 - as above
    return map_agents(workflow, lambda current: build(limits_of(current)))
