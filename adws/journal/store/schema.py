"""The journal's schema: the forward migrations, applied in order, only ever appended.

Version 1 stored a whole context per step; 2 added the child process groups
of the step in flight; 3 stores per step only the promoted outputs and the
step's fingerprint, and a run's inputs apart from its row; 4 added batches;
5 records what each attempt's agent calls cost; 6 records the options a run
was started with (`RunOptions`), so a resume uses them again; 7 the session
ids the agent CLIs reported per attempt (claude's session, codex's thread); 8
records which process holds a batch (so a second coordinator is refused)
and the batch's spending cap (`--batch-max-cost`); 9 keeps every agent
exchange (`exchanges`), its texts compressed and stored once by hash
(`texts`), and when each attempt started (`attempts.started`, Unix
seconds), so status and reports time steps by the wall clock; 10 keeps a
run's worktrees (base commit, content hash, state) and the questions its
approval steps asked, with the decisions people made; 11 keeps the git
directory git made for each worktree (adws's git names it; a `.git` that
points elsewhere is drift) and how many of the run's attempt rows were
recorded before the worktree's latest (a resume tells an attempt still in
flight from one that ended); 12 keeps, with a decision on a question a budget
asked, the budget `adws approve --max-cost/--max-tokens` raised it to; 13
keeps the session each agent call ran in (`agent_sessions`), as soon as its
CLI names it, with the session it continued, why it could not, and whether
the call ended; 14 keeps when a parked run may go on (`runs.wake_at`, Unix
seconds) and why it parked (`runs.parked_reason`); 15 keeps the heartbeats of
`adws worker` processes (`workers`: host, pid, since, last beat, poll interval
and the runs each holds), for `adws workers`; 16 keeps each agent call's patch
and each worktree attempt's diff (`diffs`); 17 keeps who asked to cancel a
run, when and why (`runs.cancel`): a request its holder acts on, then the
record of who ended it; 18 keeps when a run's step in flight started
(`runs.step_started`), written before the step runs so a journal that cannot
take writes is found first; 19 keeps the rounds of tickets (`tickets`: one row per
ticket and event, unique, with its run, or why it was refused or deferred, its
status comment and the status that comment last showed), so a ticket starts one
run per round on every host; 20 keeps when a run's holder process started
(`runs.holder_started`: the boot id and its start in clock ticks), so a pid a
later process reused is not taken for the holder; 21 keeps the caps that hold
across runs (`caps`: a name, its JSON, when it was set; see
`adws.journal.store.caps`); 22 keeps what agent calls in flight hold of them
(`cap_holds`; see `adws.journal.store.cap_holds`); 23 keeps what agent CLIs
said of their accounts' quota windows (`agent_quotas`: the share used and the
reset, per account and window; see `adws.journal.store.quotas`); 24 makes a
PostgreSQL journal notify its workers (`NOTIFY adws_due`, in the transaction of
the change) when a run is queued, decided, cancelled, parked or interrupted (see
`adws.journal.store.notices`; a SQLite journal has nothing to add); 25 keeps a
snapshot of a run's promoted context at a step boundary (`snapshots`: the
step, the id of its attempt row, the codec, size and sha256 of the encoded
context), so a resume reads one snapshot and the rows after it (see
`adws.journal.store.snapshots`).
"""

from __future__ import annotations

from typing import Final, TypeAlias

__all__ = ["MIGRATIONS", "VERSIONS", "Guarded", "Statement"]

Statement: TypeAlias = tuple[str, tuple[object, ...]]
"""One SQL statement and its values, as the journal writes it (see `statements`)."""
Guarded: TypeAlias = "tuple[Statement, str | None]"
"""A statement a claim records, and the refusal to give when it changes no row (None: none)."""

VERSIONS: Final = "CREATE TABLE IF NOT EXISTS schema_version ({rowid}version {integer} NOT NULL)"
"""The table that says which migrations a journal has, made before any of them runs."""

MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        """CREATE TABLE runs ({rowid}
            run_id TEXT PRIMARY KEY,
            workflow TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            status TEXT NOT NULL,
            steps TEXT NOT NULL,
            inputs TEXT NOT NULL,
            started TEXT NOT NULL,
            finished TEXT,
            seconds {real},
            error TEXT,
            failed_step TEXT,
            pid {integer},
            host TEXT,
            resumes {integer} NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE attempts ({rowid}
            id {id},
            run_id TEXT NOT NULL{refs},
            step TEXT NOT NULL,
            step_index {integer} NOT NULL,
            attempt {integer} NOT NULL,
            status TEXT NOT NULL,
            recorded TEXT NOT NULL,
            seconds {real} NOT NULL,
            error TEXT,
            context TEXT
        )""",
        "CREATE INDEX attempts_by_run ON attempts(run_id, id)",
        "CREATE INDEX runs_by_start ON runs(started)",
    ),
    ("ALTER TABLE runs ADD COLUMN children TEXT",),
    (
        "ALTER TABLE attempts ADD COLUMN outputs TEXT",
        "ALTER TABLE attempts ADD COLUMN fingerprint TEXT",
        # A run's inputs live apart from its row: updating the status must not copy them.
        "CREATE TABLE run_inputs ({rowid}run_id TEXT PRIMARY KEY, inputs TEXT NOT NULL)",
        "INSERT INTO run_inputs (run_id, inputs) SELECT run_id, inputs FROM runs",
        "UPDATE runs SET inputs = ''",
    ),
    (
        (
            "CREATE TABLE batches ({rowid}batch_id TEXT PRIMARY KEY, workflow TEXT NOT NULL,"
            " source TEXT NOT NULL, total {integer} NOT NULL, status TEXT NOT NULL,"
            " started TEXT NOT NULL, finished TEXT)"
        ),
        "ALTER TABLE runs ADD COLUMN batch_id TEXT",
        "ALTER TABLE runs ADD COLUMN line {integer}",
        "CREATE INDEX runs_by_batch ON runs(batch_id, line)",
    ),
    (
        "ALTER TABLE attempts ADD COLUMN cost_usd {real}",
        "ALTER TABLE attempts ADD COLUMN input_tokens {integer}",
        "ALTER TABLE attempts ADD COLUMN output_tokens {integer}",
        "ALTER TABLE attempts ADD COLUMN turns {integer}",
        "ALTER TABLE attempts ADD COLUMN model TEXT",
    ),
    ("ALTER TABLE runs ADD COLUMN options TEXT",),
    ("ALTER TABLE attempts ADD COLUMN session_ids TEXT",),
    (
        "ALTER TABLE batches ADD COLUMN pid {integer}",
        "ALTER TABLE batches ADD COLUMN host TEXT",
        "ALTER TABLE batches ADD COLUMN max_cost {real}",
    ),
    (
        "ALTER TABLE attempts ADD COLUMN started {real}",
        "CREATE TABLE texts ({rowid}hash TEXT PRIMARY KEY, data {blob} NOT NULL)",
        """CREATE TABLE exchanges ({rowid}
            id {key},
            run_id TEXT NOT NULL,
            step TEXT NOT NULL,
            attempt {integer} NOT NULL,
            asked_by TEXT NOT NULL,
            recorded TEXT NOT NULL,
            started {real} NOT NULL,
            seconds {real} NOT NULL,
            prompt TEXT NOT NULL,
            prompt_size {integer} NOT NULL,
            answer TEXT,
            answer_size {integer},
            stderr TEXT,
            stderr_size {integer},
            exit_code {integer},
            session_id TEXT,
            error_type TEXT,
            error TEXT,
            cost_usd {real},
            input_tokens {integer},
            output_tokens {integer},
            turns {integer},
            model TEXT
        )""",
        "CREATE INDEX exchanges_by_run ON exchanges(run_id, step, attempt)",
    ),
    (
        (
            "CREATE TABLE worktrees ({rowid}run_id TEXT NOT NULL, label TEXT NOT NULL,"
            " step TEXT NOT NULL, repo TEXT NOT NULL, path TEXT NOT NULL, branch TEXT NOT NULL,"
            " base TEXT NOT NULL, tree TEXT NOT NULL, state TEXT NOT NULL,"
            " recorded TEXT NOT NULL, PRIMARY KEY (run_id, label))"
        ),
        (
            "CREATE TABLE approvals ({rowid}id {id},"
            " run_id TEXT NOT NULL, step TEXT NOT NULL, message TEXT NOT NULL,"
            " asked TEXT NOT NULL, timeout {real}, verdict TEXT, decided_by TEXT, decided TEXT,"
            " note TEXT)"
        ),
        "CREATE INDEX approvals_by_run ON approvals(run_id, id)",
    ),
    (
        "ALTER TABLE worktrees ADD COLUMN gitdir TEXT",
        "ALTER TABLE worktrees ADD COLUMN attempts {integer}",
    ),
    ("ALTER TABLE approvals ADD COLUMN budget TEXT",),
    (
        (
            "CREATE TABLE agent_sessions ({rowid}id {id},"
            " run_id TEXT NOT NULL, step TEXT NOT NULL, attempt {integer} NOT NULL,"
            " asked_by TEXT NOT NULL, session_id TEXT NOT NULL, continued {integer},"
            " continues TEXT, from_attempt {integer}, why TEXT,"
            " ended {integer} NOT NULL DEFAULT 0, recorded TEXT NOT NULL, started {real})"
        ),
        "CREATE INDEX agent_sessions_by_run ON agent_sessions(run_id, id)",
    ),
    (
        "ALTER TABLE runs ADD COLUMN wake_at {real}",
        "ALTER TABLE runs ADD COLUMN parked_reason TEXT",
    ),
    (
        (
            "CREATE TABLE workers ({rowid}worker_id TEXT PRIMARY KEY, host TEXT NOT NULL,"
            " pid {integer} NOT NULL, since TEXT NOT NULL, beat {real} NOT NULL,"
            " poll {real} NOT NULL, runs TEXT NOT NULL)"
        ),
    ),
    (
        "ALTER TABLE exchanges ADD COLUMN patch TEXT",
        "ALTER TABLE exchanges ADD COLUMN patch_size {integer}",
        (
            "CREATE TABLE diffs ({rowid}id {id}, run_id TEXT NOT NULL,"
            " step TEXT NOT NULL, attempt {integer} NOT NULL, label TEXT NOT NULL,"
            " recorded TEXT NOT NULL, diff TEXT, diff_size {integer})"
        ),
        "CREATE INDEX diffs_by_run ON diffs(run_id, step, attempt)",
    ),
    ("ALTER TABLE runs ADD COLUMN cancel TEXT",),
    ("ALTER TABLE runs ADD COLUMN step_started TEXT",),
    (
        (
            "CREATE TABLE tickets ({rowid}id {id}, ticket TEXT NOT NULL, event TEXT NOT NULL,"
            " round {integer} NOT NULL, state TEXT NOT NULL, author TEXT NOT NULL,"
            " source TEXT NOT NULL, recorded TEXT NOT NULL, at {real} NOT NULL, run_id TEXT,"
            " parent TEXT, reason TEXT, comment_id {integer}, shown TEXT, UNIQUE (ticket, event))"
        ),
        "CREATE INDEX tickets_by_run ON tickets(run_id)",
        "CREATE INDEX tickets_by_source ON tickets(source, at)",
    ),
    ("ALTER TABLE runs ADD COLUMN holder_started TEXT",),
    (
        (
            "CREATE TABLE caps ({rowid}name TEXT PRIMARY KEY, spec TEXT NOT NULL,"
            " created TEXT NOT NULL)"
        ),
    ),
    (
        (
            "CREATE TABLE cap_holds ({rowid}id {id}, cap TEXT NOT NULL, run_id TEXT NOT NULL,"
            " amount {real} NOT NULL, blind {integer} NOT NULL, created TEXT NOT NULL,"
            " settled {integer})"
        ),
        "CREATE INDEX cap_holds_by_cap ON cap_holds(cap)",
    ),
    (
        (
            "CREATE TABLE agent_quotas ({rowid}account TEXT NOT NULL,"
            " window_name TEXT NOT NULL, used {real}, resets_at {real}, updated TEXT NOT NULL,"
            " PRIMARY KEY (account, window_name))"
        ),
    ),
    ("{notices}", "{notices_of_queued}", "{notices_of_runs}", "{notices_of_decisions}"),
    (
        (
            "CREATE TABLE snapshots ({rowid}id {id}, run_id TEXT NOT NULL, step TEXT NOT NULL,"
            " step_index {integer} NOT NULL, through {integer}, steps TEXT NOT NULL,"
            " codec TEXT NOT NULL, size {integer} NOT NULL, sha256 TEXT NOT NULL,"
            " body TEXT NOT NULL, recorded TEXT NOT NULL)"
        ),
        "CREATE INDEX snapshots_by_run ON snapshots(run_id, id)",
    ),
)
"""Migration n (1-based) brings the schema from version n-1 to n; only ever append.

Written once for both backends: `{integer}`, `{real}`, `{blob}`, `{id}`, `{key}`,
`{rowid}` and `{refs}` are each backend's words (`Connection.words`), filled in
as a migration runs; so are `{notices}` and its triggers, whole statements on
PostgreSQL and empty (skipped) on SQLite.
"""
