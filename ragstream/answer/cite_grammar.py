"""A llama.cpp grammar (GBNF) for the answer's shape: sentences that each end with a citation marker.

Small local models often write fluent answers without a single ``[n]`` marker, though the prompt asks for
them. With ``answer.citation_grammar`` (on by default for ``llm.provider = "local"``) the answering call carries
this grammar, and llama.cpp only lets the
model write what it allows: one to ``answer.citation_grammar_sentences`` sentences, each ending with a marker
``[n]`` (n one of the attachments) before or after its full stop, with no full stop or colon inside. The text
stays plain prose, so streaming, citations and the support check read it as any other answer. Only llama.cpp
servers know the ``grammar`` field (``llm.provider = "local"``, or a llama.cpp ``llm.base_url``); another
endpoint refuses the request and the answer is extractive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragstream.config import RagstreamConfig


def citation_grammar(attachments: int, max_sentences: int) -> str:
    """The GBNF grammar of an answer of 1..``max_sentences`` sentences citing attachments 1..``attachments``."""
    if attachments < 1 or max_sentences < 1:
        raise ValueError("a citation grammar needs at least one attachment and one sentence")
    numbers = " | ".join(f'"{n}"' for n in range(1, attachments + 1))
    more = f' (" " sentence){{0,{max_sentences - 1}}}' if max_sentences > 1 else ""
    return "\n".join((
        f"root ::= sentence{more}",
        "sentence ::= first rest end",
        "first ::= [A-Za-z0-9\"'`(]",
        # no full stop inside a sentence: a small model that wants to end one must cite right after it (a "."
        # allowed before other characters, for "5.0" or "e.g.", let it write on past the end instead). The marker
        # may stand before or after the full stop: small models end a sentence first, and with the marker forced
        # before it they wrote on until the token cap. No colon either: a sentence cannot open an attachment's
        # "SOURCE: " header line, whose stop string would otherwise cut the marker before it ("[1" + "] SOURCE: ")
        "rest ::= [^\\[\\]\\n.:]+",  # llm.max_tokens ends a sentence that never does
        'end ::= " [" number "]." | ". [" number "]"',
        f"number ::= {numbers}",
    ))


def answer_grammar(config: RagstreamConfig) -> Callable[[int], str | None]:
    """``answer.citation_grammar`` (unset: on for a local model only) as the grammar of an answer citing that many
    attachments (None: unconstrained, or nothing to cite)."""
    setting = config.answer.citation_grammar
    enabled = config.llm.provider == "local" if setting is None else setting
    sentences = config.answer.citation_grammar_sentences

    def grammar(attachments: int) -> str | None:
        return citation_grammar(attachments, sentences) if enabled and attachments else None

    return grammar
