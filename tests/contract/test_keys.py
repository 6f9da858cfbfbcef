"""Typed keys: Key(name, type), ctx.get, merge_outputs and Step(reads=, writes=)."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from returns.io import IOResult, IOSuccess

from adws import Key, PipelineError, Step, WorkflowContext
from tests.conftest import REPO

if TYPE_CHECKING:
    from pathlib import Path

COUNT = Key("count", int)


def nothing(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


def test_get_returns_the_value_typed_as_the_key_declares() -> None:
    assert str(COUNT) == "count"
    ctx = WorkflowContext({"count": 3})
    assert ctx.get(COUNT) == 3
    assert dict(ctx.merge_outputs({COUNT: 4, Key("label", str): "x"}).outputs) == {
        "count": 4,
        "label": "x",
    }


def test_a_value_of_another_type_fails_at_the_read_naming_the_key() -> None:
    with pytest.raises(TypeError, match="'count' holds a str, not the int its Key declares"):
        WorkflowContext({"count": "3"}).get(COUNT)


def test_a_missing_value_names_the_key_and_what_there_is() -> None:
    with pytest.raises(KeyError, match="no value named 'count' \\(have other\\)"):
        WorkflowContext({"other": 1}).get(COUNT)
    with pytest.raises(KeyError, match="\\(have none\\)"):
        WorkflowContext().get(COUNT)


def test_a_generic_key_checks_its_class() -> None:
    pairs = Key("pairs", tuple[str, ...])
    assert WorkflowContext({"pairs": ("a",)}).get(pairs) == ("a",)
    with pytest.raises(TypeError, match="'pairs' holds a str, not the tuple its Key declares"):
        WorkflowContext({"pairs": "a"}).get(pairs)


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: Key("Bad Name", int), ValueError, "Key name 'Bad Name' is not an identifier"),
        (
            lambda: Key("claims", list[str]),
            ValueError,
            "Key 'claims': a context freezes every value, so it never holds a list; declare tuple",
        ),
        (
            lambda: Step("s", nothing, reads="topic"),
            TypeError,
            "reads and writes must be a tuple of names or Keys, got 'topic'",
        ),
        (
            lambda: Step("s", nothing, writes=3),
            TypeError,
            "reads and writes must be a tuple of names or Keys, got 3",
        ),
        (
            lambda: Step("s", nothing, reads=("Topic",)),
            ValueError,
            "'Topic' cannot be read or written",
        ),
        (lambda: Step("s", nothing, reads=(3,)), ValueError, "3 cannot be read or written"),
    ],
)
def test_impossible_keys_and_declarations_are_refused(
    build: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        build()  # type: ignore[operator] # a lambda


def test_reads_and_writes_take_keys_or_names() -> None:
    step = Step("s", nothing, reads=(COUNT, "label"), writes=())
    assert (step.reads, step.writes) == (("count", "label"), ())


def test_mypy_sees_the_type_a_key_declares(tmp_path: Path) -> None:
    """`ctx.get(KEY)` is typed: mypy reveals the key's type and refuses a wrong use."""
    source = tmp_path / "typed.py"
    source.write_text(
        "from adws import Key, WorkflowContext\n"
        "COUNT = Key('count', int)\n"
        "PAIRS = Key('pairs', tuple[str, ...])\n"
        "def use(ctx: WorkflowContext) -> None:\n"
        "    reveal_type(ctx.get(COUNT))\n"
        "    reveal_type(ctx.get(PAIRS))\n"
        "    ctx.get(COUNT).upper()\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(source)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    lines = [
        line.split(": ", 1)[1] for line in done.stdout.splitlines() if line.startswith(str(source))
    ]
    assert lines == [
        'note: Revealed type is "int"',
        'note: Revealed type is "tuple[str, ...]"',
        'error: "int" has no attribute "upper"  [attr-defined]',
    ]
