"""The run journal: every run, durable, in a SQLite file or on a PostgreSQL server a team shares.

One journal, two backends: a SQLite file (`.adws/runs.db` by default, WAL
mode, for one machine and its processes) or a PostgreSQL server
(`postgresql://` URL, for a team: several hosts, workers, a queue). Its
parts, by role:

- `records`: what the journal holds, as values read defensively (a run
  and its attempts, its options, contexts and errors as JSON, a resume's
  plan, worktrees, approvals, sessions, exchanges, diffs, workers, who
  holds a run); no SQL;
- `store`: the SQL and only it: the `Journal` (one transaction per event),
  the schema's forward migrations, the backend seam (`backend`) with one
  module per backend naming what differs (`sqlite`, `postgres`), what each
  event writes (`statements`, `observer`), claims and cancels, the queue,
  batches, and the readers of every table;
- `identity`: which workflow a run ran: per-step fingerprints, the
  canonical form they hash, and the first homes of adws's own modules
  (so a journal written before a move still resumes).

`from adws.journal import Journal` and the other names below are the public
way in; `prune(journal, keep=N)` is what `Journal.prune` was.
"""

from adws.journal.records.plan import StepPlan, plan_resume, resume_point, stored_branches
from adws.journal.records.runs import AttemptRecord, RunRecord
from adws.journal.store.journal import DEFAULT_PATH, ENV_VAR, Journal, JournalError
from adws.journal.store.observer import JournalObserver
from adws.journal.store.prune import prune
from adws.journal.store.schema import MIGRATIONS

__all__ = [
    "DEFAULT_PATH",
    "ENV_VAR",
    "MIGRATIONS",
    "AttemptRecord",
    "Journal",
    "JournalError",
    "JournalObserver",
    "RunRecord",
    "StepPlan",
    "plan_resume",
    "prune",
    "resume_point",
    "stored_branches",
]
