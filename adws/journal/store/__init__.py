"""The journal's SQL, and only it: statements, schema, and one module per backend.

`journal` is the `Journal` (one transaction per event, claims compare-and-
set); `schema` its forward migrations, written once; `backend` the seam
both backends answer (a connection, its errors, a server's URL), and
`sqlite` and `postgres` name what differs for each (column types, an
identity column, how a transaction takes the write lock, a row lock, the
placeholder style). `patience` tries a failed write again on a new
connection for a bounded time (the journal first). The rest write and read
the tables: `statements` and `observer` (a run's events), `claims` and
`cancels`, `queue` (submitted runs, workers, orphans taken back),
`batches`, `workspaces`, `sessions`, `exchanges`, `diffs`, `costs`,
`estimates`, `prune`, `children`, and `cassette` (a run's answers,
replayed). No SQL is written outside this folder.
"""
