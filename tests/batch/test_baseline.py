"""An evaluation's baseline file: written by adws, refused when it is not one, and the gate."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adws.batch.baseline import FORMAT, Baseline, BaselineError, gate, tasks_hash
from adws.batch.evaluation import EvalRun, EvalScore, fisher_exact, score, wilson


def _scores(**counts: tuple[int, int]) -> list[EvalScore]:
    runs = [
        EvalRun(name, 0, "succeeded" if i < passed else "failed")
        for name, (passed, total) in counts.items()
        for i in range(total)
    ]
    return score(list(counts), runs)


def test_a_baseline_round_trips_through_its_file() -> None:
    waiting = [EvalRun("a", 0, "waiting"), EvalRun("a", 0, "succeeded"), EvalRun("a", 0, "failed")]
    saved = Baseline.of("fix", score(["a"], waiting), tasks_hash(b"x"), "1.2")
    assert saved.variants == {"a": (1, 2)}
    document = json.loads(saved.to_json())
    assert document == {
        "format": FORMAT,
        "workflow": "fix",
        "variants": [{"name": "a", "passed": 1, "runs": 2}],
        "tasks": tasks_hash(b"x"),
        "adws_version": "1.2",
    }
    assert Baseline.parse(saved.to_json(), "fix") == saved


@pytest.mark.parametrize(
    ("document", "why"),
    [
        ("{not json", "it is not JSON (Expecting property name"),
        ("[]", f"it is no baseline adws eval --save-baseline wrote (no format {FORMAT!r})"),
        ({"format": "other"}, "it is no baseline adws eval --save-baseline wrote"),
        ({"workflow": "fix", "tasks": 1, "adws_version": "1"}, "its workflow, tasks and adws_ver"),
        ({"workflow": "other"}, "it is a baseline of workflow 'other', not 'fix'"),
        ({"variants": []}, "its variants must be a non-empty list"),
        ({"variants": {"a": 1}}, "its variants must be a non-empty list"),
        ({"variants": ["a"]}, "variant 0 is not an object"),
        ({"variants": [{"passed": 1, "runs": 2}]}, "variant 0 has no name of its own"),
        ({"variants": [{"name": "", "passed": 1, "runs": 2}]}, "variant 0 has no name of its own"),
        (
            {"variants": [{"name": "a", "passed": 1, "runs": 2}] * 2},
            "variant 1 has no name of its own",
        ),
        ({"variants": [{"name": "a", "passed": 3, "runs": 2}]}, "variant 'a': passed and runs"),
        ({"variants": [{"name": "a", "passed": -1, "runs": 2}]}, "variant 'a': passed and runs"),
        ({"variants": [{"name": "a", "passed": True, "runs": 2}]}, "variant 'a': passed and runs"),
        ({"variants": [{"name": "a", "passed": 1, "runs": "2"}]}, "variant 'a': passed and runs"),
    ],
)
def test_a_file_adws_did_not_write_is_refused_saying_why(document: object, why: str) -> None:
    if isinstance(document, dict):
        whole = {
            "format": FORMAT,
            "workflow": "fix",
            "variants": [{"name": "a", "passed": 1, "runs": 2}],
            "tasks": "sha256:0",
            "adws_version": "1",
        }
        text = json.dumps({**whole, **document})
    else:
        text = str(document)
    with pytest.raises(BaselineError) as raised:
        Baseline.parse(text, "fix")
    assert str(raised.value).startswith(why)


def test_the_gate_fails_a_wilson_bound_under_the_rate_naming_the_variant() -> None:
    scores = _scores(a=(10, 10), b=(5, 10))
    failed, notes = gate(scores, None, 0.6)
    low = wilson(5, 10)[0]
    assert failed == [
        f"variant b: its 95% Wilson lower bound {low:.3f} is under --fail-under 0.6 (5/10 passed)"
    ]
    assert notes == []
    assert gate(scores, None, None) == ([], [])


def test_the_gate_fails_a_pass_rate_significantly_below_the_baselines() -> None:
    baseline = Baseline("fix", {"a": (10, 10), "b": (3, 10)}, "sha256:0", "1")
    scores = _scores(a=(2, 10), b=(0, 10), c=(1, 10))
    failed, notes = gate(scores, baseline, None)
    p_a = fisher_exact(2, 8, 10, 0)
    assert failed == [
        (
            f"variant a: 2/10 passed, significantly below the baseline's a 10/10"
            f" (Fisher's exact test, p = {p_a:.4f})"
        )
    ]
    # b: 0/10 against 3/10 is lower but not significantly (p = 0.2105).
    assert notes == ["variant c: the baseline has no variant of that name (a, b)"]


def test_a_baseline_of_one_variant_is_compared_with_every_variant() -> None:
    baseline = Baseline("fix", {"default": (40, 40)}, "sha256:0", "1")
    failed, _ = gate(_scores(new=(0, 40), same=(40, 40)), baseline, None)
    assert failed == [
        (
            "variant new: 0/40 passed, significantly below the baseline's default 40/40"
            " (Fisher's exact test, p < 0.0001)"
        )
    ]


def test_no_runs_ended_is_not_compared() -> None:
    baseline = Baseline("fix", {"a": (1, 1)}, "sha256:0", "1")
    assert gate(score(["a"], [EvalRun("a", 0, "waiting")]), baseline, None) == ([], [])
    assert gate(_scores(a=(0, 3)), Baseline("fix", {"a": (0, 0)}, "", "1"), None) == ([], [])


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.tuples(st.integers(0, 50), st.integers(0, 50)).map(lambda t: (min(t), max(t))),
        min_size=1,
        max_size=4,
    ),
    st.text(max_size=10),
)
def test_every_baseline_adws_writes_reads_back_the_same(
    variants: dict[str, tuple[int, int]], version: str
) -> None:
    saved = Baseline("w", variants, tasks_hash(version.encode()), version)
    assert Baseline.parse(saved.to_json(), "w") == saved
