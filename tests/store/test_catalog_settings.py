"""The catalog's integer settings (``Settings``) on every catalog backend (the ``catalog`` fixture: SQLite and
PostgreSQL)."""

from __future__ import annotations

from ragstream.store.catalog_base import Catalog


def test_settings_are_stored_and_replaced(catalog: Catalog):
    settings = catalog.settings
    assert settings.setting("vector_size") is None
    settings.set_setting("vector_size", 256)
    settings.set_setting("vector_size", 384)
    settings.set_setting("migration_in_progress", 0)
    assert settings.setting("vector_size") == 384 and settings.setting("migration_in_progress") == 0
