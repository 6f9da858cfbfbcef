"""Per-step fingerprints: a stable hash of what decides each step's behaviour.

`adws resume` compares each finished step's recorded fingerprint with the
current one, so fixing the step that failed (the normal loop) resumes
quietly, while an edit to a step that already finished is caught. A
fingerprint is a pure function of the workflow's source and values: the
same in every process, whatever `PYTHONHASHSEED`, memory addresses or set
order (see `adws.journal.identity._canonical` for how code, classes and values are
described).

A step's fingerprint covers:

- its name, kind, retry policy (and its `retry_on`), `when` and `always_run`;
- what built it (its spec), field by field: an agent step's prompt,
  contract (keys, limits, and its schema classes: fields, types,
  defaults, validators, nested classes, methods), timeout, cwd and budget;
  a shell step's command, script input, timeout, cwd and output limit; a
  combinator's or parallel step's settings; and its children, each
  described the same way;
- for a Python step, its function: the bytecode, constants and closure
  values, and what it reads from its module, the module-level constants
  (`FACTOR = 2`) and the functions and classes defined there, transitively,
  so editing one step's function leaves every other step unchanged;
- the source of every module of the workflows folder the workflow imports,
  directly or through another such module (`_common.py`, `helpers.py`):
  conservatively, an edit there changes every step of the workflow.

Left out on purpose: the agent backend (`--agent` may pick another for a
resumed run without the workflow having changed), `rerun_on_resume` and
the declared `reads`/`writes` (they change how a run is resumed or
checked, not what a step does), the workflow module's own source beyond
what its steps use (editing the step that failed must not change the
others), and code outside the user's folder, identified by name only.
"""

from __future__ import annotations

import functools
import json
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from adws.engine.step import Step, Workflow, iter_steps
from adws.journal.identity._canonical import Describer, digest, is_library

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["describe_workflow", "fingerprint", "helper_sources", "step_fingerprints"]

_SKIPPED_SPEC_FIELDS = frozenset({"agent", "sessions", "env_pass"})
"""Spec fields no fingerprint covers: the backend an agent step asks (see above),
whether its retries continue the agent's session, and the credentials its process may
see (`env_pass`): how it asks, not what it proves."""


def _spec(spec: object, describer: Describer) -> object:
    """Describe what built a step, field by field; the steps it wraps by name only."""
    if not attrs.has(type(spec)):
        return describer.value(spec)
    described: dict[str, object] = {"spec": type(spec).__qualname__}
    for field in attrs.fields(type(spec)):  # type: ignore[arg-type] # checked by attrs.has above
        if field.name in _SKIPPED_SPEC_FIELDS:
            continue
        value = getattr(spec, field.name)
        if value is None and field.metadata.get("unset_unseen"):
            continue  # a field added later, unset: fingerprints made before it stay as they were
        if isinstance(value, Step):
            described[field.name] = f"step {value.name}"
        elif isinstance(value, tuple) and value and all(isinstance(v, Step) for v in value):
            described[field.name] = [f"step {step.name}" for step in value]
        else:
            described[field.name] = describer.value(value)
    return described


def _step(step: Step, describer: Describer) -> dict[str, object]:
    policy = step.retry
    described: dict[str, object] = {
        "name": step.name,
        "kind": step.kind,
        "always_run": step.always_run,
        "retry": describer.value(
            (policy.max_attempts, policy.delay, policy.backoff, policy.max_delay, policy.jitter)
        ),
        "retry_on": describer.value(policy.retry_on),
        "when": None if step.when is None else describer.value(step.when),
    }
    if step.spec is None:
        described["run"] = describer.value(step.run)
    else:
        described["spec"] = _spec(step.spec, describer)
    described["children"] = [_step(child, describer) for child in step.children]
    return described


def describe_workflow(workflow: Workflow) -> dict[str, object]:
    """Describe everything about a workflow that changes what a run would do."""
    describer = Describer()
    return {
        "name": workflow.name,
        "inputs": list(workflow.inputs),
        "budget": describer.value(workflow.budget),
        "steps": [_step(step, describer) for step in workflow.steps],
    }


def _run_modules(workflow: Workflow) -> Iterator[str]:
    """Name the modules the workflow's user code comes from, in step order."""
    for step in iter_steps(workflow.steps):
        run = step.run.func if isinstance(step.run, functools.partial) else step.run
        name = getattr(run, "__module__", None)
        if isinstance(name, str) and not is_library(name):
            yield name
        for cls in getattr(getattr(step.spec, "contract", None), "schemas", {}).values():
            if not is_library(cls.__module__):
                yield cls.__module__


def _defines(module: object, workflow: Workflow) -> bool:
    """Tell whether a module defines `workflow` (None in `sys.modules`, a failed import: no)."""
    found = getattr(module, "__dict__", {}).values()
    return any(isinstance(value, Workflow) and value.name == workflow.name for value in found)


def workflow_module(workflow: Workflow) -> types.ModuleType | None:
    """Find the module that defines `workflow` (its steps' module, else any that defines it)."""
    loaded = (sys.modules.get(name) for name in dict.fromkeys(_run_modules(workflow)))
    candidates = [module for module in loaded if module is not None]
    for module in candidates:
        if _defines(module, workflow):
            return module
    # dict.copy runs no Python code, so a thread importing meanwhile cannot break it.
    for name, module in sys.modules.copy().items():
        if not is_library(name) and _defines(module, workflow):
            return module
    return candidates[0] if candidates else None


def _imported(module: types.ModuleType) -> Iterator[types.ModuleType]:
    """Yield the modules `module` refers to: imported whole, or through a name it imported."""
    for value in vars(module).values():
        if isinstance(value, types.ModuleType):
            yield value
            continue
        name = getattr(value, "__module__", None)
        found = sys.modules.get(name) if isinstance(name, str) else None
        if found is not None:
            yield found


def helper_sources(workflow: Workflow, module: types.ModuleType | None = None) -> str:
    """Return the source of every module of the workflow's folder that it imports.

    The workflow's module is found from its steps when not given (see
    `workflow_module`). Modules are followed transitively: a helper that
    imports another module of the folder brings that one's source too.
    The workflow's own module is not included (its steps describe what
    they use of it).
    """
    module = module or workflow_module(workflow)
    file = getattr(module, "__file__", None)
    if module is None or file is None:
        return ""
    folder = Path(file).resolve().parent
    sources: dict[str, str] = {}
    pending, seen = [module], {module.__name__}
    while pending:
        for found in _imported(pending.pop()):
            path = getattr(found, "__file__", None)
            if found.__name__ in seen or path is None or Path(path).resolve().parent != folder:
                continue
            seen.add(found.__name__)
            pending.append(found)
            sources[found.__name__] = Path(path).read_text(encoding="utf-8", errors="replace")
    return "\n".join(f"# {name}\n{source}" for name, source in sorted(sources.items()))


def step_fingerprints(workflow: Workflow, helpers: str | None = None) -> dict[str, str]:
    """Return each top-level step's fingerprint, by step name."""
    describer = Describer()
    shared = digest(helper_sources(workflow) if helpers is None else helpers)
    # repr, not json.dumps: the description is built in a fixed order, and repr is faster.
    return {step.name: digest(repr((shared, _step(step, describer)))) for step in workflow.steps}


def fingerprint(workflow: Workflow, steps: Mapping[str, str] | None = None) -> str:
    """Return a short, stable hash of the whole workflow (its inputs and step fingerprints)."""
    steps = steps if steps is not None else step_fingerprints(workflow)
    budget = Describer().value(workflow.budget)
    return digest(json.dumps([workflow.name, list(workflow.inputs), budget, list(steps.items())]))
