"""``AgentFactory`` builds the pipeline's agents from the config; ``Agent`` makes one validated call."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ragstream.agents.agent_prompt import AgentPrompt
from ragstream.config import AgentSettings, RagstreamConfig
from ragstream.providers.deadline import Deadline

if TYPE_CHECKING:  # the openai SDK loads only when an LLM is configured (half a second of start-up)
    from ragstream.providers.llm_client import LLMClient


@dataclass(frozen=True)
class Agent:
    """One agent: its prompt, the shared LLM client and its token cap. Stateless."""

    prompt: AgentPrompt
    client: LLMClient
    max_tokens: int

    def run(self, payload: Mapping[str, Any], *, deadline: Deadline | None = None) -> BaseModel:
        """Ask the model; returns the validated output or raises an ``LLMError`` subclass."""
        return self.client.complete_json(self.prompt.messages(payload), self.prompt.output_schema,
                                         max_tokens=self.max_tokens, deadline=deadline)


class AgentFactory:
    """Agents for A2..A5, or ``None`` (with :meth:`unavailable_reason`) when a stage must not call the LLM.

    A stage calls the LLM only when one is configured and the stage is in ``pipeline.llm_stages``.
    The factory also knows the model's context window (configured, or learned from the server).
    """

    def __init__(self, config: RagstreamConfig, client: LLMClient | None = None) -> None:
        self._config = config
        self._client = client
        if self._client is None and config.llm.enabled:
            from ragstream.providers.llm_client import LLMClient

            self._client = LLMClient(config.llm)
        self._window = config.llm.context_window
        self._lock = threading.Lock()

    def settings(self, key: str) -> AgentSettings:
        """The settings of agent ``key`` (``a2``, ``a3``, ``a4`` or ``a5``)."""
        settings: AgentSettings = getattr(self._config.agents, key)
        return settings

    def unavailable_reason(self, key: str) -> str | None:
        """Why agent ``key`` runs deterministically, or ``None`` when it uses the LLM."""
        if not self._config.llm.enabled or self._client is None:
            return "no LLM configured (llm.base_url is unset)"
        if key not in self._config.pipeline.llm_stages:
            return f"{key} is not in pipeline.llm_stages"
        return None

    def build(self, key: str, prompt: AgentPrompt) -> Agent | None:
        """The agent for ``key`` with ``prompt``, or ``None`` when it must run deterministically."""
        if self.unavailable_reason(key) is not None or self._client is None:
            return None
        return Agent(prompt=prompt, client=self._client, max_tokens=self.settings(key).max_tokens)

    @property
    def client(self) -> LLMClient | None:
        """The shared LLM client (also the answering model's), ``None`` without an LLM."""
        return self._client

    @property
    def model(self) -> str | None:
        """The model the agents call, ``None`` without an LLM."""
        return self._config.llm.model if self._client is not None else None

    @property
    def context_window(self) -> int:
        """The model's context window in tokens."""
        return self._window

    def learn_context_window(self, tokens: int) -> None:
        """Believe a smaller window the server reported."""
        with self._lock:
            self._window = min(self._window, tokens)
