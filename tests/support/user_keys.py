"""The API keys of the multi-user server tests: two users (Alice, Bob) and an admin (``root``), how to hand them
to ``ragstream serve`` (a ``server.keys`` JSON value or a TOML keys file) and a client that sends one."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
ENTRIES = {"alice": {"key": ALICE_KEY, "user": "alice"}, "bob": {"key": BOB_KEY, "user": "bob"},
           "root": {"key": ADMIN_KEY, "user": "root", "role": "admin"}}
"""Each test user's ``server.keys`` entry, by user id."""
TIMEOUT = httpx.Timeout(180.0)


def keys_json(*users: str) -> str:
    """The ``RAGSTREAM_SERVER__KEYS`` value of ``users`` (all three unless named)."""
    return json.dumps([ENTRIES[user] for user in users or ENTRIES])


def keys_file(path: Path, *users: str) -> Path:
    """A TOML keys file (``server.keys_file``) of ``users``, written at ``path``."""
    path.write_text("".join("[[keys]]\n" + "".join(f'{name} = "{value}"\n' for name, value in ENTRIES[user].items()) + "\n"
                            for user in users))
    return path


def key_client(url: str, key: str, timeout: httpx.Timeout = TIMEOUT, **headers: str) -> httpx.Client:
    """An HTTP client of the server at ``url`` that presents ``key`` (and ``headers``) on every request."""
    return httpx.Client(base_url=url, timeout=timeout, headers={"Authorization": f"Bearer {key}", **headers})
