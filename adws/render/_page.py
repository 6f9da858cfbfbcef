"""The shell of a report page: its style and script, the document around them, and its caps.

Nothing is loaded from anywhere, and nothing inline runs but the page's
own: its Content-Security-Policy allows only the one stylesheet and the
one script, each by its SHA-256 (no `'unsafe-inline'`), so even markup
that slipped into a page could neither run a handler nor fetch a thing.

Every text is escaped and capped: a field of one line (a name, an id, a
status) at `LINE_CAP` characters, a text (a prompt, an answer, stderr,
an error, outputs, a question, a diff) at `TEXT_CAP` bytes, keeping its head and
its tail around a line saying how much was cut and which command shows
all of it. The page as a whole holds at most `PAGE_CAP` bytes.
"""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Final

from adws.io_ops.terminal import escape_controls
from adws.render._text import head_and_tail

__all__ = [
    "COLOURS",
    "LINE_CAP",
    "PAGE_CAP",
    "SHELL",
    "STYLE",
    "TEXT_CAP",
    "capped",
    "cut_note",
    "escape",
    "page",
    "size_of",
]

LINE_CAP: Final = 1_000
"""Characters of one field of a line (a name, an id, a time) a page shows; more is cut with …"""
TEXT_CAP: Final = 32_000
"""Bytes (UTF-8) of one text a page shows: its first and its last 16,000."""
PAGE_CAP: Final = 4_000_000
"""Bytes a whole page holds at most, batch pages too."""

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
    "waiting": "#6a1b9a",
    "parked": "#8d6e63",
    "unknown": "#616161",
}
"""The colour of each outcome, in the timeline, the diagram and the badges."""

_STYLE: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#212121}
header h1{font-size:20px;margin:0 0 4px}header p{margin:2px 0;color:#424242}
h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #e0e0e0}
.badge{display:inline-block;padding:0 8px;border-radius:10px;color:#fff;font-size:12px}
.succeeded>.badge,.badge.succeeded{background:#2e7d32}.badge.failed,.failed>.badge{background:#c62828}
.badge.blocked,.badge.interrupted,.badge.waiting{background:#6a1b9a}.badge.parked{background:#8d6e63}.badge.running{background:#1565c0}
.badge.skipped,.badge.not_run,.badge.cancelled,.badge.queued,.badge.unknown{background:#757575}
.badge.retried{background:#ef6c00}.badge.round_failed{background:#ad1457}
section.step{border:1px solid #e0e0e0;border-radius:6px;margin:8px 0;padding:4px 10px}
section.step.failed{border-color:#c62828}section.step.waiting{border-color:#6a1b9a}section.branch{margin-left:18px}
summary{cursor:pointer}.attempt{border-left:3px solid #bdbdbd;margin:8px 0;padding:2px 10px}
.attempt.failed,.attempt.retried{border-color:#c62828}.attempt.succeeded{border-color:#2e7d32}
.error pre{background:#fdecea;border:1px solid #f5c6cb}.facts{color:#616161;font-size:12px}
pre{white-space:pre-wrap;word-break:break-word;background:#f5f5f5;padding:6px 8px;margin:4px 0;
max-height:480px;overflow:auto;font:12px/1.4 ui-monospace,monospace}
svg text{font:11px system-ui,sans-serif}svg a:hover rect{stroke:#000}
button{margin-right:6px}table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left}
tr:nth-child(even){background:#fafafa}.note{color:#757575}.cut{color:#757575;font-style:italic}
.diff .add{color:#1b5e20;background:#e8f5e9}.diff .del{color:#b71c1c;background:#ffebee}
.diff .hunk{color:#00838f}.diff .file{font-weight:bold}
"""

STYLE: Final = _STYLE
"""The page's stylesheet, for pages that serve it as a file (`adws serve`)."""

_SCRIPT: Final = """
function openTarget(){var t=document.getElementById(location.hash.slice(1));
for(var p=t;p;p=p.parentElement){if(p.tagName==='DETAILS'){p.open=true;}}
if(t){t.scrollIntoView();}}
function openAll(open){document.querySelectorAll('details').forEach(function(d){d.open=open;});}
window.addEventListener('hashchange',openTarget);openTarget();
document.getElementById('expand').addEventListener('click',function(){openAll(true);});
document.getElementById('collapse').addEventListener('click',function(){openAll(false);});
"""


def _digest(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


_POLICY: Final = (
    f"default-src 'none'; style-src 'sha256-{_digest(_STYLE)}'; "
    f"script-src 'sha256-{_digest(_SCRIPT)}'"
)
"""Only the page's own stylesheet and script, by hash: no inline handler, no fetch."""


def escape(text: object, limit: int | None = LINE_CAP) -> str:
    r"""Escape text for the page; control characters become visible escapes, as on a terminal.

    A text longer than `limit` characters is cut, ending in …

    >>> escape('<b title="x">\x1b[2J')
    '&lt;b title=&quot;x&quot;&gt;\\x1b[2J'
    >>> escape("abcdef", limit=4)
    'abc…'
    """
    shown = str(text)
    if limit is not None and len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return html.escape(escape_controls(shown), quote=True)


def size_of(text: str) -> int:
    """Count the bytes a piece of the page takes (escaped: surrogates are visible escapes)."""
    return len(text.encode("utf-8", "surrogatepass"))


def cut_note(cut: int, shows: str) -> str:
    """Say how many bytes of a text were cut and that the command `shows` shows all."""
    return f'<p class="cut">{cut:,} bytes cut: <code>{escape(shows)}</code> shows all</p>'


def capped(text: str, shows: str) -> str:
    """Draw a text in a `<pre>`, its head and tail when it is longer than `TEXT_CAP` bytes.

    Between them a line says how many bytes were cut and that the command
    `shows` shows all (`cut_note`).

    >>> capped("a <b>", "adws status r1")
    '<pre>a &lt;b&gt;</pre>'
    >>> cut = capped("x" * 16_000 + "yz" + "w" * 16_000, "adws status r1")
    >>> cut[cut.index("<p class") : cut.index("</p>") + 4]
    '<p class="cut">2 bytes cut: <code>adws status r1</code> shows all</p>'
    """
    parts = head_and_tail(text, TEXT_CAP)
    if parts is None:
        return f"<pre>{escape(text, None)}</pre>"
    head, cut, tail = parts
    return f"<pre>{escape(head, None)}</pre>{cut_note(cut, shows)}<pre>{escape(tail, None)}</pre>"


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


SHELL: Final = size_of(page("", ""))
"""The bytes of a page around its title and body."""
