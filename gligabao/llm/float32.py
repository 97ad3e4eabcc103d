"""Embeddings as float32, from the HTTP answer to the vec0 row: 4 bytes a value.

The embeddings request asks for base64 (the float32 bytes the model made; the openai SDK
asks so too, then turns each value into a Python float) and each vector is kept as an
`array("f")` of those bytes. A list of Python floats costs 32 bytes a value (the float
and its slot), so a 1 MiB document's vectors (its chunks, summaries, entities and facts,
1,536 dimensions) took ~170 MiB where their bytes take a fifth of that. A server that
ignores `encoding_format` sends numbers: they become the same array. vec0 stores the
array's bytes as they are (store.vectors.to_blob), so what is stored is the same float32
values as ever.
"""

from __future__ import annotations

import base64
import binascii
import sys
from array import array

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Float32", "decoded"]

Float32 = array  # always typecode "f"


def decoded(value: Any) -> Any:
    """An answer's `embedding` as array("f"): from base64 (little-endian float32, as the
    API sends it) or from a list of numbers. Anything else is returned as it came, for
    endpoint.vector_problem to say what is wrong with it."""
    if isinstance(value, array) and value.typecode == "f":
        return value
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return value
        if len(raw) % 4:
            return value
        floats = array("f")
        floats.frombytes(raw)
        if sys.byteorder == "big":
            floats.byteswap()
        return floats
    if isinstance(value, bytes | bytearray | memoryview):
        return value  # not what JSON holds: array("f", bytes) would take it as raw bytes
    try:
        return array("f", value)
    except (TypeError, ValueError, OverflowError):
        return value
