"""Vectors stay float32 from the HTTP answer to the vec0 row: the bytes the server sent are
the bytes stored, and memory holds 4 bytes a value, not a Python float each. Against the
real openai client and the test server (tests/support/llm_server.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import random
import struct
import tracemalloc
from array import array
from typing import Any

import pytest

from gligabao.config import load_config
from gligabao.llm import LLM, endpoint
from gligabao.llm.float32 import decoded
from tests.support.helpers import SECRET, gb, rows, story, write
from tests.support.llm_server import LLMServer, embed_text

DIMS = 1536
TEXTS = [f"text {i}: {story(i)}" for i in range(100)]


def _llm(server: LLMServer) -> LLM:
    env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": server.base_url}
    config = load_config(None, flags={"embeddings.dimensions": DIMS}, env=env)
    return LLM(config, env=env)


def _float32(values: list[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def test_an_answers_vectors_are_its_float32_bytes_and_take_4_bytes_a_value(server) -> None:
    llm = _llm(server)

    async def measured():
        # One event loop: the client made by the warm-up is the one measured.
        await llm.embed(["warm up: the client and its connection"])
        gc.collect()
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            result = await llm.embed(TEXTS)
            gc.collect()
            held, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return result, before, held, peak

    result, before, held, peak = asyncio.run(measured())
    assert server.requests[-1].body["encoding_format"] == "base64"  # as the SDK asks
    for text, vector in zip(TEXTS, result.vectors, strict=True):
        assert isinstance(vector, array) and vector.typecode == "f"
        assert vector.tobytes() == _float32(embed_text(text, DIMS))
    values = len(TEXTS) * DIMS  # 153,600: 0.6 MiB as float32, 4.7 MiB as Python floats
    assert held - before < 2 * 4 * values, "the vectors are held as more than float32"
    # The answer is read whole (its base64 text, then its bytes; the server, in this
    # process, is counted too) but never as Python floats, 32 bytes a value with its slot.
    assert peak - before < 32 * values, "the answer was turned into Python floats"


def test_what_is_stored_is_the_float32_the_server_sent(online, gb_cli) -> None:
    write("doc.md", story(7, paragraphs=12))
    gb(gb_cli, "remember", "doc.md")
    chunks = rows("SELECT id, text, context FROM gb_artifacts WHERE chunk_index IS NOT NULL")
    assert len(chunks) > 1
    stored = {
        r["vector_id"]: bytes(r["embedding"])
        for r in rows('SELECT vector_id, embedding FROM "dataset-1-chunks"')
    }
    from gligabao.store.artifacts import embedded_text

    for chunk in chunks:
        sent = embed_text(embedded_text(chunk["text"], chunk["context"]), 64)
        assert stored[f"chunk-{chunk['id']}"] == _float32(sent)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ([0.5, -1.25], [0.5, -1.25]),  # a server that ignores encoding_format: numbers
        ("AAAAPwAAoL8=", [0.5, -1.25]),  # base64 of little-endian float32
    ],
)
def test_an_embedding_is_decoded_to_float32(answer, expected) -> None:
    vector = decoded(answer)
    assert isinstance(vector, array) and vector.typecode == "f"
    assert list(vector) == expected


@pytest.mark.parametrize("answer", ["not base64!", "AAAA/w==AA", [None, 1.0], None, "AAA="])
def test_what_is_no_vector_is_left_for_the_check_to_name(answer) -> None:
    assert decoded(answer) is answer


def _checked_in_full(values: Any, dimensions: int) -> str | None:
    """vector_problem without its shortcut by exponents: the pass over every value."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(endpoint, "_moderate", lambda floats: False)
        return endpoint.vector_problem(values, dimensions)


def test_the_check_by_exponents_says_what_the_full_check_says() -> None:
    # Every float32 exponent, alone and beside a small value; and vectors of values from
    # below float32's smallest normal to near its largest, NaN, infinities and zeros.
    cases = []
    for high in range(256):
        for low in (0x00, 0x7F, 0x80, 0xFF):
            one = bytes([0x12, 0x34, low, high])
            cases += [one, one + _float32([1e-20]), one + _float32([0.03])]
    rng = random.Random(4)
    for _ in range(3000):
        n = rng.choice([1, 3, 64, 384])
        values = [rng.gauss(0, 1) * 2 ** rng.uniform(-150, 127) for _ in range(n)]
        if rng.random() < 0.2:
            values[rng.randrange(n)] = rng.choice([math.nan, math.inf, -math.inf, 0.0])
        with contextlib.suppress(OverflowError):
            cases.append(array("f", values).tobytes())
    shortcuts = 0
    for raw in cases:
        floats = array("f")
        floats.frombytes(raw)
        said = endpoint.vector_problem(floats, len(floats))
        assert said == _checked_in_full(floats, len(floats)), list(floats)[:4]
        shortcuts += endpoint._moderate(floats)
    assert shortcuts > 1000  # the shortcut was taken, and agreed, many times
    model_like = array("f", [rng.gauss(0, 0.03) for _ in range(DIMS)])
    assert endpoint._moderate(model_like) and endpoint.vector_problem(model_like, DIMS) is None
