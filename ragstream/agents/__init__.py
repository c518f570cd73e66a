"""The neutral agent stack: ``AgentPrompt`` (templates, JSON output schema, enums with defaults),
``Agent`` (one validated LLM call) and ``AgentFactory`` (agents from the config, or ``None``)."""

from ragstream.agents.agent_prompt import AgentPrompt
from ragstream.agents.factory import Agent, AgentFactory

__all__ = ["Agent", "AgentFactory", "AgentPrompt"]
