"""A run's messages several to a put: held until one must go, then sent in order, none lost."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adws.batch.outbox import HOLD, Flusher, Outbox
from adws.batch.tasks import Message
from adws.engine.events import StepSkipped, StepStarted
from tests.conftest import wait_for

EXCHANGE: Message = ("journal", "r", ["exchange"], 0.0)
SUCCEEDED: Message = ("journal", "r", ["succeeded"], 0.5)
FINISHED: Message = ("finished", "r", "succeeded", None, ["end"], ())


def started(index: int = 1) -> StepStarted:
    return StepStarted("r", f"s{index}", index, 3, 1, always_run=False)


def groups(*pgids: int) -> Message:
    return ("groups", "r", "host", pgids)


class Puts:
    """The coordinator's side of the queue: each put as it came, or a failure for the next."""

    def __init__(self) -> None:
        self.puts: list[list[Message]] = []
        self.failures: list[Exception] = []

    def __call__(self, messages: list[Message]) -> None:
        if self.failures:
            raise self.failures.pop()
        self.puts.append(messages)


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_steps_rows_wait_for_the_next_step_to_start_then_go_in_one_put_in_order() -> None:
    puts = Puts()
    outbox = Outbox(puts)
    outbox.send(EXCHANGE)
    outbox.send(SUCCEEDED)
    outbox.observe(StepSkipped("r", "s1", 1, 3, "condition"))  # not a step boundary
    assert (puts.puts, outbox.held) == ([], [EXCHANGE, SUCCEEDED])
    outbox.observe(started())
    assert (puts.puts, outbox.held) == ([[EXCHANGE, SUCCEEDED]], [])


def test_a_step_start_with_nothing_held_sends_nothing() -> None:
    puts = Puts()
    Outbox(puts).observe(started(0))
    assert puts.puts == []


def test_a_new_child_goes_at_once_with_what_was_held_and_a_reaped_one_waits() -> None:
    puts = Puts()
    outbox = Outbox(puts)
    outbox.send(EXCHANGE)
    outbox.send(groups(7))
    outbox.send(groups(7, 8))
    outbox.send(groups(8))  # 7 reaped: nothing new for the coordinator to stop
    outbox.send(groups())
    assert (puts.puts, outbox.held) == (
        [[EXCHANGE, groups(7)], [groups(7, 8)]],
        [groups(8), groups()],
    )
    outbox.send(groups(9))  # after a reap, a new one: the reaps first
    assert (puts.puts[-1], outbox.held) == ([groups(8), groups(), groups(9)], [])


@pytest.mark.parametrize("end", [FINISHED, ("failed", "r", "did not load")])
def test_the_runs_end_goes_at_once_with_everything_held(end: Message) -> None:
    puts = Puts()
    outbox = Outbox(puts)
    outbox.send(EXCHANGE)
    outbox.send(end)
    assert (puts.puts, outbox.held) == ([[EXCHANGE, end]], [])


def test_a_put_that_fails_keeps_its_messages_first_for_the_next_and_raises() -> None:
    puts = Puts()
    outbox = Outbox(puts)
    outbox.send(EXCHANGE)
    puts.failures.append(OSError("scheduler gone"))
    with pytest.raises(OSError, match="scheduler gone"):
        outbox.send(groups(7))
    assert (puts.puts, outbox.held) == ([], [EXCHANGE, groups(7)])
    outbox.send(SUCCEEDED)
    outbox.flush()
    assert (puts.puts, outbox.held) == ([[EXCHANGE, groups(7), SUCCEEDED]], [])


def test_an_outbox_is_due_once_its_oldest_message_has_waited_hold_seconds() -> None:
    clock = Clock()
    outbox = Outbox(Puts(), clock)
    assert not outbox.due(clock.now + 10)  # nothing held
    outbox.send(EXCHANGE)
    clock.now += HOLD / 2
    outbox.send(SUCCEEDED)  # the oldest dates the batch
    assert (outbox.due(100.0 + HOLD - 0.001), outbox.due(100.0 + HOLD)) == (False, True)


def test_the_flusher_sends_only_what_was_held_too_long_and_keeps_what_fails() -> None:
    clock = Clock()
    late, fresh, failing = Puts(), Puts(), Puts()
    flusher = Flusher(clock)
    boxes = {name: Outbox(puts, clock) for name, puts in [("late", late), ("fresh", fresh)]}
    boxes["failing"] = Outbox(failing, clock)
    boxes["late"].send(EXCHANGE)
    boxes["failing"].send(SUCCEEDED)
    clock.now += HOLD
    boxes["fresh"].send(EXCHANGE)
    flusher.outboxes.update(boxes)  # watched, without the thread
    failing.failures.append(OSError("scheduler gone"))
    flusher.tick()
    assert (late.puts, fresh.puts, failing.puts) == ([[EXCHANGE]], [], [])
    assert boxes["failing"].held == [SUCCEEDED]  # the run's next send takes it
    flusher.forget("late")
    flusher.forget("late")  # forgetting twice is harmless
    assert set(flusher.outboxes) == {"fresh", "failing"}


def test_the_flushers_thread_sends_a_long_held_batch_and_stops_when_told() -> None:
    clock = Clock()
    puts = Puts()
    flusher = Flusher(clock)
    outbox = Outbox(puts, clock)
    outbox.send(EXCHANGE)
    clock.now += HOLD
    flusher.watch("r", outbox)
    flusher.watch("r2", Outbox(Puts(), clock))  # one thread for every outbox
    thread = flusher.thread
    assert thread is not None
    wait_for(lambda: puts.puts == [[EXCHANGE]], 10)
    assert flusher.thread is thread
    flusher.stopped.set()
    thread.join(10)
    assert not thread.is_alive()


def test_two_threads_sending_keep_every_message_once_in_order() -> None:
    puts = Puts()
    outbox = Outbox(puts)
    sent = [("journal", "r", [index], 0.0) for index in range(2_000)]

    def flush_often() -> None:
        for _ in range(500):
            outbox.flush()

    flusher = threading.Thread(target=flush_often)
    flusher.start()
    for message in sent:
        outbox.send(message)
    flusher.join()
    outbox.flush()
    assert [message for put in puts.puts for message in put] == sent


MESSAGES = st.one_of(
    st.builds(lambda n: ("journal", "r", [n], 0.0), st.integers(0, 9)),
    st.builds(lambda pgids: groups(*pgids), st.lists(st.integers(1, 4), max_size=3)),
    st.just("step"),
)


@given(said=st.lists(MESSAGES, max_size=40), ends=st.booleans())
def test_whatever_a_run_says_reaches_the_coordinator_once_in_order(
    *, said: list[Message | str], ends: bool
) -> None:
    puts = Puts()
    outbox = Outbox(puts)
    messages: list[Message] = []
    seen: set[int] = set()
    for each in said:
        if each == "step":
            outbox.observe(started())
            assert outbox.held == []  # a step starts with every row before it sent
            continue
        assert isinstance(each, tuple)
        outbox.send(each)
        messages.append(each)
        if each[0] == "groups":
            pgids = set(each[3])  # type: ignore[call-overload] # a tuple of pgids, as built
            if pgids - seen:
                assert outbox.held == []  # a new child is reported at once
            seen = pgids
    if ends:
        outbox.send(FINISHED)
        messages.append(FINISHED)
        assert outbox.held == []
    assert [message for put in puts.puts for message in put] + outbox.held == messages
