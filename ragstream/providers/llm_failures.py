"""What an OpenAI-compatible endpoint's failures mean: which are retried, how long ``Retry-After`` asks to wait,
whether a 200 holds a chat completion, and which of ragstream's typed LLM errors each becomes."""

from __future__ import annotations

import math
from typing import Any

import openai

from ragstream.errors import LLMError, LLMRateLimitError, LLMRequestError, LLMUnavailableError
from ragstream.providers.retry import parse_retry_after

RETRY_AFTER_STATUSES = frozenset({429, 503})


def is_retryable(error: BaseException) -> bool:
    """Retry 429, 5xx, network errors and timeouts; never 400 or another 4xx."""
    if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return False


def retry_after_seconds(error: BaseException) -> float | None:
    """The ``Retry-After`` wait (``retry-after-ms`` or ``retry-after``) of a 429/503 answer, if any."""
    if not isinstance(error, openai.APIStatusError) or error.status_code not in RETRY_AFTER_STATUSES:
        return None
    headers = error.response.headers
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value / 1000.0
    return parse_retry_after(headers.get("retry-after"))


def check_completion(completion: Any, attempts: int) -> None:
    """Raise :class:`LLMUnavailableError` unless ``completion`` looks like a chat completion.

    The SDK hands back the body text when a 200 is not JSON (e.g. an HTML error page from a
    proxy) and an unchecked model when the JSON lacks the schema; neither holds an answer.
    An empty ``choices`` list is a real (if useless) answer and is left to the caller.
    """
    choices = getattr(completion, "choices", None)
    if isinstance(completion, (str, bytes)) or not isinstance(choices, list):
        preview = completion[:120] if isinstance(completion, (str, bytes)) else type(completion).__name__
        raise LLMUnavailableError(
            f"LLM endpoint answered 200 with a body that is not a chat completion: {preview!r}",
            status_code=200, attempts=attempts)
    for choice in choices:
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None) if message is not None else None
        if message is None or not (content is None or isinstance(content, str)):
            raise LLMUnavailableError(
                "LLM endpoint answered 200 with a choice that holds no message", status_code=200, attempts=attempts)


def translate_error(error: openai.APIError, attempts: int) -> LLMError:
    """Map an SDK error to ragstream's typed LLM errors."""
    if isinstance(error, openai.APIConnectionError):
        return LLMUnavailableError(f"LLM endpoint unreachable after {attempts} attempt(s): {error}", attempts=attempts)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        detail = f"HTTP {status} after {attempts} attempt(s): {error.message}"
        if status == 429:
            return LLMRateLimitError(f"LLM rate limit: {detail}", status_code=status, attempts=attempts,
                                     retry_after=retry_after_seconds(error))
        if status >= 500:
            return LLMUnavailableError(f"LLM server error: {detail}", status_code=status, attempts=attempts)
        return LLMRequestError(f"LLM refused the request: {detail}", status_code=status, attempts=attempts)
    return LLMUnavailableError(f"LLM call failed: {error}", attempts=attempts)
