"""`RecordingAgent`: record a real agent's answers once, replay them in every test after.

Answers are kept in one JSON file, keyed by step and the SHA-256 of the
rendered prompt (so a changed prompt is a miss, never a stale answer):

    {"version": 1, "answers": [{"step": ..., "prompt_sha256": ..., "prompt": ...,
                                "text": ..., "usage": ..., "patch": ...}, ...]}

`patch` (present only for a call in a worktree that changed files) is
what the call changed there, as `git diff --binary` says it; a replay
applies it in the worktree in flight, so the files are as the recorded
agent left them (see `adws.workspaces.patches`). A patch that does not
apply, or an answer with a patch replayed outside any worktree, is an
`AgentFailed` naming the step and what git said.

The prompt is keyed with the run's own parts named stably (its worktrees
folder `<worktrees>`, its id `<run>`: see
`adws.journal.store.cassette.stable_prompt`), so a `worktree` step's prompt,
which names `<worktrees>/<run_id>/<label>`, replays in another run.
A replay miss is an `AgentFailed` whose message shows a diff against the
closest recorded prompt of that step, so the test says what changed.
Replayed answers report no usage: nothing was spent. The answers may come
from anything shaped like a `Cassette`: a recording file, or a run the
journal kept (`adws.journal.store.cassette.JournalCassette`, `--replay RUN_ID`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, Protocol, TypeAlias, final

from returns.io import IOFailure, IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws._exceptions import DefinitionError, MalformedError
from adws.agents.base import AgentBackend, AgentRequest, AgentResponse
from adws.agents.step import asking_path
from adws.engine.errors import ErrorType, PipelineError
from adws.engine.scope import current_gitdir, current_scope, current_worktree
from adws.journal.store.cassette import WORKTREES, stable_prompt, worktrees_root
from adws.workspaces.patches import CallEdits, GitError, PatchRefusedError, apply_patch

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Cassette", "Mode", "Recording", "RecordingAgent", "replay_key"]

Mode: TypeAlias = Literal["replay", "record", "auto"]
_MODES: Final = ("replay", "record", "auto")
_DIFF_LINES: Final = 60
_FIELDS: Final = frozenset({"step", "prompt_sha256", "prompt", "text"})
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _digest(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()


def replay_key(prompt: str) -> str:
    """Return `prompt` with the run in progress's own parts named stably (see the module)."""
    scope = current_scope()
    where = current_worktree()
    roots = (
        str(Path(scope.worktrees).resolve()) if scope.worktrees else None,
        None if where is None else worktrees_root(where, scope.run_id),
    )
    return stable_prompt(prompt, scope.run_id, dict.fromkeys(filter(None, roots), WORKTREES))


class Cassette(Protocol):
    """Where recorded answers come from: a `Recording` file, or a run in the journal."""

    @property
    def source(self) -> str:
        """Name where the answers are kept, for messages."""

    def find(self, step: str, prompt: str, path: str = "") -> dict[str, object] | None:
        """Return the answer (`{"text": ...}`) recorded for this step and prompt, if any.

        `path` names the attempt asking (a step, or a branch `best[1]`), for
        a cassette that tells branches apart.
        """

    def prompts(self, step: str) -> list[str]:
        """Return every prompt recorded for `step`."""

    def keep(
        self,
        step: str,
        prompt: str,
        response: AgentResponse,
        patch: str | None = None,
        path: str = "",
    ) -> None:
        """Record `response` as the answer to this step and prompt (what it changed, who asked)."""


@final
class Recording:
    """One recording file, shared by every agent that answers from it.

    A file that is not a recording is a `ValueError` naming the path. After
    each new answer the file is rewritten whole (through a temporary file
    and a rename), so a run killed halfway keeps what it recorded.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Load the answers at `path` (no file yet is no answers)."""
        self.path = Path(path)
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, str, str], dict[str, object]] = {
            (str(entry.get("path", "")), str(entry["step"]), str(entry["prompt_sha256"])): entry
            for entry in self._load()
        }

    @property
    def source(self) -> str:
        """Name the file."""
        return str(self.path)

    def _load(self) -> list[dict[str, object]]:
        if not self.path.exists():
            return []
        try:
            entries = json.loads(self.path.read_text(encoding="utf-8"))["answers"]
        except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
            msg = f"{self.path} is not a recording of agent answers ({type(exc).__name__})"
            raise MalformedError(msg) from exc
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and e.keys() >= _FIELDS for e in entries
        ):
            msg = f"{self.path} is not a recording of agent answers (not a list of answers)"
            raise MalformedError(msg)
        return list(entries)

    def find(self, step: str, prompt: str, path: str = "") -> dict[str, object] | None:
        """Return the answer recorded for this step and prompt, if any.

        The one recorded on `path` (the attempt asking: a branch `best[1]`)
        first, so branches that ask one prompt get their own answers back;
        else the first recorded for the step and prompt on any path.
        """
        digest = _digest(prompt)
        with self._lock:
            found = self._answers.get((path, step, digest))
            if found is not None:
                return found
            return next(
                (e for (_, name, key), e in self._answers.items() if (name, key) == (step, digest)),
                None,
            )

    def prompts(self, step: str) -> list[str]:
        """Return every prompt recorded for `step`."""
        with self._lock:
            found = (str(e["prompt"]) for (_, name, _), e in self._answers.items() if name == step)
            return list(dict.fromkeys(found))

    def keep(
        self,
        step: str,
        prompt: str,
        response: AgentResponse,
        patch: str | None = None,
        path: str = "",
    ) -> None:
        """Record `response` as the answer to this step and prompt, and save the file.

        `patch` is what the call changed in its worktree ("" for nothing;
        None outside a worktree, or when git could not take it); `path`
        names the attempt that asked (a branch `best[1]`). The file is JSON
        in UTF-8 with every other character as it is; a lone surrogate (a
        byte of a file that is not UTF-8, in a patch) is written escaped.
        """
        digest = _digest(prompt)
        entry: dict[str, object] = {
            "step": step,
            "prompt_sha256": digest,
            "prompt": prompt,
            "text": response.text,
            "usage": None if response.usage is None else response.usage.to_dict(),
            **({} if patch is None else {"patch": patch}),
            **({"path": path} if path else {}),
        }
        with self._lock:
            self._answers[(path, step, digest)] = entry
            self.path.parent.mkdir(parents=True, exist_ok=True)
            payload = {"version": 1, "answers": list(self._answers.values())}
            text = _SURROGATE.sub(
                lambda found: f"\\u{ord(found.group()):04x}",
                json.dumps(payload, indent=2, ensure_ascii=False) + "\n",
            )
            temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            temporary.write_text(text, encoding="utf-8")
            temporary.replace(self.path)


@final
class RecordingAgent:
    """Answer from a recording; record `inner`'s answers into it.

    `mode="replay"` only replays (a miss fails; `inner` may be None);
    `"record"` always asks `inner` and keeps each answer it gave;
    `"auto"` replays what is recorded and records the rest. `recording` is
    a path or a `Cassette` several agents share (`adws run --record`
    wraps every agent step of a workflow around one `Recording`; `--replay
    RUN_ID` around a `JournalCassette`).
    """

    def __init__(
        self,
        inner: AgentBackend | None,
        recording: str | os.PathLike[str] | Cassette,
        mode: Mode = "replay",
    ) -> None:
        """Load the recording; refuse a mode that cannot work."""
        if mode not in _MODES:
            msg = f"RecordingAgent: mode must be one of {', '.join(_MODES)}, got {mode!r}"
            raise DefinitionError(msg)
        if inner is None and mode != "replay":
            msg = f"RecordingAgent: mode {mode!r} needs an inner agent to record"
            raise DefinitionError(msg)
        self.inner = inner
        self.recording: Cassette = (
            Recording(recording) if isinstance(recording, str | os.PathLike) else recording
        )
        self.mode = mode

    def __repr__(self) -> str:
        """Show the file and the mode."""
        return f"RecordingAgent({self.recording.source!r}, mode={self.mode!r})"

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Replay the recorded answer to this prompt, or ask `inner` and record it."""
        key = replay_key(request.prompt)
        path = asking_path(request)
        found = self.recording.find(request.step_name, key, path)
        if found is not None and self.mode != "record":
            unapplied = self._apply(request, found)
            if unapplied is not None:
                return IOFailure(unapplied)
            replayed = {"replayed": self.recording.source}
            return IOSuccess(AgentResponse(str(found["text"]), replayed))
        if self.inner is None or self.mode == "replay":
            return IOFailure(self._miss(request, key))
        edits = CallEdits()
        answer = self.inner(request)
        if isinstance(answer, IOSuccess):
            response = unsafe_perform_io(answer.unwrap())
            self.recording.keep(request.step_name, key, response, edits.patch(), path)
        return answer

    def _apply(self, request: AgentRequest, found: Mapping[str, object]) -> PipelineError | None:
        """Put back in the worktree in flight what the recorded call changed; say why not."""
        where = f"step {request.step_name!r}"
        why = found.get("unreplayable")
        patch = found.get("patch")
        folder = current_worktree()
        if why is not None:
            why = f"the answer {self!r} holds for {where} cannot be replayed: {why}"
        elif folder is None and patch:
            why = (
                f"the answer {self!r} holds for {where} changed files in a worktree,"
                " but this call runs in none"
            )
        elif folder is None or patch == "":
            return None
        elif not isinstance(patch, str | list):
            why = (
                f"the answer {self!r} holds for {where} comes with no record of what it changed"
                " in its worktree (it was recorded outside one, before adws kept patches, or"
                " git could not take it): record the run again"
            )
        else:
            try:
                for each in [patch] if isinstance(patch, str) else patch:
                    apply_patch(
                        folder, str(each), current_gitdir(), max_bytes=request.max_output_bytes
                    )
            except PatchRefusedError as exc:
                why = f"{self!r}: the change the recorded answer of {where} made is refused: {exc}"
            except GitError as exc:
                why = (
                    f"{self!r}: the change the recorded answer of {where} made does not apply"
                    f" here (has the worktree's base moved since the recorded run?)\n{exc}"
                )
            else:
                return None
        return PipelineError(request.step_name, ErrorType.AGENT_FAILED, why, {"permanent": True})

    def _miss(self, request: AgentRequest, asked: str) -> PipelineError:
        recorded = self.recording.prompts(request.step_name)
        where = f"step {request.step_name!r}"
        if not recorded:
            message = f"{self!r} has no answer recorded for {where}; record one with mode='record'"
            return PipelineError(
                request.step_name, ErrorType.AGENT_FAILED, message, {"permanent": True}
            )

        def likeness(prompt: str) -> float:
            return difflib.SequenceMatcher(None, prompt, asked).ratio()

        closest = max(recorded, key=likeness)
        diff = list(
            difflib.unified_diff(
                closest.splitlines(), asked.splitlines(), "recorded", "asked", lineterm=""
            )
        )
        shown = "\n".join(diff[:_DIFF_LINES]) + ("\n…" if len(diff) > _DIFF_LINES else "")
        message = (
            f"{self!r} has no answer for this prompt of {where}; the closest recorded prompt"
            f" differs:\n{shown}"
        )
        # The same prompt misses again: retrying cannot help.
        context: Mapping[str, object] = {"diff": diff, "permanent": True}
        return PipelineError(request.step_name, ErrorType.AGENT_FAILED, message, context)
