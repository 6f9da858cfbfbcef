"""`adws serve`: the journal as a web application, for the people who decide on runs.

Above `runs` and `render`, and imported only by `adws serve` (it needs the
`serve` extra: Starlette and uvicorn). By role: `access` (the token file,
sessions, one-use form tokens, same-site checks), `reading` (what the
pages show, read from the journal), `chart` (cost over time as an SVG),
`pages` (server-rendered HTML, everything escaped), `deciding` (approve,
reject and cancel, each an `adws` command through `Runs`), `live` (the
journal polled once for every event stream), `app` (the Starlette
application and its rules) and `server` (where it listens, and uvicorn).
"""
