"""Fixtures and helpers shared by the tests (re-exported as fixtures by ``tests/conftest.py``)."""
