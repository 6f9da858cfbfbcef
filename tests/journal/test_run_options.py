"""Run options: recorded with a run, reused and overridden by a resume, never trusted blindly."""

from __future__ import annotations

import json

import attrs
from hypothesis import given
from hypothesis import strategies as st

from adws.journal.records.options import RunOptions

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=10,
)
NAMES = st.sampled_from([field.name for field in attrs.fields(RunOptions)] + ["other"])


@given(st.dictionaries(NAMES, JSON) | JSON)
def test_a_journal_row_of_any_json_decodes_to_options_adws_could_have_recorded(
    row: object,
) -> None:
    options = RunOptions.from_json(json.dumps(row))
    for name, value in options.to_dict().items():
        if name in {"max_cost", "max_wait"}:
            assert isinstance(value, int | float)
            assert 0 <= value < float("inf")
        elif name in {"max_tokens", "max_agents"}:
            assert isinstance(value, int)
            assert not isinstance(value, bool)
            assert (1 if name == "max_agents" else 0) <= value < 2**63
        elif name in {"no_transcripts", "raised"}:
            assert value is True  # False is never recorded: it is the default
        elif name == "on_budget":
            assert value in {"fail", "ask"}
        elif name == "park_at":
            assert isinstance(value, int | float)
            assert 0 <= value <= 1
        else:
            assert isinstance(value, str)


def test_text_that_is_not_json_or_not_an_object_decodes_to_no_options() -> None:
    assert RunOptions.from_json("{not json") == RunOptions()
    assert RunOptions.from_json("[1, 2]") == RunOptions()
    assert RunOptions.from_json("[" * 5000) == RunOptions()
    assert RunOptions.from_json(None) == RunOptions()


@given(
    st.builds(
        RunOptions,
        agent=st.none() | st.text(),
        max_cost=st.none() | st.floats(min_value=0, max_value=1e6),
        max_tokens=st.none() | st.integers(min_value=0, max_value=2**63 - 1),
        max_agents=st.none() | st.integers(min_value=1, max_value=1000),
        record=st.none() | st.text(),
        park_at=st.none() | st.floats(min_value=0, max_value=1),
    )
)
def test_recorded_options_read_back_exactly(options: RunOptions) -> None:
    assert RunOptions.from_json(options.to_json()) == options


def test_a_given_option_overrides_the_recorded_one_and_says_what_was_recorded() -> None:
    recorded = RunOptions(agent="sh demo.sh", max_cost=0.005, workflows="/w")
    used, changed = recorded.merged(RunOptions(max_cost=1.0, workflows="/w"))
    assert used == RunOptions(agent="sh demo.sh", max_cost=1.0, workflows="/w")
    assert changed == {"max_cost": 0.005}
    assert used.describe(changed, hide=("workflows",)) == (
        "agent: 'sh demo.sh', max_cost: 1.0 (recorded: 0.005)"
    )


def test_record_and_replay_replace_each_other() -> None:
    used, changed = RunOptions(record="/r").merged(RunOptions(replay="/p"))
    assert (used, changed) == (RunOptions(replay="/p"), {"record": "/r", "replay": None})
    assert used.describe(changed) == "record: none (recorded: '/r'), replay: '/p' (recorded: none)"


def test_nothing_recorded_and_nothing_given_describes_as_nothing() -> None:
    assert RunOptions().merged(RunOptions()) == (RunOptions(), {})
    assert RunOptions().describe() == ""
    assert RunOptions().to_json() is None


def test_a_park_at_past_the_whole_window_is_not_read_back() -> None:
    assert RunOptions.from_json('{"park_at": 0.9}') == RunOptions(park_at=0.9)
    assert RunOptions.from_json('{"park_at": 1.5}') == RunOptions()
    assert RunOptions.from_json('{"park_at": -0.1}') == RunOptions()
