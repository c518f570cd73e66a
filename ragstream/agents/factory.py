"""``AgentFactory`` builds the pipeline's agents from the config; ``Agent`` makes one validated call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ragstream.agents.agent_prompt import AgentPrompt
from ragstream.config import AgentSettings, RagstreamConfig
from ragstream.providers.llm_client import LLMClient


@dataclass(frozen=True)
class Agent:
    """One agent: its prompt, the shared LLM client and its token cap. Stateless."""

    prompt: AgentPrompt
    client: LLMClient
    max_tokens: int

    def run(self, payload: Mapping[str, Any]) -> BaseModel:
        """Ask the model; returns the validated output or raises an ``LLMError`` subclass."""
        return self.client.complete_json(self.prompt.messages(payload), self.prompt.output_schema,
                                         max_tokens=self.max_tokens)


class AgentFactory:
    """Agents for A2..A5, or ``None`` (with :meth:`unavailable_reason`) when no LLM may be used."""

    def __init__(self, config: RagstreamConfig, client: LLMClient | None = None) -> None:
        self._config = config
        self._client = client
        if self._client is None and config.llm.enabled:
            self._client = LLMClient(config.llm)

    def settings(self, key: str) -> AgentSettings:
        """The settings of agent ``key`` (``a2``, ``a3``, ``a4`` or ``a5``)."""
        return getattr(self._config.agents, key)

    def unavailable_reason(self, key: str) -> str | None:
        """Why agent ``key`` runs deterministically, or ``None`` when it uses the LLM."""
        if not self._config.llm.enabled or self._client is None:
            return "no LLM configured (llm.base_url is unset)"
        if not self.settings(key).use_llm:
            return f"agents.{key}.use_llm is false"
        return None

    def build(self, key: str, prompt: AgentPrompt) -> Agent | None:
        """The agent for ``key`` with ``prompt``, or ``None`` when it must run deterministically."""
        if self.unavailable_reason(key) is not None or self._client is None:
            return None
        return Agent(prompt=prompt, client=self._client, max_tokens=self.settings(key).max_tokens)

    @property
    def model(self) -> str | None:
        """The model the agents call, ``None`` without an LLM."""
        return self._config.llm.model if self._client is not None else None
