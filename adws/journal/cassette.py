"""A recorded run as a cassette: its agents' answers, replayed (`adws run W --replay RUN_ID`).

The journal keeps every exchange of a run; replaying it answers each agent
call whose step and prompt match one the run made, with the answer it got
then, so a real run, recorded once, becomes an offline regression test.
Calls are matched by the step that asked and the hash of the whole prompt;
a prompt asked several times gets its answers in the order they came,
the last one again after that. A call that matches nothing fails with a
diff against the closest prompt recorded for its step (see
`adws.testing.RecordingAgent`). Only calls that were answered are kept: a
call that timed out has nothing to replay.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, final

from adws.journal.exchanges import exchanges, text_digest
from adws.journal.records import UnreadableError, named_problems

if TYPE_CHECKING:
    from adws.agents.base import AgentResponse
    from adws.journal.store import Journal

__all__ = ["JournalCassette"]


@final
class JournalCassette:
    """The answers one recorded run's agents gave, by step and prompt."""

    def __init__(self, journal: Journal, run_id: str) -> None:
        """Load the run's answered exchanges; a run that kept no texts is a `ValueError`.

        A row that cannot be read whole is an `UnreadableError` naming each
        one: a replay answers from every recorded call or from none.
        """
        self.run_id = run_id
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, str], deque[str]] = {}
        self._prompts: dict[str, dict[str, str]] = {}
        recorded = exchanges(journal, run_id)
        problems = named_problems("exchanges", run_id, recorded)
        if problems:
            msg = f"run {run_id} cannot be replayed from rows the journal cannot read"
            raise UnreadableError(msg, problems, str(journal.path))
        for exchange in recorded:
            prompt, answer = exchange.prompt, exchange.answer
            if prompt.text is None or answer is None or answer.text is None:
                continue
            key = (exchange.asked_by, prompt.digest)
            self._answers.setdefault(key, deque()).append(answer.text)
            self._prompts.setdefault(exchange.asked_by, {})[prompt.digest] = prompt.text
        if recorded and not self._answers:
            msg = (
                f"run {run_id} kept no agent answers to replay (it ran with --no-transcripts, "
                "or no agent answered)"
            )
            raise ValueError(msg)

    @property
    def source(self) -> str:
        """Name the run the answers come from."""
        return f"run {self.run_id}"

    def find(self, step: str, prompt: str) -> dict[str, object] | None:
        """Return the next answer this step got to this prompt (the last one again after)."""
        with self._lock:
            found = self._answers.get((step, text_digest(prompt)))
            if not found:
                return None
            text = found.popleft() if len(found) > 1 else found[0]
        return {"text": text}

    def prompts(self, step: str) -> list[str]:
        """Return every prompt recorded for `step`."""
        with self._lock:
            return list(self._prompts.get(step, {}).values())

    def keep(self, step: str, _prompt: str, _response: AgentResponse) -> None:
        """Refuse to record: a run in the journal is replayed, never written to."""
        msg = f"a run in the journal is only replayed; cannot keep {step!r}'s answer"
        raise TypeError(msg)
