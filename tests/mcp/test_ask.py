"""`gb mcp`'s `ask` tool: `gb ask --json` as structured content (checked against its
declared schema), a short text citing `[n] path:LINE`, a question without support said
so, and no chat endpoint an error of the tool, the server staying up."""

from __future__ import annotations

from mcp import ClientSession

from tests.mcp.test_server import call, graph, over_stdio, refused  # noqa: F401 (a fixture)
from tests.support.llm_server import LLMServer


def test_ask_answers_with_checked_citations_over_stdio(graph, online: LLMServer) -> None:  # noqa: F811

    async def check(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert tools["ask"].annotations.read_only_hint is True
        asked = await call(
            session, "ask", {"question": "Where does Alice Moreau work?", "at": "2016-01-01"}
        )
        shown = asked.structured_content
        assert shown["supported"] and shown["at"].startswith("2016-01-01")
        [citation] = shown["citations"]
        assert citation["quote"] == "Alice Moreau works at Acme Corp since 2015-03-01."
        text = asked.content[0].text
        assert text.startswith("Alice Moreau works at Acme Corp since 2015-03-01. [1]\n")
        assert f"[1] {graph['y2015.txt']}:1 (2015-03 -> 2021-09)" in text
        await refused(session, "ask", {"question": ""})
        assert "not an ISO-8601 time" in await refused(
            session, "ask", {"question": "x", "at": "yesterday"}
        )

    over_stdio(check)
    assert online.calls("answer") == 1


def test_ask_without_support_and_without_an_endpoint(graph, online: LLMServer) -> None:  # noqa: F811
    online.answer_with = lambda question, sources: {"answer": "Nobody knows.", "citations": []}

    async def unsupported(session: ClientSession) -> None:
        asked = await call(session, "ask", {"question": "Who leads Acme Corp?"})
        assert asked.structured_content["supported"] is False
        assert "no support in the memory" in asked.content[0].text

    over_stdio(unsupported)

    async def offline(session: ClientSession) -> None:
        message = await refused(session, "ask", {"question": "Who leads Acme Corp?"})
        assert "no chat endpoint is configured" in message
        assert (await call(session, "stats", {})).structured_content["documents"] == 2

    over_stdio(offline, offline=True)
