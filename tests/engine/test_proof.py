"""What must pass and what a round proved: targets, globs, states and the proof's words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adws.engine.proof import Checked, MustPass, Proof, matches, matching, target_state

IDS = st.text(alphabet="abc/_.:[]- 12", min_size=1, max_size=20)


@given(IDS, IDS)
def test_an_id_without_a_wildcard_names_only_itself(pattern: str, name: str) -> None:
    assert matches(pattern, name) == (pattern == name)


@given(IDS, IDS)
def test_a_trailing_star_names_every_id_that_starts_with_what_comes_before(
    prefix: str, rest: str
) -> None:
    assert matches(f"{prefix}*", prefix + rest)
    assert matches(f"{prefix}*", rest) == rest.startswith(prefix)


def test_a_question_mark_is_one_character_and_brackets_are_literal() -> None:
    assert matches("t.py::test_?", "t.py::test_a")
    assert not matches("t.py::test_?", "t.py::test_ab")
    assert matches("t.py::test_a[*]", "t.py::test_a[x y]")
    assert not matches("t.py::test_a[*]", "t.py::test_ax")


def test_patterns_that_match_nothing_the_baseline_ran_are_named_apart() -> None:
    assert matching(["t.py::*", "u.py::typo"], ["t.py::b", "t.py::a", "u.py::c"]) == (
        ("t.py::a", "t.py::b"),
        ("u.py::typo",),
    )


def test_a_target_passes_only_when_it_ran_and_passed() -> None:
    run = Checked({"t.py::a": "FAILED t.py::a"}, frozenset({"t.py::b", "m.py::x"}), ok=False)
    states = {
        target: target_state(target, run)
        for target in ("t.py::a", "t.py::b", "t.py::deleted", "m.py", "gone.py", "a.py: E1 x")
    }
    assert states == {
        "t.py::a": "failing",
        "t.py::b": "passed",
        "t.py::deleted": "did not run",
        "m.py": "passed",  # a module passes when a test in it passed
        "gone.py": "did not run",
        "a.py: E1 x": "passed",  # a finding passes once it is no longer named
    }


def test_a_check_that_lists_no_passes_never_passes_a_test() -> None:
    quiet = Checked({}, None, ok=True)
    assert (target_state("t.py::a", quiet), target_state("exit status", quiet)) == (
        "did not run",
        "passed",
    )


def test_must_pass_reads_ids_globs_the_words_and_placeholders() -> None:
    assert MustPass.of("w", ["t.py::a", " reproduced "]) == MustPass(("t.py::a",), reproduced=True)
    assert MustPass.of("w", "baseline") == MustPass(baseline=True)
    assert MustPass.of("w", "{targets}") == MustPass(source="targets")
    assert not MustPass.of("w", ())


@pytest.mark.parametrize("bad", ["t.py::a", "{not a key}", [1], [""], 3, None])
def test_must_pass_refuses_what_it_cannot_be(bad: object) -> None:
    with pytest.raises(ValueError, match=r"^w: must_pass must be a tuple of test ids or globs"):
        MustPass.of("w", bad)


def test_an_input_of_targets_is_a_list_or_a_string_split_on_whitespace() -> None:
    wanted = MustPass(source="targets")
    assert wanted.resolved({"targets": " t.py::a\nbaseline  "}, "s") == MustPass(
        ("t.py::a",), baseline=True
    )
    assert wanted.resolved({"targets": ["t.py::a b", " "]}, "s") == MustPass(("t.py::a b",))
    assert wanted.resolved({"targets": ""}, "s") == MustPass()
    assert MustPass(("x",)).resolved({}, "s") == MustPass(("x",))


def test_an_input_of_targets_that_is_missing_or_not_ids_is_an_error_naming_it() -> None:
    wanted = MustPass(source="targets")
    missing = wanted.resolved({"other": 1}, "fix")
    assert not isinstance(missing, MustPass)
    assert (missing.error_type, missing.message) == (
        "MissingInput",
        "must_pass of step 'fix' reads input 'targets'; inputs available: other",
    )
    wrong = wanted.resolved({"targets": 3}, "fix")
    assert not isinstance(wrong, MustPass)
    assert (wrong.message, wrong.context["permanent"]) == (
        (
            "must_pass of step 'fix': input 'targets' must be test ids (a list, or one string of"
            " them), got int"
        ),
        True,
    )


def test_a_proof_says_targets_then_new_then_left_then_flaky() -> None:
    proof = Proof(
        ("t.py::a", "t.py::b", "t.py::c"),
        fixed=("t.py::a",),
        passing=("t.py::b",),
        failing={"t.py::c": "did not run"},
        new=("t.py::n",),
        left=tuple(f"o.py::{i:02}" for i in range(12)),
        flaky=("t.py::f",),
        kept=7,
    )
    assert proof.lines() == [
        "targets fixed (1): t.py::a",
        "targets passing before too (1): t.py::b",
        "targets not passing (1): t.py::c (did not run)",
        "new failures (1): t.py::n",
        (
            "pre-existing failures left (12): o.py::00, o.py::01, o.py::02, o.py::03, o.py::04,"
            " o.py::05, o.py::06, o.py::07, o.py::08, o.py::09 and 2 more"
        ),
        "flaky (1): t.py::f",
        "kept passing: 7",
    ]
    assert proof.to_dict()["failing"] == {"t.py::c": "did not run"}


def test_a_proof_with_no_target_says_the_change_was_only_checked_to_break_nothing() -> None:
    assert Proof().to_dict() == {
        "targets": [],
        "fixed": [],
        "passing": [],
        "failing": {},
        "new": [],
        "left": [],
        "flaky": [],
        "kept": None,
        "text": (
            "no target had to pass: the change was only checked to break nothing (name tests"
            " in must_pass, or reproduce the problem first)\nnew failures: none\n"
            "pre-existing failures left: none\nflaky: none"
        ),
    }


@pytest.mark.parametrize(
    "row",
    [
        None,
        {"failing": [], "passed": None, "ok": True, "named": True},
        {"failing": {}, "passed": [1], "ok": True, "named": True},
        {"failing": {}, "passed": None, "ok": "yes", "named": True},
        {"failing": {}, "passed": None, "ok": True, "named": None},
    ],
)
def test_a_run_read_back_from_a_row_that_is_not_one_is_none(row: object) -> None:
    assert Checked.from_dict(row) is None


def test_a_run_round_trips_through_its_dict() -> None:
    run = Checked({"a": "A"}, None, ok=False, named=False)
    assert Checked.from_dict(run.to_dict()) == run
