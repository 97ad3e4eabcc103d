"""Chat exports: ChatGPT's and Claude's `conversations.json`, and JSON Lines of messages.

Each conversation is a document named by its title (or its id). A conversation is a
tree (a regenerated answer is a second child of the same question): its document is
the path from the root to the current message (ChatGPT's ``current_node``, else the
last message); with ``all_branches`` each other root-to-leaf path is a document too,
holding only the messages after the point where it leaves the paths read before it
(its `Fork`), so a shared prefix is stored once and no document mixes two branches.

The indexed text is the messages' words only, one blank line between messages; each
message's role, time and ids are its `Message` location, never part of the text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from gligabao.base.times import canonical_time
from gligabao.errors import InputError
from gligabao.read.documents import Fork, FormattedDocument, Message, Span, check_size, clean_text

SEPARATOR = "\n\n"
_ROLES = {"human": "user", "ai": "assistant", "bot": "assistant"}


@dataclass(slots=True)
class _Node:
    """A message of a conversation's tree (its text may be empty: a root, a hidden
    system prompt, an image without words; such a node joins paths but is not read)."""

    id: str
    parent: str | None
    role: str
    text: str
    timestamp: str | None


@dataclass(slots=True)
class _Conversation:
    id: str
    title: str
    nodes: dict[str, _Node]
    current: str | None


# ------------------------------------------------------------------- recognising


def export_format(data: bytes) -> str | None:
    """``chatgpt``, ``claude`` or ``jsonl`` when ``data`` looks like one, else None."""
    head = data[: 1 << 20].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] not in (b"[", b"{"):
        return None
    if b'"mapping"' in head:
        return "chatgpt"
    if b'"chat_messages"' in head:
        return "claude"
    first = head.split(b"\n", 1)[0]
    try:
        record = json.loads(first)
    except ValueError:
        return None
    if isinstance(record, dict) and "role" in record and "content" in record:
        return "jsonl"
    return None


def read_chat(name: str, data: bytes, *, all_branches: bool = False) -> list[FormattedDocument]:
    """The documents of a chat export: one per conversation (and per other branch)."""
    kind = export_format(data)
    if kind is None:
        raise InputError(
            name,
            "is not a chat export: expected ChatGPT's or Claude's conversations.json, "
            "or JSON Lines of messages with role and content",
        )
    if kind == "jsonl":
        conversations = _jsonl(name, data)
    else:
        records = _load_json(name, data)
        if isinstance(records, dict):
            records = [records]
        if not isinstance(records, list):
            raise InputError(name, "is not a chat export: expected a list of conversations")
        parse = _chatgpt if kind == "chatgpt" else _claude
        conversations = [parse(name, i, record) for i, record in enumerate(records)]
    documents: list[FormattedDocument] = []
    for conversation in conversations:
        documents += _documents(name, conversation, all_branches)
    if not documents:
        raise InputError(name, "holds no message with any text")
    return documents


def _load_json(name: str, data: bytes) -> object:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InputError(name, f"is not valid JSON ({_reason(exc)}); export it again") from None


def _reason(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# ----------------------------------------------------------------------- formats


def _chatgpt(name: str, index: int, record: object) -> _Conversation:
    if not isinstance(record, dict) or not isinstance(record.get("mapping"), dict):
        raise InputError(name, f"conversation {index + 1} has no 'mapping': not a ChatGPT export")
    nodes: dict[str, _Node] = {}
    for key, node in record["mapping"].items():
        if not isinstance(node, dict):
            continue
        message = node.get("message") if isinstance(node.get("message"), dict) else {}
        hidden = (message.get("metadata") or {}).get("is_visually_hidden_from_conversation")
        author = message.get("author") if isinstance(message.get("author"), dict) else {}
        nodes[str(node.get("id", key))] = _Node(
            id=str(message.get("id") or node.get("id", key)),
            parent=_str_or_none(node.get("parent")),
            role=_role(author.get("role")),
            text="" if hidden else _chatgpt_text(message.get("content")),
            timestamp=_time(message.get("create_time")),
        )
    conversation_id = str(record.get("conversation_id") or record.get("id") or index + 1)
    current = _str_or_none(record.get("current_node"))
    return _Conversation(conversation_id, _title(record.get("title")), nodes, current)


def _chatgpt_text(content: object) -> str:
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        return SEPARATOR.join(p for p in parts if isinstance(p, str) and p.strip())
    text = content.get("text")
    return text if isinstance(text, str) else ""


def _claude(name: str, index: int, record: object) -> _Conversation:
    if not isinstance(record, dict) or not isinstance(record.get("chat_messages"), list):
        raise InputError(
            name, f"conversation {index + 1} has no 'chat_messages': not a Claude export"
        )
    nodes: dict[str, _Node] = {}
    previous: str | None = None
    for i, message in enumerate(record["chat_messages"]):
        if not isinstance(message, dict):
            continue
        node_id = str(message.get("uuid") or i + 1)
        # Newer exports name each message's parent (an edited question branches).
        parent = message.get("parent_message_uuid", previous)
        nodes[node_id] = _Node(
            id=node_id,
            parent=_str_or_none(parent) if parent in nodes else None,
            role=_role(message.get("sender")),
            text=_claude_text(message),
            timestamp=_time(message.get("created_at")),
        )
        previous = node_id
    conversation_id = str(record.get("uuid") or index + 1)
    current = _str_or_none(record.get("current_leaf_message_uuid")) or previous
    return _Conversation(conversation_id, _title(record.get("name")), nodes, current)


def _claude_text(message: dict) -> str:
    text = message.get("text")
    if isinstance(text, str) and text.strip():
        return text
    return _parts_text(message.get("content"))


def _parts_text(content: object) -> str:
    """A message's content: a string, or a list of parts of which the texts are read."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = (p.get("text") if isinstance(p, dict) else p for p in content)
    return SEPARATOR.join(t for t in texts if isinstance(t, str) and t.strip())


def _jsonl(name: str, data: bytes) -> list[_Conversation]:
    """JSON Lines: a message a line, conversations by ``conversation_id`` (default:
    one, named by the file); with ``parent_id`` a tree, else the lines in order."""
    default_id = os.path.splitext(os.path.basename(name))[0] or name
    grouped: dict[str, list[dict]] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise InputError(name, f"line {number} is not valid JSON ({_reason(exc)})") from None
        if not isinstance(record, dict) or "content" not in record:
            raise InputError(name, f"line {number} is not a message with role and content")
        grouped.setdefault(str(record.get("conversation_id") or default_id), []).append(record)
    return [_jsonl_conversation(cid, records) for cid, records in grouped.items()]


def _jsonl_conversation(conversation_id: str, records: list[dict]) -> _Conversation:
    tree = any(r.get("parent_id") is not None for r in records)
    nodes: dict[str, _Node] = {}
    previous: str | None = None
    for i, record in enumerate(records):
        node_id = str(record.get("id") or f"{conversation_id}:{i + 1}")
        parent = _str_or_none(record.get("parent_id")) if tree else previous
        nodes[node_id] = _Node(
            node_id,
            parent,
            _role(record.get("role")),
            _parts_text(record.get("content")),
            _time(record.get("timestamp")),
        )
        previous = node_id
    return _Conversation(conversation_id, conversation_id, nodes, previous)


def _role(value: object) -> str:
    role = str(value or "unknown").strip().lower()
    return _ROLES.get(role, role)


def _title(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _time(value: object) -> str | None:
    """A message's time as ISO-8601 UTC: epoch seconds (ChatGPT) or ISO text."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return canonical_time(datetime.fromtimestamp(value, timezone.utc).isoformat())
        except (OverflowError, OSError, ValueError):
            return None
    return canonical_time(value)


# ------------------------------------------------------------------------- paths


def _documents(
    name: str, conversation: _Conversation, all_branches: bool
) -> list[FormattedDocument]:
    nodes = conversation.nodes
    if not nodes:
        return []
    current = conversation.current if conversation.current in nodes else _latest_leaf(nodes)
    paths = [_path_to(name, nodes, current)]
    if all_branches:
        covered = set(paths[0])
        for leaf in _leaves(nodes):
            if leaf in covered:
                continue
            path = _path_to(name, nodes, leaf)
            paths.append(path)
            covered.update(path)
    documents = []
    seen: dict[str, tuple[str, int]] = {}  # node -> (path id, turn) where first stored
    for k, path in enumerate(paths):
        doc = _path_document(name, conversation, path, k, seen)
        if doc is not None:
            documents.append(doc)
    return documents


def _path_document(
    name: str,
    conversation: _Conversation,
    path: list[str],
    k: int,
    seen: dict[str, tuple[str, int]],
) -> FormattedDocument | None:
    """The document of one path: the messages of it not stored with an earlier path."""
    nodes = conversation.nodes
    path_id = path[-1]
    readable = [node_id for node_id in path if nodes[node_id].text.strip()]
    turns = {node_id: turn for turn, node_id in enumerate(readable, 1)}
    shared = 0
    while shared < len(path) and path[shared] in seen:
        shared += 1
    fork = None
    if shared:
        fork_path, _ = seen[path[shared - 1]]
        after = next((n for n in reversed(path[:shared]) if n in turns), path[shared - 1])
        fork = Fork(fork_path, nodes[after].id, turns.get(after, 0))
    own = [node_id for node_id in path[shared:] if node_id in turns]
    for node_id in path:
        seen.setdefault(node_id, (path_id, turns.get(node_id, 0)))
    if not own:
        return None
    text, spans = _text_and_spans(conversation.id, path_id, [(nodes[n], turns[n]) for n in own])
    title = conversation.title or conversation.id
    doc_name = title if k == 0 else f"{title} (branch {k})"
    check_size(f"{name} #{doc_name}", text)
    return FormattedDocument(
        name=doc_name,
        kind="chat",
        text=text,
        spans=spans,
        mode="chat",
        conversation_id=conversation.id,
        path_id=path_id,
        fork=fork,
    )


def _text_and_spans(
    conversation_id: str, path_id: str, messages: Iterable[tuple[_Node, int]]
) -> tuple[str, tuple[Span, ...]]:
    pieces: list[str] = []
    spans: list[Span] = []
    offset = 0
    for node, turn in messages:
        text = clean_text(node.text).strip()
        if pieces:
            pieces.append(SEPARATOR)
            offset += len(SEPARATOR)
        size = len(text.encode("utf-8"))
        where = Message(conversation_id, path_id, node.id, turn, node.role, node.timestamp)
        spans.append(Span(offset, offset + size, where))
        pieces.append(text)
        offset += size
    return "".join(pieces), tuple(spans)


def _path_to(name: str, nodes: dict[str, _Node], leaf: str) -> list[str]:
    """The node ids from the root to ``leaf``."""
    path: list[str] = []
    seen: set[str] = set()
    node_id: str | None = leaf
    while node_id is not None and node_id in nodes:
        if node_id in seen:
            raise InputError(name, f"message {node_id} is its own ancestor: the tree is broken")
        seen.add(node_id)
        path.append(node_id)
        node_id = nodes[node_id].parent
    return path[::-1]


def _leaves(nodes: dict[str, _Node]) -> list[str]:
    """The nodes no other node names as its parent, in the export's order."""
    parents = {node.parent for node in nodes.values()}
    return [node_id for node_id in nodes if node_id not in parents]


def _latest_leaf(nodes: dict[str, _Node]) -> str:
    """Where a conversation that names no current message ends: its latest leaf."""
    leaves = _leaves(nodes) or list(nodes)
    latest = max(range(len(leaves)), key=lambda i: (nodes[leaves[i]].timestamp or "", i))
    return leaves[latest]
