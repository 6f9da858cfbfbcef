"""WorkflowContext and its frozen mappings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adws import PipelineError, WorkflowContext
from adws._frozen import FrozenMap, freeze, freeze_mapping


def test_mappings_are_copied_on_the_way_in() -> None:
    items = [1, 2]
    source: dict[str, object] = {"a": items, "b": {"c": 3}}
    ctx = WorkflowContext(inputs=source)
    items.append(3)
    source["z"] = 0
    assert dict(ctx.inputs) == {"a": (1, 2), "b": {"c": 3}}


def test_nested_values_are_read_only() -> None:
    ctx = WorkflowContext(inputs={"b": {"c": [1]}, "s": {1}})
    with pytest.raises(TypeError):
        ctx.inputs["b"]["c"] = 2
    assert ctx.inputs["b"]["c"] == (1,)
    assert ctx.inputs["s"] == frozenset({1})


def test_merge_outputs_and_add_feedback_return_new_contexts() -> None:
    ctx = WorkflowContext(inputs={"a": 1})
    merged = ctx.merge_outputs({"x": 1}).merge_outputs({"x": 2, "y": 3})
    told = merged.add_feedback("try harder")
    assert dict(ctx.outputs) == {}
    assert dict(merged.outputs) == {"x": 2, "y": 3}
    assert (merged.feedback, told.feedback) == ((), ("try harder",))


def test_feedback_given_as_one_string_is_one_line() -> None:
    assert WorkflowContext(feedback="only").feedback == ("only",)


def test_promotion_clears_feedback_and_outputs() -> None:
    ctx = WorkflowContext(inputs={"a": 1}, feedback=("x",))
    promoted = ctx.promote_outputs().unwrap()
    assert (dict(promoted.inputs), promoted.feedback) == ({"a": 1}, ())
    same = WorkflowContext(inputs={"a": 1})
    assert same.promote_outputs().unwrap() == same


def test_promotion_lists_every_clashing_key() -> None:
    error = WorkflowContext({"a": 1, "b": 2}, {"a": 0, "b": 0, "c": 0}).promote_outputs().failure()
    assert error == PipelineError(
        "",
        "ContextCollision",
        "outputs 'a', 'b' would overwrite existing inputs",
        {"keys": ["a", "b"]},
    )


def test_an_older_view_keeps_its_entries_after_a_newer_one_grew() -> None:
    base = FrozenMap().extend({"a": 1})
    first = base.extend({"b": 2})
    branch = base.extend({"c": 3})
    assert (dict(base), dict(first), dict(branch)) == ({"a": 1}, {"a": 1, "b": 2}, {"a": 1, "c": 3})
    assert "b" not in base
    assert "c" not in first
    with pytest.raises(KeyError):
        base["b"]


def test_extend_with_an_existing_key_replaces_it_in_the_new_view_only() -> None:
    base = FrozenMap().extend({"a": 1, "b": 2})
    changed = base.extend({"a": 9})
    assert (dict(base), dict(changed)) == ({"a": 1, "b": 2}, {"a": 9, "b": 2})
    assert list(changed) == ["a", "b"]


def test_frozen_maps_compare_like_dicts_and_are_unhashable() -> None:
    view = freeze_mapping({"a": 1})
    assert view == {"a": 1}
    assert view != {"a": 2}
    assert view != [("a", 1)]
    assert repr(view) == "FrozenMap({'a': 1})"
    assert freeze_mapping(view) is view
    assert freeze_mapping(None) == {}
    with pytest.raises(TypeError):
        hash(view)


def test_freeze_keeps_other_values_and_named_tuples() -> None:
    marker = object()
    assert freeze(marker) is marker
    assert freeze("s") == "s"


@given(st.lists(st.dictionaries(st.text(max_size=3), st.integers(), max_size=3), max_size=6))
def test_extending_views_matches_dict_updates(layers: list[dict[str, int]]) -> None:
    """Every view equals the dict built by the same updates, whatever else grew."""
    views = [FrozenMap()]
    expected: list[dict[str, int]] = [{}]
    for i, layer in enumerate(layers):
        parent = i // 2
        views.append(views[parent].extend(layer))
        expected.append({**expected[parent], **layer})
    assert [dict(view) for view in views] == expected
    assert [len(view) for view in views] == [len(e) for e in expected]


def test_a_context_given_the_failure_it_carries_is_the_same_context() -> None:
    error = PipelineError("s", "ShellFailed", "exit 1")
    carrying = WorkflowContext({"a": 1}).with_failure(error)
    assert carrying.with_failure(error) is carrying
    assert (carrying.failure, carrying.with_failure(None).failure) == (error, None)
