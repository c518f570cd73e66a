"""``StageContext``: everything a stage may use besides the SuperPrompt. Stages hold no state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragstream.agents.factory import AgentFactory
from ragstream.config import RagstreamConfig
from ragstream.pipeline.prompt_schema import PromptSchema, load_prompt_schema
from ragstream.providers.llm_client import LLMClient
from ragstream.providers.rerankers import Reranker, make_reranker

if TYPE_CHECKING:
    from ragstream.api import Ragstream


@dataclass(frozen=True)
class StageContext:
    """Config, the index (retrieval and embedder), the agents, the reranker and the prompt schema."""

    config: RagstreamConfig
    rs: Ragstream
    agents: AgentFactory
    reranker: Reranker
    schema: PromptSchema


def build_context(rs: Ragstream, llm: LLMClient | None = None) -> StageContext:
    """A context over ``rs``; the LLM client is built from ``rs.config.llm`` unless given."""
    config = rs.config
    return StageContext(
        config=config,
        rs=rs,
        agents=AgentFactory(config, llm),
        reranker=make_reranker(config.reranker, rs.embedder),
        schema=load_prompt_schema(config.preprocessing.prompt_schema),
    )
