"""The prompt "answer from my documents": the question, the passages that best match it and how to answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

import mcp_types as types

from ragstream.mcp_server.schemas import SearchArguments

if TYPE_CHECKING:
    from ragstream.mcp_server.tools import Principal, Tools

PROMPT = types.Prompt(
    name="answer_from_documents", title="Answer from my documents",
    description="Answer a question from your indexed documents only, citing the passages it uses.",
    arguments=[types.PromptArgument(name="question", description="The question to answer.", required=True)])
RULES = (
    "Answer the question below using only my indexed documents (the ragstream tools), not your own knowledge.",
    "End each sentence with the number of the passage it comes from, like [2], and list the sources at the end.",
    "To find more, call `search` or `ask` with one stand-alone question at a time (pronouns resolved); "
    "call `read` with a passage's document_id and chunk_id to see its context.",
    "If the documents do not answer the question, say so instead of guessing.",
)


def answer_prompt(tools: Tools, question: str, who: Principal) -> types.GetPromptResult:
    """One user message: the rules, the question and (``mcp.prompt_passages`` > 0) the passages that best match it."""
    parts = ["\n".join(f"- {rule}" for rule in RULES), f"Question: {question}"]
    wanted = tools.config.prompt_passages
    if wanted:
        found = tools.search(SearchArguments(query=question, top_k=wanted), who)
        if found.passages:
            quoted = [f"[{p.rank}] {' > '.join(x for x in (p.title, p.section_path) if x)} ({p.source}"
                      + (f", page {p.page}" if p.page is not None else "")
                      + f"; document_id {p.document_id}, chunk_id {p.chunk_id})\n{p.text}" for p in found.passages]
            parts.append("Passages from my documents that match the question best:\n\n" + "\n\n".join(quoted))
        else:
            parts.append("No passage of my documents matches the question; search with other words before answering.")
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text="\n\n".join(parts)))
    return types.GetPromptResult(description=f"Answer from my documents: {question}", messages=[message])
