"""Fixtures of the web UI tests: ``browser`` (headless Chromium per module) and ``page`` (a checked
page on the module's own ``server`` fixture), from ``support/browser_fixtures.py``."""

from support.browser_fixtures import browser, page  # noqa: F401 - re-exported fixtures
