"""The prompts, output schemas and enums of the pipeline's agents A2..A5 (docs/pipeline.md).

Enum fields are plain strings in the schemas: an answer outside the allowed set still parses and
is then clamped to the default by :meth:`AgentPrompt.clamp`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ragstream.agents.agent_prompt import AgentPrompt

VERSION = "v1"

A2_ENUMS: dict[str, tuple[str, ...]] = {
    "system": ("assistant", "technical_expert", "teacher", "analyst", "writer"),
    "audience": ("general", "technical", "expert", "beginner", "executive"),
    "tone": ("neutral", "formal", "friendly", "concise"),
    "depth": ("brief", "standard", "detailed"),
    "confidence": ("low", "medium", "high"),
}
A2_DEFAULTS = {"system": "assistant", "audience": "general", "tone": "neutral", "depth": "standard",
               "confidence": "low"}


class A2Output(BaseModel):
    system: str = ""
    audience: str = ""
    tone: str = ""
    depth: str = ""
    confidence: str = ""


A2_PROMPT = AgentPrompt(
    name="A2_PromptShaper",
    version=VERSION,
    system_template=(
        "You classify a user's request. Choose exactly one value for each field.\n"
        "system: {system_values}\naudience: {audience_values}\ntone: {tone_values}\n"
        "depth: {depth_values}\nconfidence (how sure you are): {confidence_values}"
    ),
    user_template="TASK:\n{task}\n\nPURPOSE:\n{purpose}\n\nCONTEXT:\n{context}",
    output_schema=A2Output,
    enums=A2_ENUMS,
    defaults=A2_DEFAULTS,
)

A3_DECISIONS = ("keep", "drop")
A3_TAGS = ("relevant", "duplicate", "off-topic", "conflicting")


class A3Decision(BaseModel):
    index: int = Field(description="The candidate's number in the list.")
    decision: str = Field(description="keep or drop")
    tag: str = ""


class A3Output(BaseModel):
    decisions: list[A3Decision]


A3_PROMPT = AgentPrompt(
    name="A3_NLI_Gate",
    version=VERSION,
    system_template=(
        "You gate context passages for a question. For every numbered passage decide: {decision_values}. "
        "Tag each with one of: {tag_values}. Drop passages that are off-topic for the question, that repeat "
        "another passage, or that contradict better-supported passages. Keep everything else."
    ),
    user_template="QUESTION:\n{prompt_md}\n\nPASSAGES:\n{candidates}",
    output_schema=A3Output,
    enums={"decision": A3_DECISIONS, "tag": A3_TAGS},
    defaults={"decision": "keep", "tag": "relevant"},
)


class A4Output(BaseModel):
    s_ctx_md: str = Field(min_length=1, description="The condensed context as Markdown, citing passages as [n].")


A4_PROMPT = AgentPrompt(
    name="A4_Condenser",
    version=VERSION,
    system_template=(
        "You condense passages into a short Markdown context for answering a question. Summarize the facts, "
        "the constraints and the open issues relevant to the question, citing passages as [n]. "
        "Use only what the passages say; never invent facts. The value of s_ctx_md is ONE string of Markdown, "
        "for example: {{\"s_ctx_md\": \"- Timeouts default to 5 seconds [1]\\n- ...\"}}"
    ),
    user_template="QUESTION:\n{prompt_md}\n\nPASSAGES:\n{passages}",
    output_schema=A4Output,
)


class A5Output(BaseModel):
    format_kind: str = ""
    normalized_format_spec: str = Field(min_length=1)
    example_shape: str = ""
    hard_rules: list[str] = Field(default_factory=list)


def a5_prompt(format_kinds: tuple[str, ...], default_kind: str) -> AgentPrompt:
    """The A5 prompt over the format kinds of the prompt schema."""
    return AgentPrompt(
        name="A5_Format_Enforcer",
        version=VERSION,
        system_template=(
            "You turn a requested answer format and rules into precise instructions for another model. "
            "format_kind is one of: {format_kind_values}. normalized_format_spec is one clear sentence; "
            "hard_rules restate each constraint as a short imperative. Example: "
            "{{\"format_kind\": \"bullet_list\", \"normalized_format_spec\": \"Answer as a bullet list.\", "
            "\"example_shape\": \"- point\", \"hard_rules\": [\"Cite sources.\"]}}"
        ),
        user_template="TASK:\n{task}\n\nREQUESTED FORMAT:\n{format}\n\nCONSTRAINTS:\n{constraints}",
        output_schema=A5Output,
        enums={"format_kind": format_kinds},
        defaults={"format_kind": default_kind},
    )


class A0RewriteOutput(BaseModel):
    standalone: str = Field(min_length=1, description="The question rewritten to stand alone.")


A0_REWRITE_PROMPT = AgentPrompt(
    name="A0_FollowUp_Rewrite",
    version=VERSION,
    system_template=(
        "You make the LATEST QUESTION of a conversation self-contained. Combine what the latest question asks "
        "about with the topic of the conversation into one question. Keep every word the latest question asks "
        "about, in its language. Never answer it, never return an earlier question unchanged. If the latest "
        "question already stands alone, return it as it is.\n\n"
        "Example:\nCONVERSATION:\nUser: How do I set a timeout on an httpx client?\n\n"
        "LATEST QUESTION:\nand for proxies?\n\n"
        "Answer: {{\"standalone\": \"How do I set a timeout for proxies on an httpx client?\"}}"
    ),
    user_template="CONVERSATION:\n{conversation}\n\nLATEST QUESTION:\n{question}\n\n"
                  "Rewrite the latest question ({question}) so that it stands alone.",
    output_schema=A0RewriteOutput,
)
