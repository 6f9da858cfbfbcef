"""The journal's JSON encoding keeps types that resume needs."""

from __future__ import annotations

import json
import math

from adws import PipelineError, WorkflowContext
from adws.codec import decode_context, decode_error, encode_context, encode_error, to_json
from tests.strategies import Claim, Packet
from tests.test_contract import _Unresolvable


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


def test_an_attrs_value_cattrs_cannot_unstructure_is_stored_as_its_repr() -> None:
    value = _Unresolvable(1)
    assert json.loads(to_json(value)) == {"__adws_repr__": "_Unresolvable(thing=1)"}
