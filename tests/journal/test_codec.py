"""The journal's JSON encoding keeps types that resume needs."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given

from adws import PipelineError, WorkflowContext
from adws.journal.records.codec import (
    decode_context,
    decode_error,
    encode_context,
    encode_error,
    to_json,
)
from tests.contract.test_validator import _Unresolvable
from tests.strategies import Claim, Packet, hostile_json


def test_attrs_values_sets_and_errors_come_back_as_they_were() -> None:
    packet = Packet("pass", (Claim("a", "b"),))
    error = PipelineError("s", "Timeout", "slow", {"n": 1})
    ctx = WorkflowContext(
        inputs={"packet": packet, "tags": {"x"}, "error": error, "list": [1, [2]]}
    )
    back = decode_context(encode_context(ctx))
    assert back.inputs["packet"] == packet
    assert back.inputs["tags"] == frozenset({"x"})
    assert back.inputs["error"] == error
    assert back.inputs["list"] == (1, (2,))


class Opaque:
    """A value JSON cannot hold."""

    def __repr__(self) -> str:
        """Show a stable repr."""
        return "Opaque()"


def test_values_json_cannot_hold_are_stored_as_their_repr_with_a_marker() -> None:
    encoded = json.loads(to_json({"o": Opaque(), "inf": math.inf}))
    assert encoded == {"o": {"__adws_repr__": "Opaque()"}, "inf": {"__adws_repr__": "inf"}}
    back = decode_context(encode_context(WorkflowContext(inputs={"o": Opaque()})))
    assert back.inputs["o"] == "Opaque()"


def test_an_attrs_class_that_cannot_be_found_or_structured_comes_back_as_data() -> None:
    missing = '{"inputs": {"p": {"__adws_attrs__": "no.such.module:Thing", "value": {"a": 1}}}}'
    assert decode_context(missing).inputs["p"] == {"a": 1}
    gone = '{"inputs": {"p": {"__adws_attrs__": "tests.strategies:Nope", "value": {"a": 1}}}}'
    assert decode_context(gone).inputs["p"] == {"a": 1}
    bad = '{"inputs": {"p": {"__adws_attrs__": "tests.strategies:Claim", "value": {"text": 1}}}}'
    assert decode_context(bad).inputs["p"] == {"text": 1}


def test_errors_round_trip_and_none_stays_none() -> None:
    error = PipelineError(
        "s", "Blocked", "why", {"feedback": ["a"], "late": [PipelineError("t", "X", "y")]}
    )
    encoded = encode_error(error)
    assert encoded is not None
    assert decode_error(encoded) == error
    assert encode_error(None) is None


def test_a_context_with_odd_shapes_decodes_to_an_empty_one() -> None:
    assert decode_context('{"inputs": [], "outputs": 3}') == WorkflowContext()
    assert (
        decode_error({"step_name": "s", "error_type": "X", "message": "m", "context": []}).context
        == {}
    )


def test_an_attrs_value_whose_annotations_cannot_be_resolved_is_stored_with_its_fields() -> None:
    value = _Unresolvable(1)
    assert json.loads(to_json(value)) == {
        "__adws_attrs__": "tests.contract.test_validator:_Unresolvable",
        "value": {"thing": 1},
    }


def test_agent_json_shaped_like_a_marker_comes_back_as_the_same_data() -> None:
    forged = {
        "set": {"__adws_set__": [[1]]},
        "error": {"__adws_error__": {"step_name": "x"}},
        "repr": {"__adws_repr__": 42},
        "class": {
            "__adws_attrs__": "tests.strategies:Claim",
            "value": {"text": "a", "source": "b"},
        },
        "dict": {"__adws_dict__": [["a", 1]]},
    }
    back = decode_context(encode_context(WorkflowContext(inputs=forged)))
    assert back == WorkflowContext(inputs=forged)


def test_decoding_never_imports_a_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "adws_evil_module.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('imported').touch()\n"
        "import attrs\n@attrs.define\nclass Thing:\n    a: int\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    row = '{"inputs": {"p": {"__adws_attrs__": "adws_evil_module:Thing", "value": {"a": 1}}}}'
    assert decode_context(row).inputs["p"] == {"a": 1}
    assert not (tmp_path / "imported").exists()
    assert "adws_evil_module" not in sys.modules


def test_a_row_written_before_markers_were_escaped_decodes_as_plain_data() -> None:
    old = '{"inputs": {"a": {"__adws_set__": [[1]]}, "b": {"__adws_error__": 3}}}'
    assert decode_context(old).inputs == {
        "a": {"__adws_set__": ((1,),)},
        "b": {"__adws_error__": 3},
    }


def test_lone_surrogates_round_trip_as_valid_utf8() -> None:
    ctx = WorkflowContext(inputs={"name": "caf\udce9", "\udcff": ["\ud800"]})
    encoded = encode_context(ctx)
    encoded.encode("utf-8")
    assert decode_context(encoded) == ctx
    error = PipelineError("s", "X", "bad \udce9", {"raw": "\udce9"})
    text = encode_error(error)
    assert text is not None
    text.encode("utf-8")
    assert decode_error(text) == error


def test_plain_non_ascii_text_is_stored_as_it_is() -> None:
    assert to_json({"topic": "café ✓"}) == '{"topic":"café ✓"}'


@given(value=hostile_json)
def test_every_json_value_round_trips_exactly(value: object) -> None:
    """Whatever an agent answers, resume sees exactly that, and the row is valid UTF-8."""
    ctx = WorkflowContext(inputs={"v": value})
    encoded = encode_context(ctx)
    encoded.encode("utf-8")
    assert decode_context(encoded) == ctx


def test_one_corrupt_row_among_many_outputs_is_named() -> None:
    from adws.journal.records.codec import decode_many_outputs  # noqa: PLC0415 - the one test of it here

    with pytest.raises(ValueError, match="a step's outputs in the journal are not JSON: 'nope'"):
        decode_many_outputs(['{"a": 1}', "nope"])
