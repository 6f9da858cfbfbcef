"""What each step reads and writes (`flow_of`): declared where it says, inferred elsewhere.

An agent step reads its prompt's and cwd's `{placeholders}` and writes its
contract's keys (lower-cased); a shell step reads its command's
placeholders (and its `script_from` input) and writes `<name>_stdout`,
`_stderr` and `_returncode`; combinators, parallel steps and workspaces
combine their children's. `adws check` and resume's `-i` checks read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import attrs

from adws.agents.step import AgentSpec
from adws.contract.template import Placeholder, template_paths
from adws.engine.combinators import SequenceSpec, VerificationSpec
from adws.engine.concurrency import FanOutSpec, ParallelSpec
from adws.engine.proof import REPRODUCER_CHECK, REPRODUCER_FILES, REPRODUCER_IDS, MustPass
from adws.shell.step import ShellSpec
from adws.workspaces import (
    ApprovalSpec,
    BestOfSpec,
    FastForwardSpec,
    ReproduceSpec,
    WorktreeSpec,
)

if TYPE_CHECKING:
    from adws.engine.step import Step

__all__ = ["Flow", "flow_of", "inferred_flow"]


@final
@attrs.frozen
class Flow:
    """What one step reads and writes; `opaque` means its writes are unknown."""

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    may_write: tuple[str, ...] = ()
    """Written only sometimes (an agent step's `<name>_agent`): may be read, never noted."""
    opaque: bool = False
    clashes: tuple[str, ...] = ()
    """Keys two branches of one parallel step both write."""
    paths: tuple[Placeholder, ...] = ()
    """The placeholders that read into a key (`{triage_json.label}`), checked against schemas."""
    types: tuple[tuple[str, type], ...] = ()
    """The schema class of each key written that has one (an agent's `*_JSON` key)."""
    quiet: tuple[str, ...] = ()
    """Written every time but a by-product (a shell step's output): never listed as unread."""


def _paths(*templates: str | tuple[str, ...] | None) -> tuple[Placeholder, ...]:
    parts = [part for t in templates for part in ((t,) if isinstance(t, str) else (t or ()))]
    found = {p.text: p for part in parts for p in template_paths(part)}
    return tuple(found.values())


def _keys(paths: tuple[Placeholder, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p.key for p in paths))


def _unique(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for group in groups for name in group))


def _children(flows: list[Flow]) -> Flow:
    """Combine what several children write (their reads are the caller's business)."""
    return Flow(
        writes=_unique(*(flow.writes for flow in flows)),
        may_write=_unique(*(flow.may_write for flow in flows)),
        opaque=any(flow.opaque for flow in flows),
        paths=tuple({p.text: p for flow in flows for p in flow.paths}.values()),
        types=tuple(dict(pair for flow in flows for pair in flow.types).items()),
        quiet=_unique(*(flow.quiet for flow in flows)),
    )


def _in_order(flows: list[Flow]) -> Flow:
    """Combine children that run one after another: a later one reads what an earlier wrote."""
    produced: set[str] = set()
    reads: list[str] = []
    for flow in flows:
        reads.extend(key for key in flow.reads if key not in produced)
        produced.update(flow.writes, flow.may_write)
    return attrs.evolve(_children(flows), reads=_unique(tuple(reads)))


def inferred_flow(step: Step) -> Flow:  # noqa: PLR0911 - one flow per kind of step
    """Return what `step`'s definition says it reads and writes, ignoring `reads`/`writes`."""
    spec = step.spec
    if isinstance(spec, AgentSpec):
        paths = _paths(spec.prompt, spec.cwd)
        writes = tuple(key.lower() for key in spec.contract.keys)
        schemas = spec.contract.schemas
        types = tuple(
            (key.lower(), schemas.get(key, str))
            for key in spec.contract.keys
            if key in schemas or not key.endswith("_JSON")
        )
        return Flow(_keys(paths), writes, (f"{step.name}_agent",), paths=paths, types=types)
    if isinstance(spec, ShellSpec):
        paths = _paths(spec.command, spec.cwd)
        script = (spec.script_from,) if spec.script_from else ()
        suffixes = ("stdout", "stderr", "returncode", "ran")[: 4 if spec.allow_generated else 3]
        writes = tuple(f"{step.name}_{suffix}" for suffix in suffixes)
        return Flow(_unique(_keys(paths), script), writes, paths=paths, quiet=writes)
    if isinstance(spec, VerificationSpec):
        return _verification_flow(step.name, spec)
    if isinstance(spec, ReproduceSpec):  # the agent's outputs and the tests' ids and files
        inner = _in_order([flow_of(spec.step), flow_of(spec.verify)])
        mine = flow_of(spec.step)
        made = (REPRODUCER_IDS, REPRODUCER_FILES, REPRODUCER_CHECK)
        return attrs.evolve(
            inner,
            writes=_unique(mine.writes, made),
            may_write=mine.may_write,
            quiet=_unique(mine.quiet, made),
        )
    if isinstance(spec, SequenceSpec):
        return _in_order([flow_of(child) for child in spec.steps])
    if isinstance(spec, ParallelSpec):
        flows = [flow_of(branch) for branch in spec.branches]
        seen: set[str] = set()
        clashes: list[str] = []
        for key in (key for flow in flows for key in flow.writes):
            (clashes if key in seen else []).append(key)
            seen.add(key)
        combined = _children(flows)
        return attrs.evolve(
            combined,
            reads=_unique(*(flow.reads for flow in flows)),
            writes=_unique(combined.writes, (f"{step.name}_failures",)),
            clashes=tuple(dict.fromkeys(clashes)),
        )
    if isinstance(spec, WorktreeSpec | BestOfSpec | ApprovalSpec | FastForwardSpec):
        return _workspace_flow(step.name, spec)
    if isinstance(spec, FanOutSpec):
        child = flow_of(spec.step)
        given = {spec.item, f"{spec.item}_index"}
        reads = _unique((spec.over,), tuple(k for k in child.reads if k not in given))
        paths = tuple(p for p in child.paths if p.key not in given)
        return Flow(reads, (step.name, f"{step.name}_failures"), paths=paths)
    return Flow(opaque=True)


def _verification_flow(name: str, spec: VerificationSpec) -> Flow:
    """What a `with_verification` reads and writes: its children's, its targets, what it proved.

    `must_pass="{key}"` reads `key`; `"reproduced"` reads a reproducer's
    ids and files. With a baseline or rechecks it writes the failures left,
    the baseline, the flaky ones, the targets fixed, the kept count and the
    proof (by-products: never listed as unread).
    """
    inner = _in_order([flow_of(spec.main), flow_of(spec.verify)])
    wanted = MustPass.of(name, spec.must_pass)
    reads = (wanted.source,) if wanted.source else ()
    if wanted.reproduced:
        reads = (*reads, REPRODUCER_IDS, REPRODUCER_FILES)
    if not (spec.baseline or spec.recheck):
        return attrs.evolve(inner, reads=_unique(inner.reads, reads))
    suffixes = ("failures", "baseline", "flaky", "fixed", "kept", "proved")
    own = tuple(f"{name}_{suffix}" for suffix in suffixes)
    return attrs.evolve(
        inner,
        reads=_unique(inner.reads, reads),
        writes=_unique(inner.writes, own),
        quiet=_unique(inner.quiet, own),
    )


def _workspace_flow(
    name: str, spec: WorktreeSpec | BestOfSpec | ApprovalSpec | FastForwardSpec
) -> Flow:
    """What a workspace step reads and writes: its templates, and its inner step's flow.

    The inner step of a `worktree` or `best_of` may read `worktree` (and
    `<name>_index`): the step gives them. Its outputs are the step's, with
    the branch, commit and diffstat (and a `best_of`'s winner and outcomes).
    """
    if isinstance(spec, ApprovalSpec):
        paths = _paths(spec.message)
        return Flow(_keys(paths), (f"{name}_approval",), paths=paths)
    if isinstance(spec, FastForwardSpec):
        paths = _paths(spec.repo, spec.commit)
        writes = tuple(f"{name}_{suffix}" for suffix in ("branch", "from", "to"))
        return Flow(_keys(paths), writes, paths=paths)
    child = flow_of(spec.step)
    own = _paths(spec.repo, spec.base)
    given = {"worktree", f"{name}_index"}
    suffixes = ["branch", "commit", "diffstat"]
    if isinstance(spec, BestOfSpec):
        suffixes += ["winner", "outcomes"]
    return attrs.evolve(
        child,
        reads=_unique(_keys(own), tuple(key for key in child.reads if key not in given)),
        writes=_unique(child.writes, tuple(f"{name}_{suffix}" for suffix in suffixes)),
        paths=own + tuple(p for p in child.paths if p.key not in given),
    )


def flow_of(step: Step) -> Flow:
    """Return what `step` reads and writes: declared where it says, inferred elsewhere."""
    inferred = inferred_flow(step)
    if step.reads is None and step.writes is None:
        return inferred
    return attrs.evolve(
        inferred,
        reads=inferred.reads if step.reads is None else step.reads,
        writes=inferred.writes if step.writes is None else step.writes,
        opaque=inferred.opaque and step.writes is None,
    )
