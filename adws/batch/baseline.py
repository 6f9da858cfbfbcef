"""An evaluation's baseline file, and the gate a later evaluation must pass against it.

`adws eval W TASKS --save-baseline FILE` writes what it measured as JSON:
the workflow, each variant's passes out of its runs that ended, the hash
of the tasks file and the adws version that wrote it. `--baseline FILE
--fail-under RATE` reads it back and fails a variant when its 95% Wilson
lower bound is under RATE, or when its pass rate is significantly below
the baseline's (Fisher's exact test, p < 0.05, and lower). A variant is
compared with the baseline's variant of the same name, else with the
baseline's only variant when it holds one (a `--variant new:...` against
a baseline of the default), else with none (said, not failed).

A file that is not one adws wrote (not JSON, another shape, negative or
impossible counts) or one of another workflow is refused, naming why.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from adws._exceptions import MalformedError
from adws.batch.evaluation import fisher_exact, p_said

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.batch.evaluation import EvalScore

__all__ = ["FORMAT", "LEVEL", "Baseline", "BaselineError", "gate", "tasks_hash"]

FORMAT: Final = "adws-eval-baseline/1"
"""What the `format` key of every baseline adws writes says."""

LEVEL: Final = 0.05
"""Below this p-value a pass rate under the baseline's is significantly below it."""


class BaselineError(MalformedError):
    """A baseline file adws did not write, or of another workflow: why, in words."""


def tasks_hash(data: bytes) -> str:
    r"""Return the hash that names a tasks file's content.

    >>> tasks_hash(b"{}\n")[:12]
    'sha256:ca3d1'
    """
    return "sha256:" + hashlib.sha256(data).hexdigest()


@final
@attrs.frozen
class Baseline:
    """What an evaluation measured: passes out of ended runs per variant, on which tasks."""

    workflow: str
    variants: dict[str, tuple[int, int]]
    """Each variant's `(passed, runs)`; runs left waiting for approval are not counted."""
    tasks: str
    """The tasks file's `tasks_hash`."""
    version: str

    @classmethod
    def of(cls, workflow: str, scores: Sequence[EvalScore], tasks: str, version: str) -> Baseline:
        """Take a baseline from an evaluation's scores."""
        counted = {s.variant: (s.passed, s.runs - s.waiting) for s in scores}
        return cls(workflow, counted, tasks, version)

    def to_json(self) -> str:
        """Write the baseline file's text."""
        variants = [
            {"name": name, "passed": passed, "runs": runs}
            for name, (passed, runs) in self.variants.items()
        ]
        document = {
            "format": FORMAT,
            "workflow": self.workflow,
            "variants": variants,
            "tasks": self.tasks,
            "adws_version": self.version,
        }
        return json.dumps(document, indent=2) + "\n"

    @classmethod
    def parse(cls, text: str, workflow: str) -> Baseline:
        """Read a baseline file for `workflow`; anything else is a `BaselineError` saying why."""
        try:
            document: Any = json.loads(text)
        except ValueError as exc:
            msg = f"it is not JSON ({exc})"
            raise BaselineError(msg) from exc
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            msg = f"it is no baseline adws eval --save-baseline wrote (no format {FORMAT!r})"
            raise BaselineError(msg)
        fields = (document.get(key) for key in ("workflow", "tasks", "adws_version"))
        named, tasks, version = fields
        if not all(isinstance(value, str) for value in (named, tasks, version)):
            msg = "its workflow, tasks and adws_version must be strings"
            raise BaselineError(msg)
        if named != workflow:
            msg = f"it is a baseline of workflow {named!r}, not {workflow!r}"
            raise BaselineError(msg)
        return cls(str(named), _variants(document.get("variants")), str(tasks), str(version))


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _variants(listed: object) -> dict[str, tuple[int, int]]:
    """Read the `variants` list: distinct names, passes no more than runs."""
    if not isinstance(listed, list) or not listed:
        msg = "its variants must be a non-empty list"
        raise BaselineError(msg)
    variants: dict[str, tuple[int, int]] = {}
    for index, entry in enumerate(listed):
        if not isinstance(entry, dict):
            msg = f"variant {index} is not an object"
            raise BaselineError(msg)
        name, passed, runs = (
            entry.get("name"),
            _count(entry.get("passed")),
            _count(entry.get("runs")),
        )
        if not isinstance(name, str) or not name or name in variants:
            msg = f"variant {index} has no name of its own"
            raise BaselineError(msg)
        if passed is None or runs is None or passed > runs:
            msg = f"variant {name!r}: passed and runs must be counts, passed <= runs"
            raise BaselineError(msg)
        variants[name] = (passed, runs)
    return variants


def _against(baseline: Baseline, name: str) -> str | None:
    if name in baseline.variants:
        return name
    return next(iter(baseline.variants)) if len(baseline.variants) == 1 else None


def gate(
    scores: Sequence[EvalScore], baseline: Baseline | None, fail_under: float | None
) -> tuple[list[str], list[str]]:
    """Judge each variant: `(failures, notes)`, each a sentence naming the variant.

    A variant fails when its Wilson lower bound is under `fail_under`, or
    when its pass rate is below its baseline's and Fisher's exact test on
    the two says p < 0.05. A variant with nothing to compare with is a note.
    """
    failures: list[str] = []
    notes: list[str] = []
    for s in scores:
        if fail_under is not None and s.low < fail_under:
            failures.append(
                f"variant {s.variant}: its 95% Wilson lower bound {s.low:.3f} is under"
                f" --fail-under {fail_under:g} ({s.passed}/{s.runs - s.waiting} passed)"
            )
        if baseline is None:
            continue
        against = _against(baseline, s.variant)
        if against is None:
            known = ", ".join(baseline.variants)
            notes.append(f"variant {s.variant}: the baseline has no variant of that name ({known})")
            continue
        passed, runs = baseline.variants[against]
        ended = s.runs - s.waiting
        if runs == 0 or ended == 0 or s.passed / ended >= passed / runs:
            continue
        p_value = fisher_exact(s.passed, ended - s.passed, passed, runs - passed)
        if p_value < LEVEL:
            failures.append(
                f"variant {s.variant}: {s.passed}/{ended} passed, significantly below the"
                f" baseline's {against} {passed}/{runs} (Fisher's exact test, {p_said(p_value)})"
            )
    return failures, notes
