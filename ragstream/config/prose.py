"""``answer.prose``: which sentences an extractive answer may quote (docs/answers.md, "Quotes are sentences")."""

from __future__ import annotations

from pydantic import Field

from ragstream.config.base import ConfigSection


class ProseConfig(ConfigSection):
    """The prose check of the extractive answer: a quote is a sentence, never a heading, a navigation
    list, a link-only list item or a table-of-contents fragment."""

    enabled: bool = Field(
        True, description="Quote only sentences that pass the prose check (off: every sentence long enough is "
        "quoted, as before the check).")
    min_words: int = Field(
        5, ge=1, description="A quoted sentence has at least this many words (words, as read without markup).")
    require_verb: bool = Field(
        True, description="A quoted sentence holds a verb (an auxiliary, a modal, a common verb in any form, or a "
        "word ending in -ed/-ing); headings and link texts usually hold none.")
    max_link_share: float = Field(
        0.5, ge=0, le=1, description="A paragraph or list item whose link texts make up more than this share of "
        "its words (0..1) is navigation, not prose.")
    short_item_words: int = Field(
        4, ge=1, description="A list item of at most this many words is a short item (a link, a name, a heading "
        "of a table of contents).")
    max_short_items: int = Field(
        1, ge=0, description="A unit joining more than this many short list items is a list of names or links, "
        "not a sentence.")
