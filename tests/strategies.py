"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

import json

import attrs
from hypothesis import strategies as st

from adws.contract.validator import OutputContract

BEHAVIOURS = st.sampled_from(["ok", "fail", "raise", "interrupt", "blocked"])

step_plans = st.lists(st.tuples(BEHAVIOURS, st.booleans()), min_size=1, max_size=8)
"""A workflow as a list of (behaviour, always_run) pairs."""

report_keys = st.lists(
    st.from_regex(r"[A-Z][A-Z0-9]{0,6}(_JSON)?", fullmatch=True).filter(
        lambda key: key not in {"STATUS", "REASON", "ISSUES"}
    ),
    min_size=0,
    max_size=4,
    unique=True,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)

field_text = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=["Cs"],
            blacklist_characters="\r\n",
        ),
        min_size=1,
        max_size=40,
    )
    .map(str.strip)
    .filter(lambda text: bool(text) and ":" not in text)
)


@st.composite
def valid_reports(draw: st.DrawFn) -> tuple[str, OutputContract, dict[str, object]]:
    """Draw a well-formed report, its contract and the values it must yield."""
    keys = draw(report_keys)
    lines = [draw(st.text(max_size=30).map(lambda t: t.replace(":", " "))), "STATUS: done"]
    expected: dict[str, object] = {}
    for key in keys:
        if key.endswith("_JSON"):
            value = draw(json_values)
            lines.append(f"{key}: {json.dumps(value)}")
            expected[key] = value
        else:
            text = draw(field_text)
            lines.append(f"{key}: {text}")
            expected[key] = text
    return "\n".join(lines), OutputContract(expects=tuple(keys)), expected


@attrs.frozen
class Claim:
    """A claim and where it comes from."""

    text: str
    source: str


@attrs.frozen
class Packet:
    """A verifier's packet."""

    verdict: str
    claims: tuple[Claim, ...]


MARKER_KEYS = st.sampled_from(
    [
        "__adws_attrs__",
        "__adws_set__",
        "__adws_error__",
        "__adws_repr__",
        "__adws_dict__",
        "__adws_other",
        "value",
    ]
)
"""Keys an agent's JSON might use to forge the journal codec's markers."""

any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=12)
"""Any text at all, lone surrogates included (what `-i name=$'\\xff'` decodes to)."""

hostile_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | any_text
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(MARKER_KEYS | any_text, children, max_size=3)
        | st.builds(lambda k, v: {k: v}, MARKER_KEYS, children)
        | st.builds(lambda m, v: {"__adws_attrs__": m, "value": v}, any_text, children)
    ),
    max_leaves=10,
)
"""Arbitrary JSON values, biased towards objects shaped like the codec's markers."""

diff_texts = st.lists(
    st.tuples(
        st.sampled_from(
            ["diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1 +1 @@", "+", "-", " ", "\\", ""]
        ),
        st.text(alphabet=st.characters(blacklist_categories=()), max_size=12),
    ),
    max_size=12,
).map(lambda lines: "\n".join(start + rest for start, rest in lines)) | st.text(
    alphabet=st.characters(blacklist_categories=()), max_size=40
)
"""Diff-shaped text with anything in its lines (escapes, lone surrogates, `<`), or any text."""
