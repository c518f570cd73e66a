"""The types the facade's answers, prompts, ratings and syncs carry, and how an answer is rendered as text:
re-exported for the shells (server, CLI, MCP), which import nothing below the facade."""

from __future__ import annotations

from ragstream.answer.models import Answer as Answer
from ragstream.answer.models import ErrorEvent as ErrorEvent
from ragstream.answer.models import RAGContext as RAGContext
from ragstream.answer.models import StreamEvent as StreamEvent
from ragstream.answer.render import marked_answer as marked_answer
from ragstream.answer.render import sources_text as sources_text
from ragstream.answer.render import support_lines as support_lines
from ragstream.feedback import FeedbackSummary as FeedbackSummary
from ragstream.feedback import Rated as Rated
from ragstream.feedback import Rating as Rating
from ragstream.pipeline.super_prompt import ConversationPair as ConversationPair
from ragstream.pipeline.super_prompt import SuperPrompt as SuperPrompt
from ragstream.sync.report import SyncReport as SyncReport
