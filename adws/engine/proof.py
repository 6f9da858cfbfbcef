"""What a verification proved: the targets that must pass, how each fared, and the proof.

A baseline answers "did the agent break anything?", not "did it fix the
bug?". `with_verification(..., must_pass=...)` names the failures the work
is for (the anchor is SWE-bench's FAIL_TO_PASS): ids or globs, the word
`baseline` (every failure the baseline had) or `reproduced` (the tests a
`reproduce` step wrote). This module holds the pure part:

- `MustPass` reads what `must_pass` asks for, at definition time and from
  the inputs at run time (a placeholder `{key}`);
- `Checked` is one run of the verify step by id: what failed, what it
  listed as passed (pytest `-rA`, JUnit), whether it named its failures;
- `matching` resolves ids and globs against what the baseline saw;
- `target_state` says whether a target passed, failed or did not run;
- `Proof` is what a round proved, in the order a person reads it: targets
  fixed, new failures, pre-existing failures left, flaky ones.

A target passes only when the round ran it and it passed. A test id (it
holds `::`, or it is a module, `path.py`) must be listed as passed; one
the round neither failed nor listed did not run (deleted, renamed,
deselected, not collected, a module that no longer imports) and counts
as failing. Any other id (a ruff or mypy finding, `exit status`) passes
once the check no longer names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final, Literal, TypeAlias, final

import attrs

from adws._exceptions import DefinitionError
from adws.engine.errors import ErrorType, PipelineError

__all__ = [
    "EXIT_STATUS",
    "REPRODUCER_CHECK",
    "REPRODUCER_FILES",
    "REPRODUCER_IDS",
    "Checked",
    "MustPass",
    "Proof",
    "State",
    "is_test_id",
    "matches",
    "matching",
    "target_state",
]

EXIT_STATUS: Final = "exit status"
"""The id of a failure no parser could name: the check's exit status alone."""
REPRODUCER_IDS: Final = "reproducer_ids"
"""The input a `reproduce` step fills with its tests' ids (`must_pass="reproduced"` reads it)."""
REPRODUCER_FILES: Final = "reproducer_files"
"""The input a `reproduce` step fills with the files it wrote (protected from the fixer)."""
REPRODUCER_CHECK: Final = "reproducer_check"
"""The input a `reproduce` step fills with its last run of the checks and the files it ran on:
a `with_verification` that starts on the same files takes it as its baseline."""

State: TypeAlias = Literal["passed", "failing", "did not run"]
_WORDS: Final = ("baseline", "reproduced")
_PLACEHOLDER: Final = re.compile(r"\{(?P<key>[A-Za-z_][A-Za-z0-9_]*)\}")
_UNCHECKED: Final = (
    "no target had to pass: the change was only checked to break nothing"
    " (name tests in must_pass, or reproduce the problem first)"
)
"""What a proof with no target says first: a baseline proves nothing was fixed."""
_WHOLE: Final = "the whole check (it failed naming no test)"
_SHOWN: Final = 10
"""How many ids a line of a proof names before it says how many more there are."""


def is_test_id(name: str) -> bool:
    """Tell whether `name` is a test's id (`path::name`, a JUnit `class::name`) or a module's.

    >>> is_test_id("tests/t.py::test_a[1]"), is_test_id("tests/t.py"), is_test_id("a.py: F401 x")
    (True, True, False)
    """
    return "::" in name or name.endswith(".py")


def matches(pattern: str, name: str) -> bool:
    """Tell whether the id or glob `pattern` names `name`.

    A pattern with `*` (any characters, `/` and `::` included) or `?` (one)
    is a glob; anything else, brackets included, is taken as written, so a
    parametrized id matches itself. Globs are data: nothing is expanded
    against files.

    >>> matches("tests/t.py::*", "tests/t.py::test_a[1]"), matches("t.py::a[1]", "t.py::a[1]")
    (True, True)
    >>> matches("t.py::a[12]", "t.py::a1")
    False
    """
    if "*" not in pattern and "?" not in pattern:
        return pattern == name
    parts = (
        ".*" if part == "*" else "." if part == "?" else re.escape(part) for part in _split(pattern)
    )
    return re.fullmatch("".join(parts), name, re.DOTALL) is not None


def _split(pattern: str) -> list[str]:
    return [part for part in re.split(r"([*?])", pattern) if part]


def matching(
    patterns: Sequence[str], seen: Sequence[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Resolve ids and globs against the ids the baseline saw: (the ids named, the patterns that named none).

    >>> matching(["t.py::*", "t.py::tset"], ["t.py::a", "t.py::b", "u.py::c"])
    (('t.py::a', 't.py::b'), ('t.py::tset',))
    """  # noqa: E501
    named: set[str] = set()
    unmatched: list[str] = []
    for pattern in patterns:
        found = {name for name in seen if matches(pattern, name)}
        if found:
            named |= found
        else:
            unmatched.append(pattern)
    return tuple(sorted(named)), tuple(unmatched)


@final
@attrs.frozen
class Checked:
    """One run of the verify step, by id.

    `failing` maps each failure's id to the line that says so; `passed`
    holds the ids the check listed as passed (None: it lists none, so only
    failures are compared); `ok` says the step succeeded; `named` that its
    failures were named by a parser (a crash or a bare exit status is not).
    """

    failing: Mapping[str, str]
    passed: frozenset[str] | None
    ok: bool
    named: bool = True

    def seen(self) -> tuple[str, ...]:
        """Every id the run named, failing or passed (sorted)."""
        return tuple(sorted({*self.failing, *(self.passed or ())}))

    def to_dict(self) -> dict[str, object]:
        """Return the run as outputs hold it (`from_dict` reads it back).

        >>> Checked.from_dict(Checked({"a": "A"}, frozenset({"b"}), ok=False).to_dict())
        Checked(failing={'a': 'A'}, passed=frozenset({'b'}), ok=False, named=True)
        """
        passed = None if self.passed is None else sorted(self.passed)
        return {"failing": dict(self.failing), "passed": passed, "ok": self.ok, "named": self.named}

    @classmethod
    def from_dict(cls, value: object) -> Checked | None:
        """Read back what `to_dict` wrote; None for anything else (a journal row may say anything).

        >>> Checked.from_dict({"failing": {"a": 1}, "passed": None, "ok": True, "named": True})
        """
        if not isinstance(value, Mapping):
            return None
        failing, passed = value.get("failing"), value.get("passed")
        ok, named = value.get("ok"), value.get("named")
        if not isinstance(failing, Mapping) or not _texts([*failing.keys(), *failing.values()]):
            return None
        if (passed is not None and not _texts(passed)) or not isinstance(ok, bool):
            return None
        if not isinstance(named, bool):
            return None
        known = None if passed is None else frozenset(passed)
        return cls({str(k): str(v) for k, v in failing.items()}, known, ok=ok, named=named)


def _texts(value: object) -> bool:
    """Tell whether `value` is a list or tuple of strings."""
    return isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)


def target_state(target: str, checked: Checked) -> State:
    """Say how a target fared in a run: passed, failing, or did not run (see the module docstring).

    >>> run = Checked({"t.py::a": "FAILED t.py::a"}, frozenset({"t.py::b", "u.py::c"}), ok=False)
    >>> [target_state(t, run) for t in ("t.py::a", "t.py::b", "t.py::gone", "u.py", "ruff: E1 x")]
    ['failing', 'passed', 'did not run', 'passed', 'passed']
    """
    if target in checked.failing:
        return "failing"
    if not is_test_id(target):
        return "passed"
    passed = checked.passed or frozenset()
    if target in passed:
        return "passed"
    module = "::" not in target and any(name.startswith(f"{target}::") for name in passed)
    return "passed" if module else "did not run"


@final
@attrs.frozen
class MustPass:
    """What `must_pass` asks for: ids and globs, the words, or an input that holds them.

    >>> MustPass.of("w", ("baseline", "t.py::a"))
    MustPass(patterns=('t.py::a',), baseline=True, reproduced=False, source=None)
    >>> MustPass.of("w", "{targets}").source
    'targets'
    """

    patterns: tuple[str, ...] = ()
    baseline: bool = False
    reproduced: bool = False
    source: str | None = None

    @classmethod
    def of(cls, owner: str, must_pass: object) -> MustPass:
        """Read `must_pass` at definition time; refuse what it cannot be (`ValueError`)."""
        if isinstance(must_pass, str):
            if must_pass in _WORDS:
                return cls.words((must_pass,))
            placeholder = _PLACEHOLDER.fullmatch(must_pass)
            if placeholder is not None:
                return cls(source=placeholder["key"])
        elif isinstance(must_pass, Sequence) and all(
            isinstance(item, str) and item.strip() for item in must_pass
        ):
            return cls.words(tuple(str(item).strip() for item in must_pass))
        msg = (
            f"{owner}: must_pass must be a tuple of test ids or globs, 'baseline', 'reproduced'"
            f" or an input placeholder such as '{{must_pass}}', got {must_pass!r}"
        )
        raise DefinitionError(msg)

    @classmethod
    def words(cls, items: Sequence[str]) -> MustPass:
        """Split items into the words `baseline` and `reproduced` and the ids or globs."""
        return cls(
            tuple(item for item in items if item not in _WORDS),
            "baseline" in items,
            "reproduced" in items,
        )

    def __bool__(self) -> bool:
        """Tell whether anything must pass (an input may still name nothing)."""
        return bool(self.patterns or self.baseline or self.reproduced or self.source)

    def resolved(self, inputs: Mapping[str, object], step_name: str) -> MustPass | PipelineError:
        """Read the input `source` names: a list of ids or globs, or one string of them.

        A string is split on whitespace (an id with a space in it needs a
        list: `--inputs FILE.json`); empty names nothing, and then only
        "nothing broke" is checked. Anything else is `MissingInput`.
        """
        if self.source is None:
            return self
        if self.source not in inputs:
            message = (
                f"must_pass of step {step_name!r} reads input {self.source!r}; inputs available:"
                f" {', '.join(sorted(inputs)) or 'none'}"
            )
            return PipelineError(
                step_name, ErrorType.MISSING_INPUT, message, {"missing": [self.source]}
            )
        value = inputs[self.source]
        if isinstance(value, str):
            return MustPass.words(tuple(value.split()))
        if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
            return MustPass.words(tuple(item.strip() for item in value if item.strip()))
        message = (
            f"must_pass of step {step_name!r}: input {self.source!r} must be test ids (a list,"
            f" or one string of them), got {type(value).__name__}"
        )
        return PipelineError(
            step_name,
            ErrorType.MISSING_INPUT,
            message,
            {"missing": [self.source], "permanent": True},
        )


def _names(ids: Sequence[str]) -> str:
    """Name up to ten ids, then how many more (the bare exit status as what it stands for).

    >>> _names(["a", "b"]), _names([]), _names([EXIT_STATUS])
    ('a, b', 'none', 'the whole check (it failed naming no test)')
    """
    if not ids:
        return "none"
    named = [_WHOLE if name == EXIT_STATUS else name for name in ids[:_SHOWN]]
    shown = ", ".join(named)
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def _counted(label: str, ids: Sequence[str]) -> str:
    return f"{label} ({len(ids)}): {_names(ids)}" if ids else f"{label}: none"


@final
@attrs.frozen
class Proof:
    """What a verification proved, as the approval question, `adws status` and the report show it.

    `targets` are the ids that had to pass; `fixed` those among them that
    failed (or did not run) at the baseline and passed; `passing` those that
    passed at the baseline already; `failing` maps each target that did not
    pass to why (`failing: ...` or `did not run`). `new` are the failures
    the baseline did not have, `left` the baseline's failures (not targets)
    still failing, `flaky` the failures that passed on a recheck, and `kept`
    the number of ids that passed before and still pass (None where the
    check lists no passes).
    """

    targets: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    passing: tuple[str, ...] = ()
    failing: Mapping[str, str] = attrs.field(factory=dict)
    new: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    kept: int | None = None

    def lines(self) -> list[str]:
        r"""Say what was proved, in order: targets, new failures, pre-existing left, flaky.

        >>> print("\n".join(Proof(("t.py::a",), fixed=("t.py::a",), left=("t.py::old",), kept=3).lines()))
        targets fixed (1): t.py::a
        new failures: none
        pre-existing failures left (1): t.py::old
        flaky: none
        kept passing: 3
        """  # noqa: E501
        if not self.targets:
            lines = [_UNCHECKED]
        else:
            lines = [_counted("targets fixed", self.fixed)]
            if self.passing:
                lines.append(_counted("targets passing before too", self.passing))
            if self.failing:
                why = [f"{target} ({self.failing[target]})" for target in sorted(self.failing)]
                lines.append(f"targets not passing ({len(why)}): {_names(why)}")
        lines += [
            _counted("new failures", self.new),
            _counted("pre-existing failures left", self.left),
            _counted("flaky", self.flaky),
        ]
        if self.kept is not None:
            lines.append(f"kept passing: {self.kept}")
        return lines

    def to_dict(self) -> dict[str, object]:
        """Return the proof as outputs and journal rows hold it, with its `text`."""
        return {
            "targets": list(self.targets),
            "fixed": list(self.fixed),
            "passing": list(self.passing),
            "failing": dict(sorted(self.failing.items())),
            "new": list(self.new),
            "left": list(self.left),
            "flaky": list(self.flaky),
            "kept": self.kept,
            "text": "\n".join(self.lines()),
        }
