"""The railway: steps, contexts and errors, the executor's for loop, retries and concurrency.

`step` declares steps and workflows; `context` carries a run's values and
`errors` its failures; `executor` runs the steps in one `for` loop, with
`retry` (under `retry_policy`), `scope` (what a run in progress knows) and
`events` for observers; `combinators` (`with_verification`, `sequence`) and
`concurrency` (`parallel`, `fan_out`, on `_scheduler`) build steps from
steps; `usage` and `metering` count what agent calls spend. Pure but for
the clock and stopping a cancelled branch's processes (both through
`adws.io_ops`): nothing here knows agents, shells, the journal or the CLI.
Users import the public names from `adws`.
"""
