"""`adws mcp`: the workflows of a folder as MCP tools, each call a run through `adws.runs`.

`schema` turns a workflow's declared inputs and typed keys into a tool's
input schema and checks a call against it; `held` starts each run in an
`adws held-run` child (as `adws worker` does); `tools` is the catalog
and what each call does; `server` serves it with the `mcp` SDK, on stdio
or streamable HTTP on loopback. Named `mcp_server`, not `mcp`: a folder
`mcp` (here or in the tests that mirror it) could be imported in place of
the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._lazy import lazy_names

if TYPE_CHECKING:
    from adws.mcp_server.held import Held
    from adws.mcp_server.server import serve
    from adws.mcp_server.tools import Tools

__all__ = ["Held", "Tools", "serve"]

_HOMES = {
    "Held": "adws.mcp_server.held",
    "Tools": "adws.mcp_server.tools",
    "serve": "adws.mcp_server.server",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
