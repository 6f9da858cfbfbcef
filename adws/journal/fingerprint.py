"""Per-step fingerprints: a stable hash of what decides each step's behaviour.

`adws resume` compares each finished step's recorded fingerprint with the
current one, so fixing the step that failed (the normal loop) resumes
quietly, while an edit to a step that already finished is caught.

A step's fingerprint covers its name, kind, retry policy (and the code of
its `retry_on`), `when` and `always_run`; an agent step's prompt, contract
(keys, limits and the fields of its schemas), timeout and cwd; a shell
step's command, script input, timeout, cwd and output limit; a
combinator's children; and for Python steps the code of the function:

- its bytecode, constants and names, never its line numbers, so editing
  another function in the same file changes nothing here;
- transitively, the code of the module-level functions and classes of its
  own module that it references (a helper it calls, a schema it builds);
- the values its closure holds and a `functools.partial`'s arguments;
- the source of the `_*.py` helper modules of the workflows folder that the
  workflow imports (conservatively: a helper edit changes every step).

The agent backend is left out on purpose: `--agent` may pick another one
for a resumed run without the workflow having changed. Code is hashed once
per code object per call, so a 1,000-step workflow takes milliseconds.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from adws.agent_steps import AgentSpec
from adws.combinators import VerificationSpec
from adws.concurrency import FanOutSpec, ParallelSpec
from adws.shell import ShellSpec

if TYPE_CHECKING:
    from collections.abc import Mapping

    from adws.step import RetryPolicy, Step, Workflow

__all__ = ["describe_workflow", "fingerprint", "helper_sources", "step_fingerprints"]

_DIGEST_CHARS: Final = 16
_SCALARS: Final = (str, int, float, bool, type(None))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:_DIGEST_CHARS]


class _Hasher:
    """Describe callables and values stably; memoised per object for one computation."""

    def __init__(self) -> None:
        self._seen: dict[int, str] = {}
        self._codes: dict[int, str] = {}
        self._lists: dict[tuple[str, int], list[Any]] = {}
        self._policies: dict[RetryPolicy, list[object]] = {}

    def code(self, code: types.CodeType) -> str:
        """Describe a code object without its line numbers or file name, once per object."""
        found = self._codes.get(id(code))
        if found is None:
            found = self._codes[id(code)] = self._code(code)
        return found

    def _code(self, code: types.CodeType) -> str:
        parts = [code.co_name, code.co_code.hex(), repr(code.co_names), repr(code.co_varnames)]
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                parts.append(self.code(const))
            elif isinstance(const, frozenset):
                parts.append(repr(sorted(map(repr, const))))
            else:
                parts.append(repr(const))
        return _digest("\n".join(parts))

    def _names(self, code: types.CodeType) -> list[str]:
        """List the global names a code object (and code nested in it) uses, once per object."""
        key = ("names", id(code))
        found = self._lists.get(key)
        if found is None:
            names = set(code.co_names)
            for const in code.co_consts:
                if isinstance(const, types.CodeType):
                    names.update(self._names(const))
            found = self._lists[key] = sorted(names)
        return found

    def retry(self, policy: RetryPolicy) -> object:
        """Describe a retry policy, once per policy object (most steps share one)."""
        found = self._policies.get(policy)
        if found is None:
            values = attrs.astuple(policy, filter=lambda attribute, _: attribute.name != "retry_on")
            found = self._policies[policy] = [*values, self.value(policy.retry_on)]
        return found

    def function(self, function: types.FunctionType) -> str:
        """Describe a function: its code, its closure, and what it uses from its module."""
        key = id(function)
        if key in self._seen:
            return self._seen[key]
        self._seen[key] = f"(recursive {function.__qualname__})"
        module = function.__module__
        parts = [function.__qualname__, self.code(function.__code__)]
        parts.append(self.value(function.__defaults__))
        parts.append(self.value(function.__kwdefaults__))
        for cell in function.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell: the variable was never bound
                contents = None
            parts.append(self.value(contents))
        for name in self._names(function.__code__):
            found = function.__globals__.get(name)
            if getattr(found, "__module__", None) == module and isinstance(
                found, types.FunctionType | type
            ):
                parts.append(f"{name}={self.value(found)}")
        described = _digest("\n".join(parts))
        self._seen[key] = described
        return described

    def cls(self, cls: type) -> str:
        """Describe a class defined in a workflow: its methods and class attributes."""
        key = id(cls)
        if key in self._seen:
            return self._seen[key]
        self._seen[key] = f"(recursive {cls.__qualname__})"
        parts = [cls.__qualname__, repr([base.__qualname__ for base in cls.__bases__])]
        if attrs.has(cls):
            parts.extend(f"{field.name}: {field.type}" for field in attrs.fields(cls))
        for name, member in sorted(vars(cls).items()):
            if isinstance(member, types.FunctionType):
                parts.append(f"{name}={self.function(member)}")
        described = _digest("\n".join(parts))
        self._seen[key] = described
        return described

    def value(self, value: object) -> str:  # noqa: PLR0911 - one description per kind of value
        """Describe any value stably across processes (never by its memory address)."""
        if isinstance(value, _SCALARS):
            return repr(value)
        if isinstance(value, functools.partial):
            arguments = f"{self.value(value.args)}, {self.value(value.keywords)}"
            return f"partial({self.value(value.func)}, {arguments})"
        if isinstance(value, types.FunctionType):
            return self.function(value)
        if isinstance(value, type):
            return self.cls(value)
        if isinstance(value, list | tuple):
            return "[" + ", ".join(self.value(item) for item in value) + "]"
        if isinstance(value, dict):
            items = sorted((repr(key), self.value(item)) for key, item in value.items())
            return "{" + ", ".join(f"{key}: {item}" for key, item in items) + "}"
        if isinstance(value, set | frozenset):
            return "{" + ", ".join(sorted(self.value(item) for item in value)) + "}"
        cls = type(value)
        if attrs.has(cls):
            fields = {field.name: getattr(value, field.name) for field in attrs.fields(cls)}
            return f"{cls.__qualname__}{self.value(fields)}"
        shown = repr(value)
        # A default repr holds a memory address, different in every process: keep the type only.
        return type(value).__qualname__ if " at 0x" in shown else shown


def _schema(cls: type) -> object:
    return {
        "name": cls.__qualname__,
        "fields": [(field.name, str(field.type)) for field in attrs.fields(cls)],
    }


def _step(step: Step, hasher: _Hasher) -> dict[str, object]:
    spec = step.spec
    described: dict[str, object] = {
        "name": step.name,
        "kind": step.kind,
        "always_run": step.always_run,
        "retry": hasher.retry(step.retry),
        "when": None if step.when is None else hasher.value(step.when),
    }
    if isinstance(spec, AgentSpec):
        contract = spec.contract
        described["agent"] = {
            "prompt": spec.prompt,
            "expects": list(contract.keys),
            "schemas": {key: _schema(cls) for key, cls in contract.schemas.items()},
            "schema_code": [hasher.value(cls) for cls in contract.schemas.values()],
            "max_output_bytes": contract.max_output_bytes,
            "timeout": spec.timeout,
            "cwd": spec.cwd,
        }
    elif isinstance(spec, ShellSpec):
        described["shell"] = attrs.asdict(spec)
    elif isinstance(spec, VerificationSpec):
        described["rounds"] = spec.max_attempts
    elif isinstance(spec, ParallelSpec | FanOutSpec):
        described["concurrency"] = [
            getattr(spec, "over", None),
            getattr(spec, "item", None),
            spec.max_concurrency,
            spec.min_successes,
        ]
    else:
        described["run"] = hasher.value(step.run)
    described["children"] = [_step(child, hasher) for child in step.children]
    return described


def describe_workflow(workflow: Workflow) -> dict[str, object]:
    """Describe everything about a workflow that changes what a run would do."""
    hasher = _Hasher()
    return {
        "name": workflow.name,
        "inputs": list(workflow.inputs),
        "steps": [_step(step, hasher) for step in workflow.steps],
    }


def helper_sources(workflow: Workflow, module: types.ModuleType | None = None) -> str:
    """Return the source of the `_*.py` helpers (beside the workflow's module) it imports.

    The module is found from the workflow's own steps when not given. A
    helper is any module named `_*` whose file sits in the same folder as
    the workflow's module and that the module refers to, directly or
    through a function or class it imported.
    """
    module = module or _module_of(workflow)
    file = getattr(module, "__file__", None)
    if module is None or file is None:
        return ""
    folder = Path(file).resolve().parent
    helpers: dict[str, str] = {}
    for value in vars(module).values():
        name = (
            value.__name__
            if isinstance(value, types.ModuleType)
            else getattr(value, "__module__", None)
        )
        helper = sys.modules.get(name) if isinstance(name, str) and name.startswith("_") else None
        path = getattr(helper, "__file__", None)
        if path is not None and Path(path).resolve().parent == folder:
            helpers[name] = Path(path).read_text(encoding="utf-8", errors="replace")  # type: ignore[index] # name is a str here
    return "\n".join(f"# {name}\n{source}" for name, source in sorted(helpers.items()))


def _module_of(workflow: Workflow) -> types.ModuleType | None:
    for step in workflow.steps:
        module = sys.modules.get(getattr(step.run, "__module__", "") or "")
        if module is not None and not module.__name__.startswith("adws."):
            return module
    return None


def step_fingerprints(workflow: Workflow, helpers: str | None = None) -> dict[str, str]:
    """Return each top-level step's fingerprint, by step name."""
    hasher = _Hasher()
    shared = _digest(helper_sources(workflow) if helpers is None else helpers)
    # repr, not json.dumps: the description is built in a fixed order, and repr is faster.
    return {step.name: _digest(repr((shared, _step(step, hasher)))) for step in workflow.steps}


def fingerprint(workflow: Workflow, steps: Mapping[str, str] | None = None) -> str:
    """Return a short, stable hash of the whole workflow (its inputs and step fingerprints)."""
    steps = steps if steps is not None else step_fingerprints(workflow)
    return _digest(json.dumps([workflow.name, list(workflow.inputs), list(steps.items())]))
