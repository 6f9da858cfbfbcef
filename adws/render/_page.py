"""The shell of a report page: its inline style and script, and the document around them.

Nothing is loaded from anywhere: the page's Content-Security-Policy allows
only its own inline style and script, so even text an agent wrote cannot
make the browser fetch a thing.
"""

from __future__ import annotations

import html
from typing import Final

from adws.io_ops.terminal import escape_controls

__all__ = ["COLOURS", "escape", "page"]

COLOURS: Final = {
    "succeeded": "#2e7d32",
    "failed": "#c62828",
    "retried": "#ef6c00",
    "round_failed": "#ad1457",
    "cancelled": "#757575",
    "skipped": "#9e9e9e",
    "running": "#1565c0",
    "not_run": "#bdbdbd",
    "partial": "#b26a00",
    "call": "#263238",
}
"""The colour of each outcome, in the timeline, the diagram and the badges."""

_STYLE: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#212121}
header h1{font-size:20px;margin:0 0 4px}header p{margin:2px 0;color:#424242}
h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #e0e0e0}
.badge{display:inline-block;padding:0 8px;border-radius:10px;color:#fff;font-size:12px}
.succeeded>.badge,.badge.succeeded{background:#2e7d32}.badge.failed,.failed>.badge{background:#c62828}
.badge.blocked,.badge.interrupted,.badge.waiting{background:#6a1b9a}.badge.running{background:#1565c0}
.badge.skipped,.badge.not_run,.badge.cancelled,.badge.queued{background:#757575}
.badge.retried{background:#ef6c00}.badge.round_failed{background:#ad1457}
section.step{border:1px solid #e0e0e0;border-radius:6px;margin:8px 0;padding:4px 10px}
section.step.failed{border-color:#c62828}section.branch{margin-left:18px}
summary{cursor:pointer}.attempt{border-left:3px solid #bdbdbd;margin:8px 0;padding:2px 10px}
.attempt.failed,.attempt.retried{border-color:#c62828}.attempt.succeeded{border-color:#2e7d32}
.error pre{background:#fdecea;border:1px solid #f5c6cb}.facts{color:#616161;font-size:12px}
pre{white-space:pre-wrap;word-break:break-word;background:#f5f5f5;padding:6px 8px;margin:4px 0;
max-height:480px;overflow:auto;font:12px/1.4 ui-monospace,monospace}
svg text{font:11px system-ui,sans-serif}svg a:hover rect{stroke:#000}
button{margin-right:6px}table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left}
tr:nth-child(even){background:#fafafa}.note{color:#757575}
"""

_SCRIPT: Final = """
function openTarget(){var t=document.getElementById(location.hash.slice(1));
for(var p=t;p;p=p.parentElement){if(p.tagName==='DETAILS'){p.open=true;}}
if(t){t.scrollIntoView();}}
function openAll(open){document.querySelectorAll('details').forEach(function(d){d.open=open;});}
window.addEventListener('hashchange',openTarget);openTarget();
document.getElementById('expand').addEventListener('click',function(){openAll(true);});
document.getElementById('collapse').addEventListener('click',function(){openAll(false);});
"""

_POLICY: Final = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def escape(text: object) -> str:
    r"""Escape text for the page; control characters become visible escapes, as on a terminal.

    >>> escape('<b title="x">\x1b[2J')
    '&lt;b title=&quot;x&quot;&gt;\\x1b[2J'
    """
    return html.escape(escape_controls(str(text)), quote=True)


def page(title: str, body: str) -> str:
    """Wrap `body` (HTML, escaped by its makers) in a complete, self-contained document."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n"
        '<p><button id="expand" type="button">expand all</button>'
        '<button id="collapse" type="button">collapse all</button></p>\n'
        f"{body}\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )
