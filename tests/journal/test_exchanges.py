"""Every agent exchange kept: per attempt and branch, compressed, deduplicated, capped, pruned."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.io import IOFailure

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
    run_workflow,
    with_verification,
)
from adws.agents import AgentResponse, ScriptedAgent
from adws.engine.events import AgentExchanged
from adws.engine.usage import Usage
from adws.journal import Journal, JournalObserver
from adws.journal.records.exchanges import Text, text_digest
from adws.journal.store.cassette import JournalCassette
from adws.journal.store.exchanges import exchange_statements, exchanges, keeps_transcripts
from adws.journal.store.prune import prune
from adws.journal.store.sqlite import WORDS
from tests.conftest import Events

DONE = "STATUS: done\nSUMMARY: {0}\n"
TOPIC = WorkflowContext(inputs={"topic": "a"})
CONTRACT = OutputContract(("SUMMARY",))


def ask(agent: ScriptedAgent, name: str = "ask", prompt: str = "Summarise {topic}.") -> Workflow:
    step = agent_step(name, prompt=prompt, agent=agent, contract=CONTRACT)
    return Workflow("w", (step,), inputs=("topic",))


def journaled(tmp_path: Path, workflow: Workflow, run_id: str = "r", **inputs: object) -> Journal:
    journal = Journal(tmp_path / "runs.db")
    run_workflow(
        workflow,
        WorkflowContext(inputs=inputs),
        observers=[JournalObserver(journal, "f")],
        run_id=run_id,
        sleep=lambda _s: None,
    )
    return journal


def test_each_attempt_keeps_its_prompt_answer_and_what_the_call_cost(tmp_path: Path) -> None:
    agent = ScriptedAgent(
        [
            "no report at all",
            lambda _r: AgentResponse(DONE.format("fine"), {"session_id": "s-2"}, Usage(0.5)),
        ]
    )
    journal = journaled(tmp_path, ask(agent), topic="rust")
    first, second = exchanges(journal, "r")
    assert (first.step, first.attempt, first.asked_by) == ("ask", 1, "ask")
    assert first.prompt.text is not None
    assert first.prompt.text.startswith("Summarise rust.\n\n## Output contract")
    assert first.answer == Text(text_digest("no report at all"), 16, "no report at all")
    assert (first.error_type, first.error) == ("ContractViolation", "STATUS missing")
    assert (second.attempt, second.session_id, second.usage) == (2, "s-2", Usage(0.5))
    assert second.answer is not None
    assert second.answer.text == DONE.format("fine")
    assert second.error_type is None
    assert "## Feedback from earlier attempts" in str(second.prompt.text)
    assert [e.attempt for e in exchanges(journal, "r", step="ask", attempt=2)] == [2]
    assert exchanges(journal, "r", step="other") == []


def test_a_failed_call_keeps_its_exit_code_stderr_and_output(tmp_path: Path) -> None:
    details = {"returncode": 3, "stderr_tail": "boom\n", "stdout_tail": "partial", "session_id": 7}
    failed = PipelineError("ask", "AgentFailed", "agent command `x` exited with 3: boom", details)
    step = agent_step("ask", prompt="Go.", agent=lambda _r: IOFailure(failed), retry=RetryPolicy(1))
    journal = journaled(tmp_path, Workflow("w", (step,)))
    [call] = exchanges(journal, "r")
    assert (call.exit_code, call.session_id) == (3, None)  # a session id must be text
    assert call.stderr is not None
    assert (call.stderr.text, call.answer) == ("boom\n", Text(text_digest("partial"), 7, "partial"))
    assert call.error_type == "AgentFailed"


def test_texts_are_stored_once_compressed_whatever_asks_for_them(tmp_path: Path) -> None:
    same = "STATUS: done\nSUMMARY: " + "the same long answer " * 200 + "\n"
    item = agent_step(
        "check", prompt="Check the claims.", agent=ScriptedAgent([same] * 3), contract=CONTRACT
    )
    workflow = Workflow("w", (fan_out("checks", item, over="claims"),), inputs=("claims",))
    journal = journaled(tmp_path, workflow, claims=["a", "b", "c"])
    calls = exchanges(journal, "r")
    assert sorted(call.step for call in calls) == ["checks[0]", "checks[1]", "checks[2]"]
    [(texts, stored)] = journal.query("SELECT COUNT(*), SUM(length(data)) FROM texts")
    assert texts == 2  # one prompt (no item placeholder) and one answer, for three calls
    assert stored < len(same) / 5


def test_a_text_is_kept_up_to_the_steps_output_cap_and_says_it_was_cut(tmp_path: Path) -> None:
    contract = OutputContract(("SUMMARY",), max_output_bytes=64)
    step = agent_step(
        "ask", prompt="é" * 100, agent=ScriptedAgent([DONE.format("x")]), contract=contract
    )
    journal = journaled(tmp_path, Workflow("w", (step,)))
    [call] = exchanges(journal, "r")
    assert call.prompt.text == "é" * 32  # 64 bytes, never half a character
    assert call.prompt.cut
    assert call.prompt.size > 200
    assert call.answer is not None
    assert not call.answer.cut


def test_without_transcripts_only_hashes_and_sizes_are_kept(journal_at: str) -> None:
    journal = Journal(journal_at)
    observer = JournalObserver(journal, "f", transcripts=False)
    run_workflow(ask(ScriptedAgent([DONE.format("x")])), TOPIC, observers=[observer], run_id="r")
    [call] = exchanges(journal, "r")
    assert call.prompt.text is None
    assert call.answer == Text(text_digest(DONE.format("x")), 24, None)
    assert not call.answer.cut
    assert journal.query("SELECT COUNT(*) FROM texts") == [(0,)]


@pytest.mark.parametrize(
    ("value", "refused", "kept"),
    [
        (None, False, True),
        ("1", False, True),
        ("0", False, False),
        (" Off ", False, False),
        ("no", False, False),
        ("yes", True, False),
    ],
)
def test_transcripts_are_switched_off_by_the_flag_or_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, *, refused: bool, kept: bool
) -> None:
    if value is None:
        monkeypatch.delenv("ADWS_TRANSCRIPTS", raising=False)
    else:
        monkeypatch.setenv("ADWS_TRANSCRIPTS", value)
    assert keeps_transcripts(refused=refused) is kept


def test_pruning_a_run_removes_its_exchanges_and_the_texts_only_it_used(tmp_path: Path) -> None:
    journal = journaled(tmp_path, ask(ScriptedAgent([DONE.format("old")])), "old", topic="a")
    journaled(tmp_path, ask(ScriptedAgent([DONE.format("new")])), "new", topic="a")
    assert journal.query("SELECT COUNT(*) FROM texts") == [(3,)]  # one shared prompt
    assert prune(journal, keep=1) == 1
    assert exchanges(journal, "old") == []
    [kept] = exchanges(journal, "new")
    assert kept.prompt.text is not None
    assert journal.query("SELECT COUNT(*) FROM texts") == [(2,)]


def test_a_journal_written_before_exchanges_were_kept_has_none(tmp_path: Path) -> None:
    import sqlite3  # noqa: PLC0415 - only this test builds an old journal by hand

    from adws.journal import MIGRATIONS  # noqa: PLC0415 - as above

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for number, statements in enumerate(MIGRATIONS[:8], 1):
        for statement in statements:
            db.execute(statement.format_map(WORDS))
        db.execute("INSERT INTO schema_version VALUES (?)", (number,))
    db.commit()
    db.close()
    assert exchanges(Journal(path, readonly=True), "r") == []
    assert exchanges(Journal(path), "r") == []  # migrated: the table is there, and empty


def test_a_stored_text_that_cannot_be_read_reads_as_not_kept(tmp_path: Path) -> None:
    journal = journaled(tmp_path, ask(ScriptedAgent([DONE.format("x")])), topic="a")
    journal.write("UPDATE texts SET data = ?", (b"not zlib",))
    [call] = exchanges(journal, "r")
    assert (call.prompt.text, call.answer and call.answer.text) == (None, None)


def test_every_verification_round_and_its_calls_belong_to_the_steps_attempt(
    journal_at: str, events: Events
) -> None:
    main = agent_step(
        "draft",
        prompt="Draft.",
        agent=ScriptedAgent([DONE.format("1"), DONE.format("2")]),
        contract=CONTRACT,
    )
    verify = agent_step(
        "review",
        prompt="Review {summary}.",
        agent=ScriptedAgent(["STATUS: retry\nREASON: too short\n", "STATUS: done\n"]),
        retry=RetryPolicy(1),
    )
    journal = Journal(journal_at)
    run_workflow(
        Workflow("w", (with_verification(main, verify),)),
        observers=[JournalObserver(journal, "f"), events],
        run_id="r",
    )
    calls = exchanges(journal, "r")
    assert [(c.step, c.attempt, c.asked_by) for c in calls] == [
        ("draft_verified", 1, "draft"),
        ("draft_verified", 1, "review"),
        ("draft_verified", 1, "draft"),
        ("draft_verified", 1, "review"),
    ]
    [round_row] = [a for a in journal.attempts("r") if a.status == "round_failed"]
    assert (round_row.step, round_row.attempt, round_row.usage) == ("draft_verified", 1, None)
    assert round_row.error is not None
    assert (round_row.error.error_type, round_row.error.context["round"]) == (
        "AgentRetryRequested",
        1,
    )
    assert events.kinds().count("RoundFailed") == 1


def test_an_exchange_outside_a_run_is_named_by_its_request(events: Events) -> None:
    step = agent_step("ask", prompt="Go.", agent=ScriptedAgent([DONE.format("x")]))
    step.run(WorkflowContext())  # no run: nobody hears the exchange, and nothing breaks
    assert events.events == []


def test_a_run_replays_from_the_journal_by_step_and_prompt(tmp_path: Path) -> None:
    answers = [DONE.format("first"), DONE.format("second")]
    journal = journaled(tmp_path, ask(ScriptedAgent(["no report", *answers])), topic="a")
    cassette = JournalCassette(journal, "r")
    assert cassette.source == "run r"
    [first_prompt, second_prompt] = cassette.prompts("ask")
    assert cassette.find("ask", first_prompt) == {"text": "no report"}
    assert cassette.find("ask", second_prompt) == {"text": answers[0]}
    assert cassette.find("ask", "another prompt") is None
    assert cassette.prompts("nobody") == []
    with pytest.raises(TypeError, match="only replayed; cannot keep 'ask'"):
        cassette.keep("ask", first_prompt, AgentResponse("x"))


def test_a_prompt_asked_again_gets_its_answers_in_order_then_the_last_again(
    journal_at: str,
) -> None:
    journal = Journal(journal_at)
    for answer in ("one", "two"):
        event = AgentExchanged(
            "r", "ask", 1, "ask", "same prompt", answer, 0, "", None, 0.1, None, None, 1000
        )
        journal.apply(exchange_statements(event))
    cassette = JournalCassette(journal, "r")
    found = [cassette.find("ask", "same prompt") for _ in range(3)]
    assert found == [{"text": "one"}, {"text": "two"}, {"text": "two"}]


def test_a_run_that_kept_no_transcripts_cannot_be_replayed(journal_at: str) -> None:
    journal = Journal(journal_at)
    observer = JournalObserver(journal, "f", transcripts=False)
    run_workflow(ask(ScriptedAgent([DONE.format("x")])), TOPIC, observers=[observer], run_id="r")
    with pytest.raises(ValueError, match="run r kept no agent answers to replay"):
        JournalCassette(journal, "r")
    assert JournalCassette(journal, "nothing-recorded").prompts("ask") == []


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(["\udce9", "\x00"])),
    limit=st.integers(min_value=0, max_value=64),
)
def test_any_text_comes_back_as_its_first_bytes_up_to_the_cap(text: str, limit: int) -> None:
    event = AgentExchanged("r", "s", 1, "s", text, text, None, text, None, 0.0, None, None, limit)
    statements = exchange_statements(event)
    [(_, (digest, data))] = {statement for statement in statements if "texts" in statement[0]}
    assert isinstance(data, bytes)
    kept = zlib.decompress(data).decode("utf-8", "surrogatepass")
    whole = text.encode("utf-8", "surrogatepass")
    assert text.startswith(kept)
    assert len(kept.encode("utf-8", "surrogatepass")) <= limit
    assert whole.startswith(kept.encode("utf-8", "surrogatepass"))
    assert digest == text_digest(text)
    row = statements[-1][1]
    assert row[8] == len(whole)
    assert Text(digest, len(whole), kept).cut is (len(whole) > limit)


@pytest.mark.parametrize(
    ("raised", "kind"),
    [(RuntimeError("no network"), "StepException"), (KeyboardInterrupt(), "Interrupted")],
)
def test_a_call_that_raised_keeps_its_prompt_and_why(
    tmp_path: Path, raised: BaseException, kind: str
) -> None:
    from adws.testing import FunctionAgent  # noqa: PLC0415 - only here

    def boom(_request: object) -> str:
        raise raised

    step = agent_step("ask", prompt="Go.", agent=FunctionAgent(boom), retry=RetryPolicy(1))
    journal = journaled(tmp_path, Workflow("w", (step,)))
    [call] = exchanges(journal, "r")
    assert call.prompt.text is not None
    assert call.prompt.text.startswith("Go.")
    assert (call.answer, call.error_type) == (None, kind)
    assert str(call.error).startswith(f"the agent raised {type(raised).__name__}")


def test_hostile_worktree_rows_name_no_folder_in_the_replay_key(tmp_path: Path) -> None:
    """A row's path that is empty, relative or at the top never makes `.` or `/` a name."""
    journal = journaled(tmp_path, ask(ScriptedAgent([DONE.format("x")])), topic="./r/x /r/x")
    for label, path in (("a", ""), ("b", "r/x"), ("c", "/r/x"), ("d", "/w/other/x")):
        journal.query(
            "INSERT INTO worktrees (run_id, label, step, repo, path, branch, base, tree, state,"
            " recorded) VALUES ('r', ?, 'ask', '/repo', ?, 'b', 'c', '', 'present', 'now')",
            (label, path),
        )
    [prompt] = JournalCassette(journal, "r").prompts("ask")
    assert "./<run>/x /<run>/x" in prompt
