"""Chat exports (gligabao.read.chat) and their windows (gligabao.chunk.conversation).

Generated exports in the shapes ChatGPT, Claude and JSON Lines give them; property tests
(hypothesis) for the windows' invariants over messages and for the branches of a tree.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gligabao.chunk import ChunkSettings
from gligabao.chunk.conversation import ChatWindows, chat_chunks
from gligabao.errors import InputError
from gligabao.read.documents import Message, describe
from gligabao.read.formats import kind_of, read_documents
from gligabao.remember.cut import cut_document
from tests.support.chunk_checks import PROPERTY, reference_tokens

T0 = 1_714_550_400.0  # 2024-05-01T08:00:00Z
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
ROLE_LABEL = re.compile(r"(?im)^\s*(user|assistant|system|human|tool)\s*[:(]")


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _say(topic: str, n: int) -> str:
    """A message of about ``n`` sentences about ``topic``."""
    return " ".join(f"Sentence {i} is about {topic} and nothing else." for i in range(n))


# --------------------------------------------------------------- ChatGPT export


def _node(node_id, parent, children, role=None, text="", at=None):
    message = None
    if role is not None:
        message = {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": at,
            "content": {"content_type": "text", "parts": [text]},
            "metadata": {},
        }
    return {"id": node_id, "message": message, "parent": parent, "children": children}


def _regenerated_export() -> list[dict]:
    """A ChatGPT export of one conversation whose second answer was regenerated: the
    first answer ("Porto") is one branch, the regenerated one ("Lisbon"), the current."""
    mapping = {
        "root": _node("root", None, ["sys"]),
        "sys": _node("sys", "root", ["u1"], "system", "", T0),  # hidden, empty
        "u1": _node("u1", "sys", ["a1"], "user", _say("packing boxes", 12), T0 + 10),
        "a1": _node("a1", "u1", ["u2"], "assistant", _say("moving vans", 14), T0 + 20),
        "u2": _node("u2", "a1", ["old", "new"], "user", "Which city should I move to?", T0 + 30),
        "old": _node("old", "u2", ["u3old"], "assistant", _say("Porto", 15), T0 + 40),
        "u3old": _node("u3old", "old", [], "user", _say("Porto wine", 6), T0 + 50),
        "new": _node("new", "u2", ["u3"], "assistant", _say("Lisbon", 15), T0 + 60),
        "u3": _node("u3", "new", ["a3"], "user", _say("Lisbon trams", 6), T0 + 70),
        "a3": _node("a3", "u3", [], "assistant", _say("Lisbon rent", 12), T0 + 80),
    }
    return [
        {
            "title": "Moving abroad",
            "id": "conv-1",
            "create_time": T0,
            "current_node": "a3",
            "mapping": mapping,
        }
    ]


def _ancestors(export: list[dict], leaf: str) -> set[str]:
    mapping = export[0]["mapping"]
    found = set()
    while leaf is not None:
        found.add(leaf)
        leaf = mapping[leaf]["parent"]
    return found


def test_a_chatgpt_export_is_read_along_the_path_to_its_current_message() -> None:
    export = _regenerated_export()
    [doc] = read_documents("conversations.json", json.dumps(export).encode())
    mapping = export[0]["mapping"]
    path = ["u1", "a1", "u2", "new", "u3", "a3"]
    assert (doc.name, doc.kind, doc.mode) == ("Moving abroad", "chat", "chat")
    assert (doc.conversation_id, doc.path_id, doc.fork) == ("conv-1", "a3", None)
    # The messages' words only: no role label, no time, nothing of the other branch.
    assert doc.text == "\n\n".join(mapping[n]["message"]["content"]["parts"][0] for n in path)
    assert [span.location for span in doc.spans] == [
        Message("conv-1", "a3", n, turn, mapping[n]["message"]["author"]["role"], _iso(at))
        for turn, (n, at) in enumerate(
            zip(path, [T0 + 10, T0 + 20, T0 + 30, T0 + 60, T0 + 70, T0 + 80], strict=True), 1
        )
    ]


def test_chunks_of_a_regenerated_answer_never_mix_the_two_branches() -> None:
    export = _regenerated_export()
    docs = read_documents("conversations.json", json.dumps(export).encode(), all_branches=True)
    assert [d.name for d in docs] == ["Moving abroad", "Moving abroad (branch 1)"]
    for doc in docs:
        on_path = _ancestors(export, doc.path_id)
        result, where = cut_document(doc, ChunkSettings())
        assert len(result.chunks) >= 2 or doc.fork is not None
        for chunk, found in zip(result.chunks, where, strict=True):
            ids = {loc.message_id for loc in found}
            assert ids <= on_path, f"chunk {chunk.index} of {doc.name} mixes branches"
            assert ("Porto" in chunk.text) != ("Lisbon" in chunk.text) or (
                "Porto" not in chunk.text and "Lisbon" not in chunk.text
            )
    main, branch = docs
    assert "Porto" not in main.text and "Lisbon" not in branch.text


def test_all_branches_store_the_shared_prefix_once_and_record_the_fork() -> None:
    export = _regenerated_export()
    main, branch = read_documents(
        "conversations.json", json.dumps(export).encode(), all_branches=True
    )
    assert branch.path_id == "u3old"
    # The branch holds only its own messages; the question it answers is in `main`.
    assert [s.location.message_id for s in branch.spans] == ["old", "u3old"]
    assert [s.location.turn for s in branch.spans] == [4, 5]  # turns of its own path
    assert branch.fork is not None
    assert (branch.fork.path_id, branch.fork.after_message_id, branch.fork.after_turn) == (
        "a3",
        "u2",
        3,
    )
    stored = [s.location.message_id for d in (main, branch) for s in d.spans]
    assert sorted(stored) == sorted(set(stored))  # no message in two documents


def test_what_a_chunk_cites_holds_roles_times_ids_and_its_turn_range() -> None:
    [doc] = read_documents("conversations.json", json.dumps(_regenerated_export()).encode())
    result, where = cut_document(doc, ChunkSettings())
    for chunk, found in zip(result.chunks, where, strict=True):
        assert not ROLE_LABEL.search(chunk.text) and not ISO_TIME.search(chunk.text)
        assert chunk.context == ""  # nothing is put before it when embedded either
        messages = describe(found)["messages"]
        assert messages["conversation_id"] == "conv-1" and messages["path_id"] == "a3"
        assert messages["message_ids"] == [loc.message_id for loc in found]
        assert messages["first"] == found[0].turn and messages["last"] == found[-1].turn
        assert messages["timestamps"] == [found[0].timestamp, found[-1].timestamp]
        assert set(messages["roles"]) == {loc.role for loc in found}
    first = describe(where[0])["messages"]
    assert first["first"] == 1 and first["timestamps"][0] == "2024-05-01T08:00:10.000Z"


def test_multi_turn_windows_pack_whole_messages_with_overlap_and_single_makes_one_each() -> None:
    [doc] = read_documents("conversations.json", json.dumps(_regenerated_export()).encode())
    settings = ChunkSettings()
    multi, where = cut_document(doc, settings)
    assert any(len(found) > 1 for found in where), "a window holds several messages"
    assert any(chunk.overlap_tokens for chunk in multi.chunks), "windows overlap"
    assert all(chunk.tokens <= 256 for chunk in multi.chunks)
    single, where = cut_document(doc, settings, ChatWindows(window="single"))
    assert [chunk.text for chunk in single.chunks] == [
        doc.text.encode()[s.start : s.end].decode() for s in doc.spans
    ]
    assert all(chunk.overlap_tokens == 0 for chunk in single.chunks)
    assert [len(found) for found in where] == [1] * len(doc.spans)


def test_a_message_larger_than_a_window_is_cut_as_text() -> None:
    long = _say("a very long answer", 120)  # about 1,300 tokens
    lines = [
        {"role": "user", "content": "Tell me everything."},
        {"role": "assistant", "content": long},
        {"role": "user", "content": "Thanks!"},
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    [doc] = read_documents("chat.jsonl", data)
    result, where = cut_document(doc, ChunkSettings())
    pieces = [(c, f) for c, f in zip(result.chunks, where, strict=True) if f[0].turn == 2]
    assert len(pieces) >= 5
    assert all(len(found) == 1 and chunk.tokens <= 256 for chunk, found in pieces)
    pieces = [chunk for chunk, _ in pieces]
    assert " ".join(" ".join(p.text.split()) for p in pieces).count("Sentence 119") == 1


# ----------------------------------------------------------------- Claude, JSONL


def test_a_claude_export_gives_a_document_per_conversation_with_user_and_assistant() -> None:
    export = [
        {
            "uuid": "c-1",
            "name": "Tax return",
            "created_at": "2024-04-01T10:00:00.000000Z",
            "chat_messages": [
                {
                    "uuid": "m1",
                    "sender": "human",
                    "text": "When is the deadline?",
                    "created_at": "2024-04-01T10:00:05.123456+02:00",
                    "content": [{"type": "text", "text": "When is the deadline?"}],
                },
                {
                    "uuid": "m2",
                    "sender": "assistant",
                    "text": "",
                    "content": [{"type": "text", "text": "The thirtieth of June."}],
                    "created_at": "2024-04-01T10:00:09Z",
                },
            ],
        },
        {
            "uuid": "c-2",
            "name": "",
            "chat_messages": [{"uuid": "m3", "sender": "human", "text": "Hi"}],
        },
    ]
    first, second = read_documents("conversations.json", json.dumps(export).encode())
    assert first.name == "Tax return" and first.conversation_id == "c-1"
    assert first.text == "When is the deadline?\n\nThe thirtieth of June."
    assert [(s.location.role, s.location.timestamp) for s in first.spans] == [
        ("user", "2024-04-01T08:00:05.123Z"),
        ("assistant", "2024-04-01T10:00:09.000Z"),
    ]
    assert second.name == "c-2" and second.text == "Hi"


def test_json_lines_are_grouped_by_conversation_and_follow_parent_ids() -> None:
    lines = [
        {
            "conversation_id": "a",
            "id": "1",
            "role": "user",
            "content": "Book a table.",
            "timestamp": 1714550400,
        },
        {"conversation_id": "b", "role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {
            "conversation_id": "a",
            "id": "2",
            "parent_id": "1",
            "role": "assistant",
            "content": "For two?",
        },
        {
            "conversation_id": "a",
            "id": "3",
            "parent_id": "1",
            "role": "assistant",
            "content": "Where?",
        },
        {
            "conversation_id": "a",
            "id": "4",
            "parent_id": "3",
            "role": "user",
            "content": "Near the sea.",
        },
    ]
    data = ("\n".join(json.dumps(line) for line in lines) + "\n\n").encode()
    docs = read_documents("log.jsonl", data, all_branches=True)
    assert [(d.conversation_id, d.path_id, d.text) for d in docs] == [
        ("a", "4", "Book a table.\n\nWhere?\n\nNear the sea."),
        ("a", "2", "For two?"),
        ("b", "b:1", "Weather?"),
    ]
    assert docs[0].spans[0].location.timestamp == "2024-05-01T08:00:00.000Z"
    assert docs[1].fork is not None and docs[1].fork.after_message_id == "1"


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("conversations.json", b'[{"mapping": ', "is not valid JSON"),
        (
            "conversations.json",
            b'[{"title": "x", "mapping": 3}]',
            "conversation 1 has no 'mapping'",
        ),
        ("chat.jsonl", b'{"role": "user", "content": "hi"}\n{oops\n', "line 2 is not valid JSON"),
        ("chat.jsonl", b'{"role": "user", "content": "  "}\n', "holds no message with any text"),
        (
            "conversations.json",
            json.dumps(
                [
                    {
                        "current_node": "a",
                        "mapping": {
                            "a": _node("a", "b", [], "user", "x"),
                            "b": _node("b", "a", [], "user", "y"),
                        },
                    }
                ]
            ).encode(),
            "message a is its own ancestor",
        ),
        ("data.json", b'{"rows": [1, 2]}', "is not a chat export"),
    ],
    ids=["truncated", "no-mapping", "bad-line", "empty", "cycle", "other-json"],
)
def test_a_broken_export_is_refused_in_one_line(name: str, data: bytes, says: str) -> None:
    with pytest.raises(InputError) as refused:
        read_documents(name, data, kind="chat")
    assert str(refused.value).startswith(f"{name}: ") and says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_chat_export_is_recognised_by_its_extension_and_shape() -> None:
    assert kind_of("conversations.json", json.dumps(_regenerated_export()).encode()) == "chat"
    assert kind_of("conversations.json", b'[{"uuid": "x", "chat_messages": []}]') == "chat"
    assert kind_of("log.jsonl", b'{"role": "user", "content": "hi"}\n') == "chat"
    assert kind_of("package.json", b'{"name": "left-pad", "version": "1.0.0"}') is None
    assert kind_of("notes.txt", b'{"role": "user", "content": "hi"}') is None


# ------------------------------------------------------------ property tests

words = st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12),
    st.text(alphabet="0123456789", min_size=1, max_size=6),
    st.sampled_from(["Lisbon", "的一是", "👍🏽", "e\u0301", "—", "?!"]),
)
message_texts = st.lists(
    st.lists(words, min_size=1, max_size=120).map(" ".join), min_size=1, max_size=40
)
window_settings = st.one_of(
    st.just((256, 32)),
    st.integers(8, 300).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1))),
)


def _conversation(texts: list[str], separators: list[str]) -> tuple[str, list[tuple[int, int]]]:
    parts, spans, offset = [], [], 0
    for i, text in enumerate(texts):
        if i:
            sep = separators[i % len(separators)]
            parts.append(sep)
            offset += len(sep.encode())
        size = len(text.encode())
        spans.append((offset, offset + size))
        parts.append(text)
        offset += size
    return "".join(parts), spans


@PROPERTY
@given(
    texts=message_texts,
    separators=st.lists(st.sampled_from(["\n\n", "\n", " ", "\n\n\n"]), min_size=1, max_size=3),
    window=st.sampled_from(["multi", "single"]),
    sizes=window_settings,
)
def test_windows_obey_the_chunk_invariants_over_messages(texts, separators, window, sizes):
    size, overlap = sizes
    text, messages = _conversation(texts, separators)
    data = text.encode()
    chunks = chat_chunks(text, messages, ChatWindows(window=window, size=size, overlap=overlap))
    budget = overlap if window == "multi" else 0
    starts = {s for s, _ in messages}
    ends = {e for _, e in messages}
    large = [(s, e) for s, e in messages if reference_tokens(data[s:e].decode()) > size]
    covered = bytearray(len(data))
    for i, chunk in enumerate(chunks):
        assert chunk.index == i
        assert chunk.text == text[chunk.start : chunk.end]
        assert data[chunk.start_offset : chunk.end_offset] == chunk.text.encode()
        assert reference_tokens(chunk.text) == chunk.tokens <= size
        covered[chunk.start_offset : chunk.end_offset] = b"\1" * len(chunk.text.encode())
        # Bounds on message bounds, unless the chunk is a piece of a message too large.
        if chunk.start_offset not in starts or chunk.end_offset not in ends:
            assert any(s <= chunk.start_offset and chunk.end_offset <= e for s, e in large)
        if i:
            prev = chunks[i - 1]
            assert prev.start_offset < chunk.start_offset and prev.end_offset < chunk.end_offset
            shared = max(0, prev.end_offset - chunk.start_offset)
            repeated = reference_tokens(
                data[chunk.start_offset : chunk.start_offset + shared].decode()
            )
            assert repeated == chunk.overlap_tokens <= budget
    # Every message is in at least one chunk (its every byte but whitespace in some chunk).
    for s, e in messages:
        lost = [i for i in range(s, e) if not covered[i] and not data[i : i + 1].isspace()]
        assert not lost, "a message is lost"
        if (s, e) not in large:
            assert any(c.start_offset <= s and e <= c.end_offset for c in chunks), "cut apart"


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[dict], str]:
    """A ChatGPT conversation of random shape: each message answers an earlier one."""
    n = draw(st.integers(1, 25))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    empty = draw(st.sets(st.integers(0, n - 1), max_size=n // 3))
    mapping = {}
    for i, parent in enumerate(parents):
        children = [f"m{j}" for j, p in enumerate(parents) if p == i]
        text = "" if i in empty else f"message {i} " + "word " * draw(st.integers(1, 60))
        role = "user" if i % 2 else "assistant"
        mapping[f"m{i}"] = _node(
            f"m{i}", None if parent is None else f"m{parent}", children, role, text, T0 + i
        )
    current = draw(st.sampled_from(sorted(mapping)))
    return [{"title": "t", "id": "c", "current_node": current, "mapping": mapping}], current


@PROPERTY
@given(tree=trees(), window=st.sampled_from(["multi", "single"]))
def test_every_branch_is_one_path_and_every_message_is_stored_once(tree, window):
    export, current = tree
    mapping = export[0]["mapping"]
    try:
        docs = read_documents("c.json", json.dumps(export).encode(), all_branches=True)
    except InputError as exc:
        assert "holds no message with any text" in str(exc)
        return
    readable = {n for n, node in mapping.items() if node["message"]["content"]["parts"][0]}
    stored = [s.location.message_id for d in docs for s in d.spans]
    assert sorted(stored) == sorted(readable), "each message with text stored exactly once"
    # The path to the current message comes first, whole; the others fork from it.
    main = [d for d in docs if d.path_id == current]
    assert not main or (main[0] is docs[0] and main[0].fork is None)
    assert all(d.fork is not None for d in docs[1:])
    for doc in docs:
        path = _ancestors(export, doc.path_id)
        result, where = cut_document(doc, ChunkSettings(), ChatWindows(window))
        for chunk, found in zip(result.chunks, where, strict=True):
            assert {loc.message_id for loc in found} <= path, "a chunk mixes branches"
            assert chunk.text.strip()


def test_an_edited_question_in_a_claude_export_is_a_branch_of_its_own() -> None:
    root = "00000000-0000-4000-8000-000000000000"
    messages = [
        ("q1", root, "human", "Plan a trip to Kyoto."),
        ("a1", "q1", "assistant", "Kyoto in April: temples and cherry blossom."),
        ("q2", root, "human", "Plan a trip to Oslo instead."),  # the question, edited
        ("a2", "q2", "assistant", "Oslo in June: fjords and long evenings."),
    ]
    export = [
        {
            "uuid": "c-9",
            "name": "Trip",
            "current_leaf_message_uuid": "a2",
            "chat_messages": [
                {"uuid": u, "parent_message_uuid": p, "sender": s, "text": t}
                for u, p, s, t in messages
            ],
        }
    ]
    data = json.dumps(export).encode()
    [current] = read_documents("conversations.json", data)
    assert current.text == "Plan a trip to Oslo instead.\n\nOslo in June: fjords and long evenings."
    main, other = read_documents("conversations.json", data, all_branches=True)
    assert main == current
    assert other.text == "Plan a trip to Kyoto.\n\nKyoto in April: temples and cherry blossom."
    assert other.fork is None  # two roots: nothing is shared


def test_a_chunk_is_cited_by_its_pages_or_its_conversation_and_turns() -> None:
    from gligabao.read.documents import Page, cite

    assert cite("report.pdf", [Page(12), Page(13)]) == "report.pdf p.12-13"
    assert cite("report.pdf", [Page(4)]) == "report.pdf p.4"
    [doc] = read_documents("chat.json", json.dumps(_regenerated_export()).encode())
    _, where = cut_document(doc, ChunkSettings(), ChatWindows(window="single"))
    assert cite("chat.json", where[3], doc.name) == "chat.json #Moving abroad msg 4"
    assert cite("chat.json", where[2] + where[3], doc.name) == "chat.json #Moving abroad msgs 3-4"
