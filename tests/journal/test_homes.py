"""A journal names adws's own objects by their first home, and reads either home back."""

from __future__ import annotations

import dataclasses
import importlib.util
import json

from adws import PipelineError, WorkflowContext
from adws.engine.usage import Usage
from adws.journal.identity._canonical import Describer
from adws.journal.identity._homes import FIRST_HOMES, first_home, home_now
from adws.journal.records.codec import decode_context, encode_context
from adws.testing import Reply


def test_every_module_the_table_names_exists_now() -> None:
    assert [name for name in FIRST_HOMES if importlib.util.find_spec(name) is None] == []


def test_no_first_home_is_a_module_of_today_but_three_that_kept_their_names() -> None:
    """`adws.contract` and `adws.shell` are packages now, `model_api` kept `FakeModelAPI`."""
    still = {home for home in FIRST_HOMES.values() if importlib.util.find_spec(home) is not None}
    assert still == {"adws.contract", "adws.shell", "adws.testing.model_api"}


def test_a_moved_module_is_written_under_its_first_home_and_read_back_under_either() -> None:
    assert (first_home("adws.engine.usage"), home_now("adws.usage")) == (
        "adws.usage",
        "adws.engine.usage",
    )
    assert (first_home("workflows.mine"), home_now("workflows.mine")) == (
        "workflows.mine",
        "workflows.mine",
    )


def test_a_stored_adws_schema_keeps_the_name_older_journals_gave_it() -> None:
    ctx = WorkflowContext(inputs={"spent": Usage(cost_usd=0.5)})
    stored = json.loads(encode_context(ctx))
    assert stored["inputs"]["spent"]["__adws_attrs__"] == "adws.usage:Usage"
    assert decode_context(encode_context(ctx)).inputs["spent"] == Usage(cost_usd=0.5)


def test_a_row_written_under_the_new_home_is_read_too() -> None:
    row = json.dumps(
        {"inputs": {"u": {"__adws_attrs__": "adws.engine.usage:Usage", "value": {"cost_usd": 1.0}}}}
    )
    assert decode_context(row).inputs["u"] == Usage(cost_usd=1.0)


def test_a_field_typed_with_an_adws_class_is_described_under_its_first_home() -> None:
    """A journal from before the move fingerprinted `<class 'adws.usage.Usage'>`."""
    owner = dataclasses.make_dataclass("Spent", [("usage", Usage)])
    described = Describer()
    assert described.annotation(Usage, owner) == "<class 'adws.usage.Usage'>['adws.usage:Usage']"
    assert described.annotation(tuple[PipelineError], owner).startswith(
        "tuple[adws.errors.PipelineError]"
    )


def test_a_stored_class_is_looked_for_where_its_module_lives_now_then_under_the_name() -> None:
    moved = '{"inputs": {"r": {"__adws_attrs__": "adws.testing.model_api:Reply", "value": {"kind": "drop"}}}}'
    assert decode_context(moved).inputs["r"] == Reply.drop()
    not_a_schema = '{"inputs": {"f": {"__adws_attrs__": "adws.testing.model_api:FakeModelAPI", "value": {"a": 1}}}}'
    assert dict(decode_context(not_a_schema).inputs["f"]) == {"a": 1}
