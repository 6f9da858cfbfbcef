"""The fail-closed validator: one test per rule of DESIGN.md."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from adws import (
    PipelineError,
    ScriptedAgent,
    Workflow,
    WorkflowContext,
    agent_step,
    run_workflow,
)
from adws.contract._strict import parse_strict_json
from adws.contract.validator import AgentReport, OutputContract, validate_agent_output
from adws.journal import Journal, JournalObserver
from tests.conftest import success
from tests.strategies import Claim, Packet, valid_reports

RESEARCH = OutputContract(expects=("RESEARCH_PACKET_JSON",))
VERIFY = OutputContract(schemas={"VERIFIED_PACKET_JSON": Packet})
NO_KEYS = OutputContract()
PACKET = '{"verdict": "pass", "claims": [{"text": "water is wet", "source": "https://x.test"}]}'


def check(text: str, contract: OutputContract = NO_KEYS) -> Result[AgentReport, PipelineError]:
    return validate_agent_output(text, contract, step_name="verify")


def problems(text: str, contract: OutputContract = NO_KEYS) -> list[str]:
    result = check(text, contract)
    assert isinstance(result, Failure)
    error = result.failure()
    assert (error.step_name, error.error_type) == ("verify", "ContractViolation")
    assert error.context["raw_output"] == text
    return list(error.context["problems"])


def test_missing_status_is_a_violation() -> None:
    assert problems("I did it all.\nSUMMARY: done") == ["STATUS missing"]


def test_unknown_status_is_a_violation() -> None:
    assert problems("STATUS: finished") == ["STATUS 'finished' is not one of done, retry, blocked"]


def test_status_with_trailing_text_is_a_violation() -> None:
    assert problems("STATUS: done please") == [
        "STATUS 'done please' is not one of done, retry, blocked"
    ]


def test_duplicate_status_is_a_violation() -> None:
    assert problems("STATUS: done\nSTATUS: done") == ["STATUS appears 2 times; give it once"]


def test_malformed_research_packet_json_is_a_violation() -> None:
    text = 'STATUS: done\nRESEARCH_PACKET_JSON: {"sources": [1, 2}'
    assert problems(text, RESEARCH) == [
        "RESEARCH_PACKET_JSON: not valid JSON: Expecting ',' delimiter at line 1 column 18"
    ]


def test_malformed_verified_packet_json_is_a_violation() -> None:
    text = "STATUS: done\nVERIFIED_PACKET_JSON: {verdict: pass}"
    assert problems(text, VERIFY) == [
        (
            "VERIFIED_PACKET_JSON: not valid JSON: Expecting property name enclosed in double quotes "
            "at line 1 column 2"
        )
    ]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_with_nan_or_infinity_is_a_violation(constant: str) -> None:
    text = f'STATUS: done\nRESEARCH_PACKET_JSON: {{"score": {constant}}}'
    assert problems(text, RESEARCH) == [
        f"RESEARCH_PACKET_JSON: not valid JSON: {constant} is not allowed in strict JSON"
    ]


def test_json_with_a_duplicate_key_is_a_violation() -> None:
    text = 'STATUS: done\nRESEARCH_PACKET_JSON: {"a": 1, "a": 2}'
    assert problems(text, RESEARCH) == ["RESEARCH_PACKET_JSON: not valid JSON: duplicate key 'a'"]


def test_a_fenced_json_block_is_accepted() -> None:
    text = 'STATUS: done\nRESEARCH_PACKET_JSON:\n```json\n{"sources": ["a"]}\n```\n'
    report = check(text, RESEARCH).unwrap()
    assert report.data == {"RESEARCH_PACKET_JSON": {"sources": ("a",)}}


def test_two_fenced_blocks_are_rejected() -> None:
    text = 'STATUS: done\nRESEARCH_PACKET_JSON:\n```json\n{"a": 1}\n```\n```json\n{"b": 2}\n```'
    assert problems(text, RESEARCH) == [
        "RESEARCH_PACKET_JSON: expected bare JSON or exactly one fenced block around it, nothing else"
    ]


def test_text_around_json_is_rejected() -> None:
    text = 'STATUS: done\nRESEARCH_PACKET_JSON: {"a": 1} and that is all'
    assert problems(text, RESEARCH) == [
        "RESEARCH_PACKET_JSON: not valid JSON: Extra data at line 1 column 10"
    ]


def test_a_schema_mismatch_reports_the_json_path() -> None:
    text = 'STATUS: done\nVERIFIED_PACKET_JSON: {"verdict": "pass", "claims": [{"text": "t"}]}'
    assert problems(text, VERIFY) == [
        "VERIFIED_PACKET_JSON does not match Packet: $.claims[0].source: required field missing"
    ]


def test_a_schema_refuses_extra_keys_and_wrong_types() -> None:
    text = 'STATUS: done\nVERIFIED_PACKET_JSON: {"verdict": 1, "claims": "none", "score": 0.5}'
    assert problems(text, VERIFY) == [
        "VERIFIED_PACKET_JSON does not match Packet: $.verdict: expected string, got integer",
        "VERIFIED_PACKET_JSON does not match Packet: $.claims: expected array, got string",
        "VERIFIED_PACKET_JSON does not match Packet: $.score: not a field of Packet (its fields: verdict, claims)",
    ]


def test_a_schema_needs_an_object() -> None:
    text = "STATUS: done\nVERIFIED_PACKET_JSON: [1]"
    assert problems(text, VERIFY) == [
        "VERIFIED_PACKET_JSON does not match Packet: $: expected object, got array"
    ]


def test_an_expected_key_missing_is_a_violation() -> None:
    assert problems("STATUS: done", OutputContract(("SUMMARY",))) == ["SUMMARY missing"]


def test_an_expected_key_present_but_empty_is_a_violation() -> None:
    assert problems("STATUS: done\nSUMMARY:   \n", OutputContract(("SUMMARY",))) == [
        "SUMMARY is empty"
    ]


def test_a_repeated_declared_key_is_a_violation() -> None:
    text = "STATUS: done\nSUMMARY: one\nSUMMARY: two"
    assert problems(text, OutputContract(("SUMMARY",))) == ["SUMMARY appears 2 times; give it once"]


def test_blocked_with_a_reason_is_a_blocked_error() -> None:
    result = check("Cannot reach the sources.\nSTATUS: blocked\nREASON: no network access", VERIFY)
    error = result.failure()
    assert (error.error_type, error.message) == ("Blocked", "no network access")


def test_retry_is_an_agent_retry_requested_with_its_issues() -> None:
    error = check(
        "STATUS: retry\nISSUES: the packet has no sources\nand one claim is vague"
    ).failure()
    assert (error.error_type, error.message) == (
        "AgentRetryRequested",
        "the packet has no sources\nand one claim is vague",
    )


def test_blocked_without_a_reason_says_so() -> None:
    assert check("STATUS: blocked").failure().message == "agent said STATUS: blocked"


def test_a_plausible_verifier_answer_without_a_packet_is_rejected() -> None:
    text = (
        "I verified every claim and produced the VERIFIED_PACKET_JSON as requested.\n"
        "STATUS: done\n"
        "SUMMARY: all claims check out; see VERIFIED_PACKET_JSON above"
    )
    assert problems(text, VERIFY) == ["VERIFIED_PACKET_JSON missing"]


def test_a_valid_verifier_answer_is_structured_into_the_schema() -> None:
    text = f"Checked.\nSTATUS: done\nVERIFIED_PACKET_JSON:\n{json.dumps(json.loads(PACKET), indent=2)}\n"
    report = check(text, VERIFY).unwrap()
    assert report.status == "done"
    assert report.data == {
        "VERIFIED_PACKET_JSON": Packet("pass", (Claim("water is wet", "https://x.test"),))
    }
    assert report.fields["STATUS"] == "done"


def test_several_problems_are_reported_at_once() -> None:
    contract = OutputContract(("SUMMARY", "RESEARCH_PACKET_JSON"), {"VERIFIED_PACKET_JSON": Packet})
    text = "STATUS: done\nRESEARCH_PACKET_JSON: {nope}\nVERIFIED_PACKET_JSON: {}"
    assert problems(text, contract) == [
        "SUMMARY missing",
        "RESEARCH_PACKET_JSON: not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2",
        "VERIFIED_PACKET_JSON does not match Packet: $.verdict: required field missing",
        "VERIFIED_PACKET_JSON does not match Packet: $.claims: required field missing",
    ]


def test_undeclared_lines_inside_a_field_stay_in_it_and_prose_is_ignored() -> None:
    text = (
        "Here is my report.\nSUMMARY: not declared, so prose\n"
        "STATUS: done\nSUMMARY: ignored too, it follows STATUS\n"
        "FINAL_REPORT: # Title\nNOTE: this line belongs to the report\nlast line\n"
    )
    report = check(text, OutputContract(("FINAL_REPORT",))).unwrap()
    assert report.fields == {
        "STATUS": "done",
        "FINAL_REPORT": "# Title\nNOTE: this line belongs to the report\nlast line",
    }


def test_output_over_the_cap_is_a_violation_without_parsing() -> None:
    contract = OutputContract(max_output_bytes=10)
    assert problems("STATUS: done and more", contract) == [
        "output is 21 bytes, over the 10-byte limit"
    ]


def test_raw_output_is_capped_to_its_tail() -> None:
    text = "x" * (70 << 10)
    error = check(text).failure()
    assert error.context["raw_output"] == "…" + text[-(64 << 10) :]


def test_text_that_is_not_a_string_is_a_violation() -> None:
    error = check(None).failure()  # type: ignore[arg-type] # what an untyped caller might pass
    assert error.context["problems"] == ("output is not text (got NoneType)",)


def test_deeply_nested_json_is_a_violation_not_a_crash() -> None:
    text = "STATUS: done\nRESEARCH_PACKET_JSON: " + "[" * 20_000 + "]" * 20_000
    assert problems(text, RESEARCH) == ["RESEARCH_PACKET_JSON: JSON nests deeper than 512 levels"]


@pytest.mark.parametrize(("depth", "opening", "closing"), [(513, "[", "]"), (990, '{"a":', "}")])
def test_json_nested_past_512_is_a_violation_naming_the_depth(
    depth: int, opening: str, closing: str
) -> None:
    text = f"STATUS: done\nRESEARCH_PACKET_JSON: {opening * depth}1{closing * depth}"
    assert problems(text, RESEARCH) == [
        f"RESEARCH_PACKET_JSON: JSON nests {depth} levels deep; at most 512 are allowed"
    ]


def test_json_nested_512_deep_passes_and_survives_the_journal(tmp_path: Path) -> None:
    """The limit is usable: the value reaches the next step and is recorded and read back."""
    deep = "[" * 256 + '{"a":' * 256 + "1" + "}" * 256 + "]" * 256
    agent = ScriptedAgent([f"STATUS: done\nRESEARCH_PACKET_JSON: {deep}"])
    journal = Journal(tmp_path / "runs.db")
    step = agent_step(
        "research", prompt="p", agent=agent, contract=OutputContract(("RESEARCH_PACKET_JSON",))
    )
    result = run_workflow(Workflow("w", (step,)), observers=[JournalObserver(journal, "f")])
    final = success(result)
    [record] = journal.attempts(journal.runs()[0].run_id)
    assert WorkflowContext(inputs=record.outputs() or {}) == final
    assert journal.runs()[0].status == "succeeded"


@pytest.mark.parametrize("number", ["1e999", "-1E400", "123456789e999"])
def test_a_number_that_overflows_to_infinity_is_a_violation(number: str) -> None:
    text = f'STATUS: done\nVERIFIED_PACKET_JSON: {{"score": {number}}}'
    assert problems(text, OutputContract(("VERIFIED_PACKET_JSON",))) == [
        (
            f"VERIFIED_PACKET_JSON: not valid JSON: number {number} is not finite "
            f"(it overflows to {float(number)})"
        )
    ]


def test_contracts_refuse_bad_keys_and_schemas() -> None:
    with pytest.raises(ValueError, match="output key 'lower'"):
        OutputContract(("lower",))
    with pytest.raises(ValueError, match="output key 'STATUS'"):
        OutputContract(("STATUS",))
    with pytest.raises(ValueError, match="schema key 'PACKET' must be"):
        OutputContract(schemas={"PACKET": Packet})
    with pytest.raises(TypeError, match="must be an attrs class"):
        OutputContract(schemas={"PACKET_JSON": dict})


def test_schema_keys_count_as_expected() -> None:
    assert OutputContract(("A", "B_JSON"), {"B_JSON": Packet, "C_JSON": Packet}).keys == (
        "A",
        "B_JSON",
        "C_JSON",
    )


@attrs.frozen
class _Everything:
    flag: bool
    count: int
    ratio: float
    tags: list[str]
    maybe: str | None
    extra: dict[str, int]
    kind: str = "x"


def test_instructions_give_the_format_keys_and_a_json_example() -> None:
    text = OutputContract(("SUMMARY",), {"VERIFIED_PACKET_JSON": Packet}).instructions()
    assert "STATUS: done\nSUMMARY: <text>\nVERIFIED_PACKET_JSON: <strict JSON>" in text
    example = text.split("For example:\n")[1]
    assert json.loads(example) == {
        "verdict": "text",
        "claims": [{"text": "text", "source": "text"}],
    }
    assert "blocked: add `REASON: <what you need>`" in text


def test_instructions_example_covers_common_field_types() -> None:
    text = OutputContract(schemas={"X_JSON": _Everything}).instructions()
    example = json.loads(text.split("For example:\n")[1])
    assert example == {
        "flag": True,
        "count": 0,
        "ratio": 0.0,
        "tags": ["text"],
        "maybe": "text",
        "extra": {},
        "kind": "text",
    }


def test_structuring_strictness_by_type() -> None:
    contract = OutputContract(schemas={"X_JSON": _Everything})
    good = (
        '{"flag": false, "count": 2, "ratio": 1, "tags": ["a"], "maybe": null, "extra": {"a": 1}}'
    )
    report = check(f"STATUS: done\nX_JSON: {good}", contract).unwrap()
    assert report.data["X_JSON"] == _Everything(False, 2, 1.0, ["a"], None, {"a": 1})
    bad = '{"flag": 1, "count": true, "ratio": "1", "tags": "a", "maybe": null, "extra": {}}'
    assert problems(f"STATUS: done\nX_JSON: {bad}", contract) == [
        "X_JSON does not match _Everything: $.flag: expected boolean, got integer",
        "X_JSON does not match _Everything: $.count: expected integer, got boolean",
        "X_JSON does not match _Everything: $.ratio: expected number, got string",
        "X_JSON does not match _Everything: $.tags: expected array, got string",
    ]


def test_parse_strict_json_unwraps_one_fence_only() -> None:
    assert parse_strict_json("```\n[1]\n```") == Success([1])
    assert isinstance(parse_strict_json("```json\n[1]\n``` trailing"), Failure)
    assert parse_strict_json('{"code": "```py\\nx\\n```"}') == Success({"code": "```py\nx\n```"})
    assert isinstance(parse_strict_json("[1]\n```"), Failure)


@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    result = validate_agent_output(text, VERIFY, step_name="s")
    assert isinstance(result, Success | Failure)


@given(st.text(max_size=100), st.text(max_size=100))
def test_arbitrary_text_around_a_valid_report_never_raises(before: str, after: str) -> None:
    text = f"{before}\nSTATUS: done\nVERIFIED_PACKET_JSON: {PACKET}\n{after}"
    assert isinstance(validate_agent_output(text, VERIFY, step_name="s"), Success | Failure)


@given(valid_reports())
@example(
    ('STATUS: done\nA_JSON: {"```": null}', OutputContract(("A_JSON",)), {"A_JSON": {"```": None}})
)
def test_a_generated_valid_report_validates_and_round_trips(
    case: tuple[str, OutputContract, dict[str, object]],
) -> None:
    text, contract, expected = case
    report = validate_agent_output(text, contract, step_name="s").unwrap()
    for key, value in expected.items():
        if key.endswith("_JSON"):
            assert json.loads(json.dumps(_thaw(report.data[key]))) == value
        else:
            assert report.fields[key] == value


def _thaw(value: object) -> object:
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _thaw(item) for key, item in value.items()}
    return value


@attrs.frozen
class _Tree:
    name: str
    child: _Tree | None = None


@attrs.frozen
class _Unresolvable:
    thing: NotDefinedAnywhere  # type: ignore[name-defined] # noqa: F821 - proving the fallback


def test_instructions_cope_with_recursive_and_unresolvable_schemas() -> None:
    text = OutputContract(schemas={"T_JSON": _Tree}).instructions()
    tree = json.loads(text.split("For example:\n")[1])
    depth = 0
    while isinstance(tree, dict):
        tree, depth = tree["child"], depth + 1
    assert depth == 9
    text = OutputContract(schemas={"U_JSON": _Unresolvable}).instructions()
    assert json.loads(text.split("For example:\n")[1]) == {"thing": None}
    assert "- thing (required): any JSON value" in text


def test_line_separators_inside_values_survive() -> None:
    """Only a newline ends a line: U+2028 or U+0085 in JSON, or a vertical tab in text, is data."""
    packet = '{"note": "a\u2028b\x85c"}'
    text = f"STATUS: done\r\nRESEARCH_PACKET_JSON: {packet}\r\nFINAL_REPORT: x\x0by\x1cz\r\n"
    contract = OutputContract(("RESEARCH_PACKET_JSON", "FINAL_REPORT"))
    report = check(text, contract).unwrap()
    assert report.data == {"RESEARCH_PACKET_JSON": {"note": "a\u2028b\x85c"}}
    assert report.fields["FINAL_REPORT"] == "x\x0by\x1cz"


@pytest.mark.parametrize("limit", [0, -1, True, 1.5])
def test_an_impossible_output_limit_is_refused(limit: object) -> None:
    with pytest.raises((ValueError, TypeError)) as raised:
        OutputContract(max_output_bytes=limit)  # type: ignore[arg-type] # wrong on purpose
    assert (
        str(raised.value) == f"OutputContract: max_output_bytes must be an int >= 1, got {limit!r}"
    )
