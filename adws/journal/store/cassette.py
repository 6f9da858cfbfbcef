"""A recorded run as a cassette: its agents' answers, replayed (`adws run W --replay RUN_ID`).

The journal keeps every exchange of a run; replaying it answers each agent
call whose step and prompt match one the run made, with the answer it got
then, so a real run, recorded once, becomes an offline regression test.
Calls are matched by the step that asked and the hash of the whole prompt;
a prompt asked several times gets its answers in the order they came,
the last one again after that. A call that matches nothing fails with a
diff against the closest prompt recorded for its step (see
`adws.testing.RecordingAgent`). Only calls that were answered are kept: a
call that timed out has nothing to replay, but what it changed in its
worktree is put back with the next answer of its path. A call in a
worktree comes with its `patch` ("" when it changed nothing), which the
replay applies there, so the files are as the recorded agent left them; a
patch the journal kept only in part (past the step's output cap) or not
at all (`--no-transcripts`) makes that answer one that cannot be replayed,
said when it is asked for, and so does an answer with no patch at all
asked for in a worktree (see `adws.testing.RecordingAgent`).

The key is the prompt with its run's own parts replaced by stable names
(`stable_prompt`): the run's worktrees folder (`<worktrees>`), the journal's
folder (`<journal>`) and the run id (`<run>`), so a `worktree` step, whose
prompt names `<worktrees>/<run_id>/<label>`, matches in another run,
and a journal copied elsewhere replays too.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

from adws._exceptions import DefinitionTypeError, RefusedError
from adws.journal.records.exchanges import Text, text_digest
from adws.journal.records.runs import UnreadableError, named_problems
from adws.journal.store.exchanges import exchanges
from adws.journal.store.workspaces import worktrees_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from adws.agents.base import AgentResponse
    from adws.journal.store.journal import Journal

__all__ = ["JOURNAL", "RUN", "WORKTREES", "JournalCassette", "stable_prompt", "worktrees_root"]

WORKTREES: Final = "<worktrees>"
"""What a run's worktrees folder is called in a replay key."""
JOURNAL: Final = "<journal>"
"""What the journal's folder is called in a replay key."""
RUN: Final = "<run>"
"""What the run's id is called in a replay key."""


def worktrees_root(path: str, run_id: str) -> str | None:
    """Return the worktrees folder a worktree of `run_id` at `path` lies in, if it is one.

    A worktree's folder is `<worktrees>/<run_id>/<label>`; anything else (a
    journal row is hostile input: relative, empty, at the top) names none,
    so a replay key never replaces `.` or `/`.

    >>> worktrees_root("/p/.adws/worktrees/r1/fix", "r1"), worktrees_root("/r1/fix", "r1")
    ('/p/.adws/worktrees', None)
    """
    place = Path(path)
    root = place.parent.parent
    if not place.is_absolute() or not run_id or place.parent.name != run_id:
        return None
    return None if root == Path(root.anchor) else str(root)


def stable_prompt(prompt: str, run_id: str = "", folders: Mapping[str, str] | None = None) -> str:
    """Replace a run's own parts of `prompt` by stable names: its folders, then its id.

    `folders` maps a folder to its name; the longest goes first, so a
    worktrees folder inside the journal's is named as itself. The run id
    is replaced where it stands as a word of its own (a branch
    `adws/<run_id>/fix` too).

    >>> stable_prompt(
    ...     "cd /p/.adws/worktrees/1a2b3c4d5e6f/fix; git switch adws/1a2b3c4d5e6f/fix",
    ...     "1a2b3c4d5e6f",
    ...     {"/p/.adws": JOURNAL, "/p/.adws/worktrees": WORKTREES},
    ... )
    'cd <worktrees>/<run>/fix; git switch adws/<run>/fix'
    """
    for folder in sorted(folders or {}, key=len, reverse=True):
        prompt = prompt.replace(folder, (folders or {})[folder])
    if run_id:
        prompt = re.sub(rf"(?<![\w-]){re.escape(run_id)}(?![\w-])", RUN, prompt)
    return prompt


def _patch(kept: Text | None) -> dict[str, object]:
    """Say what a replay of this answer applies in its worktree: a patch, or why it cannot."""
    if kept is None:
        return {}
    if kept.text is None:
        return {"unreplayable": "its change to the worktree was not kept (--no-transcripts)"}
    if kept.cut:
        return {
            "unreplayable": (
                f"its change to the worktree ({kept.size} bytes) was kept only in part,"
                " past the step's output cap"
            )
        }
    return {"patch": kept.text}


def _together(earlier: list[dict[str, object]], change: dict[str, object]) -> dict[str, object]:
    """Join what unanswered calls of the path changed before this one to its own change.

    A call that timed out has no answer to replay, but its edits stay in
    the worktree: the next answer replayed on its path puts them back
    first, one patch after the other (`patch` is then a list).

    >>> _together([{"patch": "A"}], {"patch": "B"}), _together([{"patch": "A"}], {})
    ({'patch': ['A', 'B']}, {})
    >>> _together([], {"patch": "B"})
    {'patch': 'B'}
    """
    why = next((e["unreplayable"] for e in [*earlier, change] if "unreplayable" in e), None)
    if why is not None:
        return {"unreplayable": why}
    if "patch" not in change or not earlier:
        return change
    return {"patch": [str(e["patch"]) for e in [*earlier, change]]}


@final
class JournalCassette:
    """The answers one recorded run's agents gave, by step and prompt."""

    def __init__(self, journal: Journal, run_id: str) -> None:
        """Load the run's answered exchanges; a run that kept no texts is a `ValueError`.

        A row that cannot be read whole is an `UnreadableError` naming each
        one: a replay answers from every recorded call or from none.
        """
        self.run_id = run_id
        self._journal: dict[str, str] = {}
        if isinstance(journal.path, Path):
            self._journal[str(journal.path.resolve().parent)] = JOURNAL
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, str, str], deque[dict[str, object]]] = {}
        self._prompts: dict[str, dict[str, str]] = {}
        recorded = exchanges(journal, run_id)
        roots = (worktrees_root(each.path, run_id) for each in worktrees_of(journal, run_id))
        places = {**self._journal, **{root: WORKTREES for root in roots if root is not None}}
        problems = named_problems("exchanges", run_id, recorded)
        if problems:
            msg = f"run {run_id} cannot be replayed from rows the journal cannot read"
            raise UnreadableError(msg, problems, str(journal.path))
        unanswered: dict[str, list[dict[str, object]]] = {}
        for exchange in recorded:
            prompt, answer = exchange.prompt, exchange.answer
            change = _patch(exchange.patch)
            if prompt.text is None or answer is None or answer.text is None:
                if change.get("patch") or "unreplayable" in change:
                    unanswered.setdefault(exchange.step, []).append(change)
                continue
            stable = stable_prompt(prompt.text, run_id, places)
            digest = text_digest(stable)
            earlier = unanswered.pop(exchange.step, [])
            entry = {"text": answer.text, **_together(earlier, change)}
            key = (exchange.step, exchange.asked_by, digest)
            self._answers.setdefault(key, deque()).append(entry)
            self._prompts.setdefault(exchange.asked_by, {})[digest] = stable
        if recorded and not self._answers:
            msg = (
                f"run {run_id} kept no agent answers to replay (it ran with --no-transcripts, "
                "or no agent answered)"
            )
            raise RefusedError(msg)

    @property
    def source(self) -> str:
        """Name the run the answers come from."""
        return f"run {self.run_id}"

    def find(self, step: str, prompt: str, path: str = "") -> dict[str, object] | None:
        """Return the next answer this step got to this prompt (the last one again after).

        `prompt` is a replay key (see `adws.testing.RecordingAgent`); the
        journal's folder in it is named here, as in the recorded prompts.
        `path` names the attempt asking (a branch, `best[1]`): branches
        that ask the same prompt get the answers their own branch got,
        whatever order they run in now. A path the run never recorded
        (a renamed step) gets the answers of the first path that asked.
        """
        digest = text_digest(stable_prompt(prompt, "", self._journal))
        with self._lock:
            found = self._answers.get((path, step, digest)) or next(
                (q for (_, name, key), q in self._answers.items() if (name, key) == (step, digest)),
                None,
            )
            if found is None:
                return None
            return found.popleft() if len(found) > 1 else found[0]

    def prompts(self, step: str) -> list[str]:
        """Return every prompt recorded for `step`."""
        with self._lock:
            return list(self._prompts.get(step, {}).values())

    def keep(
        self,
        step: str,
        _prompt: str,
        _response: AgentResponse,
        _patch: str | None = None,
        _path: str = "",
    ) -> None:
        """Refuse to record: a run in the journal is replayed, never written to."""
        msg = f"a run in the journal is only replayed; cannot keep {step!r}'s answer"
        raise DefinitionTypeError(msg)
