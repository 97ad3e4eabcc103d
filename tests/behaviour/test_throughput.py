"""remember at its throughput bound: what the ordered stores wait on is never
queued behind work that can wait, and `concurrency` still bounds every request out."""

from __future__ import annotations

import asyncio
import json

from gligabao.llm.limiter import NORMAL, URGENT, Limiter
from tests.remember.test_end_to_end import apache_bytes, plan, typer_bytes, unique_marker
from tests.support.helpers import configure, story, write
from tests.support.llm_server import Hold


def test_resolve_calls_are_not_queued_behind_the_embeddings_of_later_chunks(
    gb_cli, server, monkeypatch
) -> None:
    # One request at a time: the order the server sees is the order gb let them out in.
    configure(monkeypatch, server, GB_CHUNK_SIZE="400", GB_CONCURRENCY="1")
    path = write("apache.txt", apache_bytes())
    result = gb_cli("remember", str(path), "--json")
    assert result.exit_code == 0, result.stderr
    n = len(json.loads(result.stdout.splitlines()[-1])["chunks"])
    stages = [r.stage for r in sorted(server.requests, key=lambda r: r.started)]
    # The summaries of entities whose facts later chunks closed are rewritten last.
    if "summarize_entity" in stages:
        stages = stages[: stages.index("summarize_entity")]
    resolves = [i for i, stage in enumerate(stages) if stage == "resolve"]
    embeds = [i for i, stage in enumerate(stages) if stage == "embed"]
    assert n >= 8 and resolves and len(embeds) == n
    # Every resolve went out while most chunks' embeddings still waited, so the first
    # chunks are stored while the later ones are being embedded (before: all resolve
    # calls came after the last embeddings request).
    assert max(resolves) < embeds[len(embeds) // 2]
    assert server.max_in_flight == 1


def test_resolution_goes_out_while_later_chunks_are_still_being_extracted(
    gb_cli, server, monkeypatch
) -> None:
    # Two requests at a time: the extractions land over many rounds, one or two a round.
    configure(monkeypatch, server, GB_CHUNK_SIZE="400", GB_CONCURRENCY="2")
    path = write("licence-and-readme.txt", apache_bytes() + b"\n\n" + typer_bytes())
    result = gb_cli("remember", str(path), "--json")
    assert result.exit_code == 0, result.stderr
    extractions = server.requests_for("extract_graph")
    resolves = server.requests_for("resolve")
    assert len(extractions) >= 8 and resolves
    last_extraction_in = max(r.ended for r in extractions if r.ended is not None)
    first_resolve = min(r.started for r in resolves)
    # Planned as the extractions land, the first chunks' resolve call is sent before the
    # last extraction's answer has come (planned after all of them, it would wait for it).
    assert first_resolve < last_extraction_in
    assert any(r.started > first_resolve for r in extractions)  # some not even sent yet
    assert server.max_in_flight <= 2


def test_an_urgent_request_goes_before_earlier_ones_within_the_same_limit() -> None:
    async def go() -> list[str]:
        limiter = Limiter(1)
        order: list[str] = []

        async def request(name: str, priority: int) -> None:
            async with limiter.slot(priority):
                order.append(name)
                assert limiter.out == 1  # urgent or not, one at a time
                await asyncio.sleep(0)

        async with limiter.slot():
            waiting = [
                asyncio.ensure_future(request("embed 1", NORMAL)),
                asyncio.ensure_future(request("embed 2", NORMAL)),
                asyncio.ensure_future(request("resolve", URGENT)),
            ]
            await asyncio.sleep(0.01)
            assert order == []  # all three wait for the one slot
        await asyncio.gather(*waiting)
        return order

    assert asyncio.run(go()) == ["resolve", "embed 1", "embed 2"]


def test_an_unchanged_batch_never_loads_the_llm_sdk(gb_process, server, monkeypatch) -> None:
    # Importing the openai SDK takes longer than checking a folder of unchanged files: a
    # nightly run over what it stored already imports it only to make a call.
    configure(monkeypatch, server)
    for i in range(3):
        write(f"docs/note-{i}.txt", f"Note {i}: the licence of part {i} ends in {2030 + i}.\n")
    timed = {"PYTHONPROFILEIMPORTTIME": "1"}  # each module imported, said on stderr
    first = gb_process("remember", "-r", "docs", "--quiet", env=timed)
    assert first.returncode == 0, first.stderr
    assert b"| openai\n" in first.stderr  # calls were made: the SDK made them
    again = gb_process("remember", "-r", "docs", "--json", env=timed)
    assert again.returncode == 0, again.stderr
    statuses = [json.loads(line)["status"] for line in again.stdout.splitlines()]
    assert statuses == ["unchanged"] * 3
    assert b"| openai\n" not in again.stderr
    assert server.calls() == 3 * 2  # an extraction and an embeddings request a note, once


def test_resolve_is_sent_before_the_last_extraction_answer_arrives(
    gb_cli, server, monkeypatch
) -> None:
    """Chunks are planned as their extractions land: a batch of resolve items goes out
    as soon as its chunks are planned, while a later chunk's extraction is still on its
    way (planned only once every extraction is in, no resolve call could be out then)."""
    configure(monkeypatch, server)
    text = story(41, paragraphs=24)  # people met again under other forms of their names
    path = write("story.txt", text)
    chunks = plan(text, 128)
    marker = unique_marker(text, chunks, len(chunks) - 1)
    # The last chunk's extraction waits in the server until a resolve call has come in
    # (at most 10 s: the test then fails on `opened`, rather than hang).
    held = server.hold(
        Hold(
            select=lambda stage, said: stage == "extract_graph" and marker in said,
            until=lambda: bool(server.requests_for("resolve")),
            timeout=10,
        )
    )
    result = gb_cli("remember", str(path), "--json")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)["chunks"]) == len(chunks) >= 8
    assert held.opened  # a resolve call let it go, not the timeout
    (last,) = [r for r in server.requests_for("extract_graph") if marker in str(r.body)]
    first_resolve = min(r.started for r in server.requests_for("resolve"))
    assert last.ended is not None and first_resolve < last.ended
    assert len(server.requests_for("resolve")) >= 2  # the last batch after the last chunk
