"""JSON Lines on stdout, and text made safe for a terminal: what `--json` needs, without
rich (whose import a `gb search --json` would otherwise pay at every start)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator

from gligabao.errors import InputError

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What a terminal may act on rather than show: C0 controls (ESC starts the sequences that
# clear, move and recolour), DEL, C1 (U+009B is a CSI of its own), and the bidi embeddings,
# overrides and isolates that reorder what follows them on the screen.
_CONTROLS = (
    *range(0x00, 0x20),
    0x7F,
    *range(0x80, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
)
_ESCAPED = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _CONTROLS}
# Where the layout prints a text whole (a chunk, a fact, a message), its tabs and line
# breaks stay; a carriage return ending a line (CRLF files) is dropped, as rich would.
_ESCAPED_BUT_LINES = {c: e for c, e in _ESCAPED.items() if c not in (0x09, 0x0A)}


def visible(text: str, *, lines: bool = False) -> str:
    """`text` safe to print on a terminal: every control character written out as its
    escape (ESC as ``\\x1b``, U+202E as ``\\u202e``), so a document or an LLM answer can
    never clear, rewrite or reorder the screen. Every human renderer here goes through it;
    with `lines`, tabs and newlines are kept. Each character is replaced on its own (but
    CR before LF), so the visible text of a prefix is a prefix of the visible text."""
    if lines:
        return text.replace("\r\n", "\n").translate(_ESCAPED_BUT_LINES)
    return text.translate(_ESCAPED)


# JSON allows these raw in a string, but str.splitlines() and some readers end a line at
# them: escaped, every record is one line for any reader. DEL, C1 and the bidi controls
# are escaped too (json.dumps escapes C0 itself): `gb ... --json` on a terminal is safe.
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_record(obj: Any) -> str:
    """One JSON object as one line of JSON Lines, its newline included."""
    text = json.dumps(obj, ensure_ascii=False)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def json_line(obj: Any) -> None:
    """One JSON object per line on stdout, for scripts (JSON Lines)."""
    sys.stdout.write(json_record(obj))
    sys.stdout.flush()


def numbered_json_lines(lines: Iterable[str], name: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each JSON line of a file the user wrote, blank lines
    skipped; a line that is not JSON is an InputError naming `name` and the line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(name, f"line {number}: not JSON ({exc.msg})") from None
