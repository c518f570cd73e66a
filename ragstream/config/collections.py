"""``collections``: the bounds of a collection's name, texts and user lists (docs/collections.md)."""

from __future__ import annotations

from pydantic import Field

from ragstream.config.base import ConfigSection


class CollectionsConfig(ConfigSection):
    """Collections: separate bodies of documents with their own instructions and access (docs/collections.md)."""

    max_name_chars: int = Field(
        64, ge=1, description="The longest collection name (characters); a name is letters, digits, '.', '_' and '-', "
        "starting and ending with a letter or digit.")
    max_description_chars: int = Field(2000, ge=0, description="The longest collection description (characters).")
    max_instructions_chars: int = Field(
        4000, ge=0, description="The longest collection instructions (characters): the text added to the answering "
        "model's instructions for a question scoped to the collection.")
    max_users: int = Field(1000, ge=0, description="The most users a collection's reader list, or its editor list, may name.")
    max_scope: int = Field(100, ge=1, description="The most collections one question, search or listing may be scoped to.")
    users_may_share_with_all: bool = Field(
        False, description="Whether every user may give a collection access 'all' (every user reads it, and its text "
        "enters their unscoped searches and answers); off: only an admin (or the CLI) may. Sharing with named "
        "readers (access 'readers') is open to every user either way.")
