"""The catalog's rows for a copy (``MigrationRows``) on every catalog backend (the ``catalog`` fixture: SQLite
and PostgreSQL): the embedding cache and the turns in pages of key order, the turns stored back exactly."""

from __future__ import annotations

import numpy as np

from ragstream.store.catalog_base import Catalog, TurnRow


def test_the_embedding_cache_pages_out_in_key_order(catalog: Catalog):
    vectors = {(model, f"h{i}"): np.full(4, i, dtype=np.float32) for model in ("m1", "m2") for i in range(5)}
    for model in ("m1", "m2"):
        catalog.cache.cache_vectors(model, [(h, v) for (m, h), v in vectors.items() if m == model])
    seen, after = [], None
    while page := catalog.migration.embedding_rows(after, 3):
        seen.extend(page)
        after = (page[-1][0], page[-1][1])
    assert [(m, h) for m, h, _ in seen] == sorted(vectors) and all(np.array_equal(v, vectors[(m, h)]) for m, h, v in seen)


def test_turns_page_out_and_import_exactly(catalog: Catalog):
    rows = catalog.migration
    for turn in range(3):
        catalog.conversations.add_turn(f"c{turn % 2}", f"m{turn}", f"q{turn}", f"a{turn}", "2026-01-01T00:00:00+00:00",
                                       keep=5, incomplete=turn == 2)
    catalog.conversations.add_turn("c0", "m3", "q3", "a3", "2026-01-01T00:00:00+00:00", keep=5, owner="alice")
    turns = rows.turn_rows(None, 2) + rows.turn_rows("m1", 2)  # pages by message id
    assert [(t.conversation_id, t.seq, t.message_id, t.incomplete, t.owner) for t in turns] == \
        [("c0", 1, "m0", False, ""), ("c1", 1, "m1", False, ""), ("c0", 2, "m2", True, ""), ("c0", 1, "m3", False, "alice")]
    rows.import_turns([TurnRow("c9", 4, "m9", "q", "a", "2026-01-02T00:00:00+00:00", True), turns[0]])
    assert catalog.conversations.conversation_turns("c9") == [
        {"message_id": "m9", "user": "q", "assistant": "a", "created_at": "2026-01-02T00:00:00+00:00", "incomplete": True}]
    assert len(rows.turn_rows(None, 100)) == 5
    rows.import_turns([])
    assert [row.message_id for row in rows.turn_rows("m3", 100)] == ["m9"]


def test_message_ids_page_in_byte_order(catalog: Catalog):
    """Both backends order message ids the same way (PostgreSQL by the C collation, as SQLite does)."""
    for message_id in ("b", "B", "a-1", "a_1", "é"):
        catalog.conversations.add_turn("c", message_id, "q", "a", "t", keep=10)
    assert [row.message_id for row in catalog.migration.turn_rows(None, 10)] == sorted(["b", "B", "a-1", "a_1", "é"])
