"""Who is calling: API keys map to users; each request acts as one user (docs/http-api.md, Users).

Keys come from ``server.api_key`` (the operator's key: user ``server.default_user_id``, admin),
``server.keys`` and ``server.keys_file``. With per-user keys the server is multi-user and every
request needs a key; the key decides the user, never a client-chosen header. Without any key
(single-user mode, loopback only) every request is the local user, an admin. ``X-User-ID`` lets an
admin act as another user; a user key may only name its own user.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import Depends
from pydantic import TypeAdapter, ValidationError
from starlette.requests import HTTPConnection

from ragstream.config import ApiKeyEntry, ServerConfig
from ragstream.errors import ConfigError, PermissionDeniedError
from ragstream.models import Scope
from ragstream.server.errors import InvalidUserIdError
from ragstream.server.state import ServerState, get_state

CALLER_KEY = "ragstream_caller"
"""Where the key check leaves the request's :class:`Caller` in the ASGI scope's ``state``."""
ADMIN = "admin"
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
_ENTRIES: TypeAdapter[list[ApiKeyEntry]] = TypeAdapter(list[ApiKeyEntry])


@dataclass(frozen=True)
class Caller:
    """The user a request acts as, and whether it may act for others and for shared documents."""

    user: str
    admin: bool = False

    def scope(self, collections: list[str] | None = None) -> Scope:
        """What one request of this caller reads: the collections ``collections`` (names; none: every one the
        caller may read), resolved by the facade (an unreadable one is 404 ``collection_not_found`` there)."""
        return Scope(self.user, collections, self.admin)


class KeyRing:
    """API keys (by their sha256, so a lookup compares no secret byte by byte) -> the caller they act as."""

    def __init__(self, callers: dict[bytes, Caller], *, multi_user: bool) -> None:
        self._callers = callers
        self.multi_user = multi_user
        """Per-user keys exist: every request needs a key, wherever the server is bound."""

    def __bool__(self) -> bool:
        return bool(self._callers)

    def caller(self, key: str | None) -> Caller | None:
        """The caller ``key`` maps to, or None for a missing or unknown key."""
        return None if key is None else self._callers.get(_digest(key))

    @classmethod
    def from_config(cls, config: ServerConfig) -> KeyRing:
        """Every configured key, checked; raises ConfigError for a short, blank or padded key, a bad
        user id, a key given twice, or an unreadable keys file."""
        entries: list[tuple[str, str, Caller]] = []
        if config.api_key is not None and config.api_key.get_secret_value() != "":
            entries.append(("server.api_key", config.api_key.get_secret_value(),
                            Caller(config.default_user_id, admin=True)))
        per_user = [*config.keys, *(read_keys_file(config.keys_file) if config.keys_file else [])]
        for number, entry in enumerate(per_user, start=1):
            entries.append((f"key {number} (user {entry.user!r})", entry.key.get_secret_value(),
                            Caller(entry.user, admin=entry.role == ADMIN)))
        callers: dict[bytes, Caller] = {}
        for where, key, caller in entries:
            _check_key(where, key, config.min_api_key_chars)
            try:
                validate_user_id(caller.user, config.max_user_id_chars)
            except InvalidUserIdError as error:
                raise ConfigError(f"{where}: {error.message}") from None
            if callers.setdefault(_digest(key), caller) is not caller:
                raise ConfigError(f"{where}: the same key is given twice; every key must be distinct")
        return cls(callers, multi_user=bool(per_user))


def read_keys_file(path: Path) -> list[ApiKeyEntry]:
    """The ``keys`` list of a TOML (``[[keys]]`` tables) or JSON (``{"keys": [...]}``) file."""
    try:
        text = path.read_text(encoding="utf-8")
        data: Any = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
        return _ENTRIES.validate_python(data.get("keys", []) if isinstance(data, dict) else data)
    except (OSError, UnicodeDecodeError, ValueError, ValidationError) as error:
        raise ConfigError(f"server.keys_file {path}: {error}") from None


def validate_user_id(raw: str, max_chars: int) -> str:
    """``raw`` as a user id: 1..``max_chars`` characters, no control characters, no surrounding blanks."""
    if not raw or raw != raw.strip():
        raise InvalidUserIdError("a user id must be non-empty, without leading or trailing blanks")
    if len(raw) > max_chars:
        raise InvalidUserIdError(f"a user id is at most {max_chars} characters; this one has {len(raw)}")
    if _CONTROL_CHARS.search(raw):
        raise InvalidUserIdError("a user id must not contain control characters")
    return raw


def get_caller(request: HTTPConnection, state: ServerState = Depends(get_state)) -> Caller:
    """FastAPI dependency: the user this request (or WebSocket) acts as (see the module docstring)."""
    caller: Caller = request.scope.get("state", {}).get(CALLER_KEY) or Caller(state.config.default_user_id, admin=True)
    asked = request.headers.get(state.config.user_id_header, "")
    if not asked.strip():
        return caller
    user = validate_user_id(asked, state.config.max_user_id_chars)
    if user == caller.user:
        return caller
    if not caller.admin:
        raise PermissionDeniedError(f"{state.config.user_id_header} may name another user only with an admin key")
    return Caller(user, admin=True)


def _check_key(where: str, key: str, min_chars: int) -> None:
    if not key.strip():
        raise ConfigError(f"{where}: the API key is blank")
    if key != key.strip():
        raise ConfigError(f"{where}: the API key has leading or trailing blanks (clients could never send it)")
    if len(key) < min_chars:
        raise ConfigError(f"{where}: the API key has {len(key)} characters; server.min_api_key_chars "
                          f"requires at least {min_chars}")


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()
