"""What the journal holds, as values: read from hostile rows, never trusted, never SQL.

`runs` (a run, its attempts, a cancel, the checks every column goes
through), `options` (how a run was started), `codec` (contexts and errors
as JSON), `plan` (where a resume starts), `holders` (who holds a run),
`workspaces`, `sessions`, `exchanges`, `diffs` and `workers`: each table's
rows as values. The SQL that writes and reads them is `adws.journal.store`.
"""
