"""The catalog's conversation turns (``Conversations``) on every catalog backend (the ``catalog`` fixture:
SQLite and PostgreSQL): the last ``keep`` pairs of each conversation, kept per owner."""

from __future__ import annotations

from ragstream.store.catalog_base import Catalog


def test_a_conversation_keeps_its_last_pairs(catalog: Catalog):
    turns = catalog.conversations
    for turn in range(4):
        turns.add_turn("c1", f"m{turn}", f"q{turn}", f"a{turn}", "2026-01-01T00:00:00+00:00", keep=3,
                       incomplete=turn == 3)
    assert turns.recent_turns("c1", 2) == [("q2", "a2"), ("q3", "a3")]
    kept = turns.conversation_turns("c1")
    assert [t["message_id"] for t in kept] == ["m1", "m2", "m3"] and [t["incomplete"] for t in kept] == [False, False, True]
    assert kept[0] == {"message_id": "m1", "user": "q1", "assistant": "a1", "created_at": "2026-01-01T00:00:00+00:00",
                       "incomplete": False}
    assert turns.recent_turns("nobody", 5) == [] and turns.conversation_turns("nobody") == []
    assert turns.recent_turns("c1", 0) == []


def test_conversations_are_kept_per_owner(catalog: Catalog):
    turns = catalog.conversations
    turns.add_turn("c", "m1", "q-alice", "a-alice", "t", 10, owner="alice")
    turns.add_turn("c", "m2", "q-bob", "a-bob", "t", 10, owner="bob")
    turns.add_turn("c", "m3", "q-none", "a-none", "t", 10)
    assert turns.recent_turns("c", 10, "alice") == [("q-alice", "a-alice")]
    assert [turn["user"] for turn in turns.conversation_turns("c", "bob")] == ["q-bob"]
    assert [turn["user"] for turn in turns.conversation_turns("c")] == ["q-none"]
    assert {(row.message_id, row.owner) for row in catalog.migration.turn_rows(None, 10)} == {
        ("m1", "alice"), ("m2", "bob"), ("m3", "")}
