"""An answer that repeats itself, stopped and cut back to what it said before the loop.

A small model can fall into a loop in the middle of its JSON (the same fact again and
again, or whitespace without end) and only stops at its output limit: tokens paid for
nothing, at a local server's slowest rate. `loop_cut` tells, from the text so far,
that the answer has begun to loop; `salvaged` keeps the items of its top-level lists
that were complete before that point and closes the JSON, so the answer is used as far as
it is sound instead of being asked again.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["WINDOW", "loop_cut", "salvaged"]

# The last this-many characters, seen twice before in the same answer, make a loop: an
# answer that states a fact twice does not repeat 200 characters three times.
WINDOW = 200


def loop_cut(text: str, window: int = WINDOW) -> int | None:
    """Where `text` can be cut once it repeats itself, or None when its last `window`
    characters do not occur twice before. The cut comes one repeat late: where a loop
    begins cannot be told to the character (the item it repeats may end as the one
    before it did), and an item stated twice is one fact, while one cut off is lost."""
    if len(text) < 2 * window:
        return None
    tail_at = len(text) - window
    tail = text[tail_at:]
    if not tail.strip("[]{}"):
        return None  # nesting, not a loop: the parser says how deep is too deep
    first = text.find(tail)
    if first >= tail_at:
        return None
    second = text.find(tail, first + 1)
    if second < 0 or second >= tail_at:
        return None
    return min(len(text), 2 * second - first)


def salvaged(text: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON object `text` begins, cut back to its last complete item of a top-level
    list and closed, each item of those lists once; a top-level list the schema requires
    and the text never reached is empty. None when no such object can be made, or it
    holds no item (the loop came first)."""
    start = text.find("{")
    if start < 0:
        return None
    cut = _last_whole_item(text, start)
    if cut is None:
        return None
    end, closers = cut
    try:
        value = json.loads(text[start:end] + closers)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    properties = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in value and properties.get(key, {}).get("type") == "array":
            value[key] = []
    kept = 0
    for key, items in value.items():
        if isinstance(items, list):  # the loop's repeat kept: each item once
            seen = {json.dumps(item, sort_keys=True): item for item in items}
            value[key] = list(seen.values())
            kept += len(seen)
    return value if kept else None  # nothing said before the loop: no answer


def _last_whole_item(text: str, start: int) -> tuple[int, str] | None:
    """(end, closers): where the object at `start` can be cut, right after an item of one
    of its own lists or right after such a list opened, and what closes it there."""
    stack: list[str] = []
    found: tuple[int, str] | None = None
    inside = escaped = False
    for i in range(start, len(text)):
        char = text[i]
        if inside:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                inside = False
            continue
        if char == '"':
            inside = True
        elif char in "{[":
            stack.append(char)
            if stack == ["{", "["]:
                found = (i + 1, "]}")
        elif char in "}]":
            if not stack:
                break
            stack.pop()
            if stack == ["{", "["]:
                found = (i + 1, "]}")
            elif not stack:
                return i + 1, ""  # the whole object came before the loop
    return found
