"""A journal read as hostile: bounded texts, every column checked, a named row and exit 1.

The rows are crafted with sqlite3 the way an attacker (or a bad disk) would
leave them, and read by `adws status --step`, `adws report` and `adws run
--replay` in their own processes: never a traceback, never more memory than
the row says its text takes.
"""

from __future__ import annotations

import contextlib
import json
import resource
import sqlite3
import zlib
from typing import TYPE_CHECKING, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adws.cli import main
from adws.journal import Journal
from adws.journal.records.exchanges import MOST_INFLATED, inflate, text_digest
from adws.journal.records.runs import AttemptRecord, UnreadableError
from adws.journal.store.exchanges import exchanges
from tests.cli.test_cli_seeing import SEEING
from tests.conftest import start_adws

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

ANSWER: Final = "It is a bug.\n\nSTATUS: done\nLABEL: needs triage\n"
"""What classify's agent answers on its second attempt: 47 bytes."""
HEADER: Final = "adws: the journal {} holds rows it cannot read:"
MEMORY: Final = 1 << 30
"""The address space each reading process gets: a third of what the bomb inflates to."""


def zlib_bomb(blocks: int, block: int = 1 << 20) -> bytes:
    """Compress `blocks` MiB of zeros in a few milliseconds, as one valid zlib stream.

    After a full flush the compressor starts afresh, so every block after the
    first compresses to the same bytes; the checksum of n zeros is known:
    Adler-32 keeps a = 1 and b = n mod 65521.
    """
    squeezer = zlib.compressobj(9)
    zeros = bytes(block)
    head = squeezer.compress(zeros) + squeezer.flush(zlib.Z_FULL_FLUSH)
    again = squeezer.compress(zeros) + squeezer.flush(zlib.Z_FULL_FLUSH)
    end = squeezer.flush()[:-4]
    checksum = (((blocks * block) % 65521) << 16) | 1
    return head + again * (blocks - 1) + end + checksum.to_bytes(4, "big")


def test_the_bomb_is_one_valid_stream() -> None:
    assert zlib.decompress(zlib_bomb(3)) == bytes(3 << 20)


@pytest.fixture
def project(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "seeing.py").write_text(SEEING)
    monkeypatch.delenv("ADWS_TRANSCRIPTS", raising=False)
    return in_tmp


@pytest.fixture
def run_id(project: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run triage once: classify is rejected once, then answers; label's command fails."""
    assert main(["run", "triage", "-i", "issue_id=42", "--json", "-q"]) == 1
    return str(json.loads(capsys.readouterr().out)["run_id"])


def journal_file(project: Path) -> Path:
    return project / ".adws" / "runs.db"


def spoil(project: Path, sql: str, *params: object) -> None:
    db = sqlite3.connect(journal_file(project))
    with db:
        db.execute(sql, params)
    db.close()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def adws(project: Path, *argv: str) -> tuple[int, str, str]:
    """Run `python -m adws ARGV` in its own process with a bounded address space."""
    process = start_adws(
        project,
        *argv,
        env={"ADWS_JOURNAL": str(journal_file(project))},
        preexec_fn=_limit_memory,
    )
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def named(project: Path, *lines: str) -> str:
    return "\n".join([HEADER.format(journal_file(project)), *(f"  {line}" for line in lines)])


ANSWER_TEXT: Final = "(SELECT answer FROM exchanges WHERE step = 'classify' AND attempt = 2)"


@pytest.mark.parametrize(
    "argv",
    [
        ("status", "{run}", "--step", "classify"),
        ("report", "{run}", "-o", "page.html"),
        ("run", "triage", "-i", "issue_id=42", "--replay", "{run}"),
    ],
    ids=["status-step", "report", "replay"],
)
def test_a_text_that_inflates_past_its_size_is_a_named_row_not_a_memory_error(
    project: Path, run_id: str, argv: tuple[str, ...]
) -> None:
    bomb = zlib_bomb(3072)  # 3 MB in the row, 3 GiB inflated
    spoil(project, f"UPDATE texts SET data = ? WHERE hash = {ANSWER_TEXT}", bomb)  # noqa: S608 - fixed text
    code, _, err = adws(project, *(part.format(run=run_id) for part in argv))
    expected = named(
        project,
        f"exchanges row of run {run_id}, step classify, attempt 2:"
        " answer text inflates past its recorded size of 47 bytes",
    )
    assert (code, "Traceback" in err, "MemoryError" in err) == (1, False, False)
    assert err.endswith(expected + "\n")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"not zlib", "answer text is not zlib data (Error -3 while decompressing data:"),
        (zlib.compress(ANSWER.encode())[:-3], "answer text is not one whole zlib stream"),
        (zlib.compress(ANSWER.encode()) + b"x", "answer text is not one whole zlib stream"),
        (zlib.compress(b"\xff" * 47), "answer text is not UTF-8 (invalid start byte at byte 0)"),
        (zlib.compress(b"x" * 47), "answer text is not the text its hash "),
        ("text, not bytes", "answer text is not compressed bytes: 'text, not bytes'"),
    ],
    ids=["not-zlib", "cut-short", "bytes-past-end", "not-utf8", "another-text", "not-bytes"],
)
def test_a_stored_text_that_is_not_what_adws_wrote_is_a_named_row(
    project: Path,
    run_id: str,
    capsys: pytest.CaptureFixture[str],
    data: bytes | str,
    problem: str,
) -> None:
    spoil(project, f"UPDATE texts SET data = ? WHERE hash = {ANSWER_TEXT}", data)  # noqa: S608 - fixed text
    assert main(["status", run_id, "--step", "classify"]) == 1
    captured = capsys.readouterr()
    assert "answer: not kept (47 bytes" in captured.out
    lines = captured.err.splitlines()
    assert lines[0] == HEADER.format(".adws/runs.db")
    assert lines[1].startswith(
        f"  exchanges row of run {run_id}, step classify, attempt 2: {problem}"
    )


def test_a_whole_text_is_read_back(project: Path, run_id: str) -> None:
    [call] = exchanges(Journal(journal_file(project), readonly=True), run_id, attempt=2)
    assert call.answer is not None
    assert (call.answer.text, call.answer.size, call.problems) == (ANSWER, 47, ())


@given(data=st.binary(max_size=64), size=st.integers(min_value=-3, max_value=2**70))
def test_inflating_any_bytes_gives_at_most_the_bound_or_the_named_error(
    data: bytes, size: int
) -> None:
    _inflates_within(data, size)


@given(
    text=st.binary(max_size=200),
    size=st.integers(min_value=-3, max_value=300),
    cut=st.integers(min_value=0, max_value=300),
    junk=st.binary(max_size=3),
)
def test_inflating_streams_cut_or_padded_gives_at_most_the_bound_or_the_named_error(
    text: bytes, size: int, cut: int, junk: bytes
) -> None:
    _inflates_within(zlib.compress(text)[:cut] + junk, size)


def _inflates_within(data: bytes, size: int) -> None:
    try:
        text = inflate(data, size)
    except UnreadableError:
        return  # the one error it may raise: the row is named as unreadable
    assert len(text.encode("utf-8", "surrogatepass")) <= min(max(size, 0), MOST_INFLATED)


def test_a_text_within_its_size_inflates_whole() -> None:
    assert inflate(zlib.compress("é\ud800".encode("utf-8", "surrogatepass")), 5) == "é\ud800"


ATTEMPT_ROW: Final = "step = 'classify' AND attempt = 2"
"""The row of classify's attempt that succeeded (in `attempts` and in `exchanges`)."""
TEXT_COLUMN: Final = "is not text"
SECONDS: Final = "is not a number of seconds from 0 to 3200000000"
CLOCK: Final = "is not a number of seconds from 0 to 100000000000"
WHOLE: Final = "is not a whole number from 0 to 2147483647"

SPOILED_ATTEMPTS: Final = [
    ("step_index", "x", f"step_index {WHOLE}: 'x'"),
    ("attempt", -1, f"attempt {WHOLE}: -1"),
    ("recorded", b"\x00", f"recorded {TEXT_COLUMN}: b'\\x00'"),
    ("seconds", "soon", f"seconds {SECONDS}: 'soon'"),
    ("seconds", -1.5, f"seconds {SECONDS}: -1.5"),
    ("seconds", float("inf"), f"seconds {SECONDS}: inf"),
    ("context", b"\x00", f"context {TEXT_COLUMN}: b'\\x00'"),
    ("outputs", "{", "outputs are not JSON: '{'"),
    ("outputs", '{"label": NaN}', "outputs are not JSON: '{\"label\": NaN}'"),
    ("outputs", '{"label": 1e999}', "outputs are not JSON: '{\"label\": 1e999}'"),
    ("outputs", "[1]", "outputs are not a JSON object: '[1]'"),
    ("outputs", 5, "outputs are not a JSON object: '5'"),
    ("outputs", b"{}", f"outputs {TEXT_COLUMN}: b'{{}}'"),
    ("fingerprint", b"\xfe", f"fingerprint {TEXT_COLUMN}: b'\\xfe'"),
    ("session_ids", b"\x01", f"session_ids {TEXT_COLUMN}: b'\\x01'"),
    ("started", -1, f"started {CLOCK}: -1.0"),
    ("started", 1e300, f"started {CLOCK}: 1e+300"),
]


@pytest.mark.parametrize(("column", "value", "problem"), SPOILED_ATTEMPTS)
def test_a_spoiled_attempt_column_is_a_named_row_for_status_and_report(
    project: Path, run_id: str, column: str, value: object, problem: str
) -> None:
    spoil(project, f"UPDATE attempts SET {column} = ? WHERE {ATTEMPT_ROW}", value)  # noqa: S608 - names from the list above
    attempt = 0 if column == "attempt" else 2  # an attempt that is no number reads as 0
    line = f"attempts row of run {run_id}, step classify, attempt {attempt}: {problem}"
    for argv in (("status", run_id, "--step", "classify"), ("report", run_id, "-o", "-")):
        code, out, err = adws(project, *argv)
        assert (code, "Traceback" in err) == (1, False), err
        assert err == named(project, line) + "\n"
        assert run_id in out


SIZE: Final = "is not a whole number from 0 to 9223372036854775807"
SPOILED_EXCHANGES: Final = [
    ("asked_by", b"x", f"asked_by {TEXT_COLUMN}: b'x'"),
    ("recorded", b"\x00", f"recorded {TEXT_COLUMN}: b'\\x00'"),
    ("started", "x", f"started {CLOCK}: 'x'"),
    ("started", -5, f"started {CLOCK}: -5.0"),
    ("seconds", float("inf"), f"seconds {SECONDS}: inf"),
    ("seconds", "slow", f"seconds {SECONDS}: 'slow'"),
    ("prompt", b"\x07", "prompt is not a text's hash: b'\\x07'"),
    ("prompt_size", -1, f"prompt_size {SIZE}: -1"),
    ("answer", b"\x00", "answer is not a text's hash: b'\\x00'"),
    ("answer_size", "big", f"answer_size {SIZE}: 'big'"),
    ("stderr", b"5", "stderr is not a text's hash: b'5'"),
    ("exit_code", "zero", "exit_code is not a whole number from -2147483648 to 2147483648: 'zero'"),
    (
        "exit_code",
        2**40,
        f"exit_code is not a whole number from -2147483648 to 2147483648: {2**40}",
    ),
    ("session_id", b"s", f"session_id {TEXT_COLUMN}: b's'"),
    ("error_type", b"t", f"error_type {TEXT_COLUMN}: b't'"),
    ("error", b"\x00", f"error {TEXT_COLUMN}: b'\\x00'"),
]


@pytest.mark.parametrize(("column", "value", "problem"), SPOILED_EXCHANGES)
def test_a_spoiled_exchange_column_is_a_named_row_for_status_and_report(
    project: Path, run_id: str, column: str, value: object, problem: str
) -> None:
    spoil(project, f"UPDATE exchanges SET {column} = ? WHERE {ATTEMPT_ROW}", value)  # noqa: S608 - names from the list above
    line = f"exchanges row of run {run_id}, step classify, attempt 2: {problem}"
    for argv in (("status", run_id, "--step", "classify"), ("report", run_id, "-o", "-")):
        code, out, err = adws(project, *argv)
        assert (code, "Traceback" in err) == (1, False), err
        assert err == named(project, line) + "\n"
        assert run_id in out


@pytest.mark.parametrize(
    ("where", "value", "row"),
    [
        ("attempts.step", b"classify", "step , attempt 2: step is not text: b'classify'"),
        ("attempts.status", b"done", "step classify, attempt 2: status is not text: b'done'"),
        ("exchanges.step", b"c", "step , attempt 2: step is not text: b'c'"),
        ("exchanges.attempt", "two", f"step classify, attempt 0: attempt {WHOLE}: 'two'"),
    ],
)
def test_a_row_that_no_longer_names_its_step_is_named_by_the_report(
    project: Path, run_id: str, where: str, value: object, row: str
) -> None:
    """`status --step classify` looks rows up by these columns; the report reads them all."""
    table, column = where.split(".")
    spoil(project, f"UPDATE {table} SET {column} = ? WHERE {ATTEMPT_ROW}", value)  # noqa: S608 - names from the list above
    code, _, err = adws(project, "report", run_id, "-o", "page.html")
    assert (code, "Traceback" in err) == (1, False), err
    assert err == named(project, f"{table} row of run {run_id}, {row}") + "\n"


HOSTILE_VALUES: Final = (
    st.none()
    | st.text(max_size=12)
    | st.binary(max_size=12)
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | st.sampled_from(["{", "[1]", '{"a": NaN}', "1e999", "-1", "nan", "{}"])
)
"""What a forged or rotten row may hold in any column (SQLite stores NaN as NULL)."""
USAGE_COLUMNS: Final = ("cost_usd", "input_tokens", "output_tokens", "turns", "model")
"""Read saturated, never refused: a forged spend still counts against any budget."""
ATTEMPT_COLUMNS: Final = (
    "step",
    "step_index",
    "attempt",
    "status",
    "recorded",
    "seconds",
    "error",
    "context",
    "outputs",
    "fingerprint",
    "session_ids",
    "started",
    *USAGE_COLUMNS,
)
EXCHANGE_COLUMNS: Final = (
    "step",
    "attempt",
    "asked_by",
    "recorded",
    "started",
    "seconds",
    "prompt",
    "prompt_size",
    "answer",
    "answer_size",
    "stderr",
    "stderr_size",
    "exit_code",
    "session_id",
    "error_type",
    "error",
    *USAGE_COLUMNS,
)


@contextlib.contextmanager
def spoiled_for_a_moment(project: Path, table: str, column: str, value: object) -> Iterator[bool]:
    """Write `value` into classify's second attempt's row (False: no row can hold it), then undo."""
    db = sqlite3.connect(journal_file(project))
    select = f"SELECT id, {column} FROM {table} WHERE {ATTEMPT_ROW}"  # noqa: S608 - fixed names
    update = f"UPDATE {table} SET {column} = ? WHERE id = ?"  # noqa: S608 - fixed names
    try:
        [(row_id, old)] = db.execute(select).fetchall()
        try:
            with db:
                db.execute(update, (value, row_id))
        except sqlite3.IntegrityError:  # NULL in a NOT NULL column
            yield False
            return
        try:
            yield True
        finally:
            with db:
                db.execute(update, (old, row_id))
    finally:
        db.close()


def test_any_value_in_any_attempt_column_is_read_or_named(project: Path, run_id: str) -> None:
    journal = Journal(journal_file(project), readonly=True)

    @settings(max_examples=200)
    @given(column=st.sampled_from(ATTEMPT_COLUMNS), value=HOSTILE_VALUES)
    def read(column: str, value: object) -> None:
        with spoiled_for_a_moment(project, "attempts", column, value) as written:
            rows = [row.checked() for row in journal.attempts(run_id)]
            if not written:
                return
            row = rows[1]
            assert all(problem.startswith(column) for problem in row.problems), row.problems
            if isinstance(value, bytes) and column not in USAGE_COLUMNS:
                assert row.problems
            assert isinstance(row.step, str)
            assert isinstance(row.status, str)
            assert isinstance(row.recorded, str)
            assert 0 <= row.step_index <= 2**31 - 1
            assert 0 <= row.attempt <= 2**31 - 1
            assert 0 <= row.seconds <= 3.2e9
            assert row.started is None or 0 <= row.started <= 1e11
            assert isinstance(row.outputs() or {}, dict)
            assert row.usage is None or row.usage.describe()

    read()


def test_any_value_in_any_exchange_column_is_read_or_named(project: Path, run_id: str) -> None:
    journal = Journal(journal_file(project), readonly=True)

    @settings(max_examples=200)
    @given(column=st.sampled_from(EXCHANGE_COLUMNS), value=HOSTILE_VALUES)
    def read(column: str, value: object) -> None:
        with spoiled_for_a_moment(project, "exchanges", column, value) as written:
            calls = exchanges(journal, run_id)
            if not written:
                return
            call = calls[1]
            owner = column.removesuffix("_size")  # a size that changed makes its text unreadable
            assert all(problem.startswith(owner) for problem in call.problems), call.problems
            if isinstance(value, bytes) and column not in USAGE_COLUMNS:
                assert call.problems
            assert [type(part) for part in (call.step, call.asked_by, call.recorded)] == [str] * 3
            assert 0 <= call.attempt <= 2**31 - 1
            assert 0 <= call.seconds <= 3.2e9
            assert 0 <= call.started <= 1e11
            for text in (call.prompt, call.answer, call.stderr):
                assert text is None or 0 <= text.size <= 2**63 - 1
                if text is not None and text.text is not None:
                    assert len(text.text.encode("utf-8", "surrogatepass")) <= text.size
                    assert text_digest(text.text) == text.digest or text.cut
            assert call.exit_code is None or abs(call.exit_code) <= 2**31
            for said in (call.session_id, call.error_type, call.error):
                assert said is None or isinstance(said, str)

    read()


@pytest.mark.parametrize("number", ["NaN", "-Infinity", "1e999"])
def test_outputs_holding_a_number_no_adws_writes_are_named_and_left_out(number: str) -> None:
    """`status --step` and `report` show outputs checked: a number JSON cannot hold is named."""
    text = f'{{"x": {number}}}'
    checked = AttemptRecord("s", 0, 1, "succeeded", "", 0.0, None, None, text).checked()
    assert (checked.outputs_json, checked.problems) == (None, (f"outputs are not JSON: {text!r}",))


def test_outputs_holding_finite_numbers_are_kept() -> None:
    text = '{"x": 1.5, "y": -2e3}'
    checked = AttemptRecord("s", 0, 1, "succeeded", "", 0.0, None, None, text).checked()
    assert (checked.outputs_json, checked.problems) == (text, ())
