"""A batch's inputs file: strict JSON per newline-separated line, read a line at a time."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adws.batch import BatchInputError, read_lines
from adws.engine.context import WorkflowContext
from adws.journal.records.codec import decode_context, encode_context
from tests.strategies import json_values

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"x": NaN}', "NaN is not allowed in strict JSON"),
        ('{"x": Infinity}', "Infinity is not allowed in strict JSON"),
        ('{"x": -Infinity}', "-Infinity is not allowed in strict JSON"),
        ('{"x": 1e999}', "number 1e999 is not finite (it overflows to inf)"),
        ('{"x": 1, "x": 2}', "duplicate key 'x'"),
    ],
)
def test_numbers_json_cannot_hold_are_refused_not_turned_into_text(
    tmp_path: Path, line: str, problem: str
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text('{"x": 1}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(BatchInputError) as caught:
        read_lines(path)
    assert str(caught.value) == f"{path}, line 2: not JSON ({problem})"


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_a_line_break_other_than_newline_inside_a_value_is_data(
    tmp_path: Path, separator: str
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(f'{{"topic": "a{separator}b"}}\n{{"topic": "c"}}\r\n', encoding="utf-8")
    assert read_lines(path) == [(1, {"topic": f"a{separator}b"}), (2, {"topic": "c"})]


def test_a_line_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"x": 1}\n{"x": "\xff"}\n')
    with pytest.raises(BatchInputError) as caught:
        read_lines(path)
    assert str(caught.value) == f"{path}, line 2: not UTF-8 (invalid start byte at byte 7)"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(value=json_values)
def test_any_json_value_in_a_line_reaches_the_runs_inputs_exactly(
    tmp_path: Path, value: object
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"value": value}) + "\n", encoding="utf-8")
    [(number, inputs)] = read_lines(path)
    stored = decode_context(encode_context(WorkflowContext(inputs=inputs)))
    assert (number, stored.inputs) == (1, WorkflowContext(inputs={"value": value}).inputs)


@given(text=st.text())
def test_any_text_in_a_line_is_read_or_refused_by_line_never_raised_otherwise(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("lines") / "runs.jsonl"
    path.write_text(text + "\n", encoding="utf-8", errors="surrogatepass")
    outcome: object
    try:
        outcome = read_lines(path)
    except BatchInputError as exc:
        outcome = str(exc)
    if isinstance(outcome, str):
        assert outcome.startswith(str(path))
    else:
        assert all(isinstance(inputs, dict) for _, inputs in outcome)
