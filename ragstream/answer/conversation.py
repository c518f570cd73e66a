"""Conversation memory: the last N (user, assistant) turn pairs per conversation id, in the catalog."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ragstream.errors import InsufficientStorageError, VectorDBUnavailableError
from ragstream.pipeline.super_prompt import ConversationPair
from ragstream.store.catalog_base import Conversations

logger = logging.getLogger("ragstream.answer")


class ConversationStore:
    """Keeps the last ``max_pairs`` turn pairs of each conversation (``pipeline.N4_RECENT_CONV_MAX_PAIRS``)."""

    def __init__(self, turns: Conversations, max_pairs: int,
                 on_answer: Callable[[str, str | None, str], None] | None = None) -> None:
        self._turns = turns
        self._max_pairs = max_pairs
        self._on_answer = on_answer

    @staticmethod
    def new_id() -> str:
        """A fresh conversation (or message) id."""
        return str(uuid.uuid4())

    def recent(self, conversation_id: str, owner: str | None = None) -> list[ConversationPair]:
        """``owner``'s conversation's kept pairs, oldest first (empty for an unknown id).

        Conversations are kept per owner: one user never reads or continues another's."""
        return [ConversationPair(user=user, assistant=assistant)
                for user, assistant in self._turns.recent_turns(conversation_id, self._max_pairs, owner)]

    def append(self, conversation_id: str, message_id: str, user: str, assistant: str, *, incomplete: bool = False,
               owner: str | None = None) -> None:
        """Record one turn of ``owner``'s conversation; ``incomplete`` when the answer was cut short. On a full
        disk or with the catalog's database down the turn is not kept (logged), and the answer is still served.
        ``on_answer`` hears of every answer (message id, owner, question)."""
        created_at = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            self._turns.add_turn(conversation_id, message_id, user, assistant, created_at, self._max_pairs,
                                   incomplete=incomplete, owner=owner)
        except (InsufficientStorageError, VectorDBUnavailableError) as error:  # the answer is still served; only its memory is lost
            logger.warning("conversation turn not kept: %s", error.message)
        if self._on_answer is not None:  # every answer, kept or not, may be rated (ragstream/feedback.py)
            self._on_answer(message_id, owner, user)

    def messages(self, conversation_id: str, owner: str | None = None) -> list[dict[str, Any]]:
        """``owner``'s kept turns, oldest first: message_id, user, assistant, created_at, incomplete."""
        return self._turns.conversation_turns(conversation_id, owner)
