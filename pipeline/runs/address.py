"""The run store's address: ``--store`` or DESIGNLOOP_STORE, and how messages show it."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

STORE_ENV = "DESIGNLOOP_STORE"


def store_url(value: str | None) -> str | None:
    """``--store`` or DESIGNLOOP_STORE; empty means the local store."""
    url = value if value is not None else os.environ.get(STORE_ENV)
    return url or None


def redact(url: str) -> str:
    """An address as messages and records show it: no password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
