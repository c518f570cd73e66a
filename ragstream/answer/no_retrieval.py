"""Answering while the vector store cannot be searched (docs/answers.md, "The vector store down").

The pipeline runs again at most ``answer.store_outage.retries`` times after a ``vector_db_unavailable``;
then the question is answered without retrieval: the notice (the documents could not be searched, and
why), followed by the LLM's answer from general knowledge when an LLM is configured. Such an answer has
mode ``no_retrieval``, Low confidence, no citations and a ``degraded_reason``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ragstream.config.store_outage import StoreOutageConfig
from ragstream.errors import LLMError, VectorDBUnavailableError
from ragstream.providers.deadline import Deadline

if TYPE_CHECKING:
    from ragstream.providers.llm_client import ChatCompletionResult, LLMClient

T = TypeVar("T")
MODE = "no_retrieval"
logger = logging.getLogger("ragstream.answer")


def run_with_retry(run: Callable[[], T], config: StoreOutageConfig, deadline: Deadline) -> T:
    """``run()``, run again up to ``config.retries`` times (after ``config.retry_backoff_seconds``, within
    ``deadline``) while it raises VectorDBUnavailableError; the last such error is logged at ERROR and raised."""
    attempts = 0
    while True:
        attempts += 1
        try:
            return run()
        except VectorDBUnavailableError as error:
            if attempts > config.retries or not deadline.allows(config.retry_backoff_seconds):
                logger.error("vector store unavailable after %d attempt(s); answering without retrieval (the turn is "
                             "not kept in its conversation): %s", attempts, error.message)
                raise
            logger.warning("vector store unavailable (attempt %d of %d), retrying: %s",
                           attempts, config.retries + 1, error.message)
            time.sleep(config.retry_backoff_seconds)


def degraded_reason(error: VectorDBUnavailableError) -> str:
    """The answer's ``degraded_reason`` for a store that stayed down."""
    return f"vector store unavailable ({error.code}): {error.message}; answered without retrieval"


def notice(error: VectorDBUnavailableError, config: StoreOutageConfig) -> str:
    """The sentence that opens an answer given without retrieval."""
    return config.notice.format(reason=error.message)


def _messages(question: str, config: StoreOutageConfig) -> list[dict[str, Any]]:
    return [{"role": "system", "content": config.system_prompt}, {"role": "user", "content": question}]


def _tokens(result: ChatCompletionResult) -> dict[str, Any]:
    return {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}


def answer(llm: LLMClient | None, question: str, opening: str, config: StoreOutageConfig, deadline: Deadline,
           on_llm_error: Callable[[LLMError], None]) -> tuple[str, str | None, dict[str, Any]]:
    """The whole answer without retrieval: (text, model, token counts). Without an LLM, or when it fails
    (``on_llm_error`` is told), the text is ``opening`` alone."""
    if llm is None:
        return opening, None, {}
    try:
        result = llm.chat(_messages(question, config), deadline=deadline)
    except LLMError as error:
        on_llm_error(error)
        return opening, None, {}
    return f"{opening}\n\n{result.text.strip()}", result.model, _tokens(result)


class NoRetrievalStream:
    """The answer without retrieval as text deltas: ``opening``, then the LLM's streamed answer (if any).
    ``model`` and ``tokens`` are set once the LLM's stream ended; ``close()`` releases its connection."""

    def __init__(self, llm: LLMClient | None, question: str, opening: str, config: StoreOutageConfig,
                 deadline: Deadline, on_llm_error: Callable[[LLMError], None]) -> None:
        self._llm, self._question, self._opening, self._config = llm, question, opening, config
        self._deadline, self._on_llm_error = deadline, on_llm_error
        self._stream: Any = None
        self.model: str | None = None
        self.tokens: dict[str, Any] = {}

    def __iter__(self) -> Iterator[str]:
        yield self._opening
        if self._llm is None:
            return
        try:
            self._stream = self._llm.stream_chat(_messages(self._question, self._config), deadline=self._deadline)
        except LLMError as error:
            self._on_llm_error(error)
            return
        yield "\n\n"
        yield from self._stream  # an LLMError midway reaches the answer path, which marks the answer incomplete
        self.model, self.tokens = self._stream.result.model, _tokens(self._stream.result)

    def close(self) -> None:
        """Release the LLM's stream (the consumer stopped early)."""
        close = getattr(self._stream, "close", None)
        if callable(close):
            close()
