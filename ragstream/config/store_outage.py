"""``answer.store_outage``: how a question is answered while the vector store cannot be searched (docs/answers.md)."""

from __future__ import annotations

from pydantic import Field

from ragstream.config.base import ConfigSection

DEFAULT_NOTICE = ("The documents could not be searched ({reason}), so this answer does not come from them "
                  "and cites no source.")
DEFAULT_SYSTEM_PROMPT = (
    "The document search is unavailable right now. Answer the user's question briefly from general knowledge, "
    "say that the documents could not be consulted, and say so plainly when you do not know.")


class StoreOutageConfig(ConfigSection):
    """The answer path with the vector store down: one bounded retry, then an answer without retrieval."""

    retries: int = Field(
        1, ge=0, le=3, description="Times the answer path runs the pipeline again after the vector store failed "
        "(vector_db_unavailable), before it answers without retrieval.")
    retry_backoff_seconds: float = Field(
        0.2, ge=0, le=5, description="Seconds waited before each such retry (never past the question's deadline).")
    notice: str = Field(
        DEFAULT_NOTICE, description="First sentence of an answer given without retrieval; {reason} is the store's "
        "error.")
    system_prompt: str = Field(
        DEFAULT_SYSTEM_PROMPT, description="System message of the LLM call that answers without retrieval (with "
        "no LLM configured the answer is the notice alone).")
