"""The run store's address: ``--store`` or DESIGNLOOP_STORE, how it is checked, and how
messages show it.

An address is what libpq takes: a ``postgresql://`` (or ``postgres://``) URI, or a
``key=value`` connection string. It is parsed by psycopg's own conninfo parser before anything
runs, so a malformed one is bad input (exit 2). Messages and records show it rebuilt from its
parsed parts with the password (``user:PASSWORD@``, ``?password=``, ``password=``) replaced by
``***``, and never quote the parser's message, which can hold a piece of the address.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import quote

from pipeline.errors import InputError, first_line

STORE_ENV = "DESIGNLOOP_STORE"
SCHEMES = ("postgresql", "postgres")
SECRET_KEYS = frozenset({"password", "sslpassword"})
SHOWN_KEYS = ("user", "password", "host", "hostaddr", "port", "dbname")
"""The parts the shown address is built from; any other option follows as a query."""
HINT = (
    "pass --store postgresql://USER@HOST:PORT/DB (or set DESIGNLOOP_STORE); "
    "leave it unset for the local store"
)
UNSHOWN = "the --store address"


@dataclass(frozen=True, slots=True)
class StoreAddress:
    dsn: str
    """What psycopg connects with (the address as given)."""
    shown: str
    """The address as messages show it: no password."""
    secrets: tuple[str, ...]
    """The passwords it holds, scrubbed from any message that might quote them."""


def store_url(value: str | None) -> str | None:
    """``--store`` or DESIGNLOOP_STORE; empty means the local store."""
    url = value if value is not None else os.environ.get(STORE_ENV)
    return url or None


def _parsed(text: str) -> dict[str, str]:
    scheme = re.match(r"^\s*([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if scheme and scheme.group(1).lower() not in SCHEMES:
        raise InputError(f"--store {scheme.group(1)}://… is not a postgresql:// address", hint=HINT)
    require_postgres()
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(text)
    except psycopg.Error as exc:
        # libpq quotes the token it stumbled on, which may be a piece of the password.
        first = first_line(exc, "")
        reason = re.sub(r'"([^"]*)"', lambda m: m.group(0) if len(m.group(1)) < 2 else '"…"', first)
        raise InputError(
            f"--store is not a valid PostgreSQL address ({reason or type(exc).__name__})", hint=HINT
        ) from None
    # An address may name no part at all (``postgresql://``): libpq takes them from PGHOST,
    # PGUSER, PGPASSWORD ... as CI service containers set them.
    return {k: str(v) for k, v in parts.items() if v is not None}


def require_postgres() -> None:
    """The PostgreSQL store's packages are an optional extra: say how to install them."""
    import importlib

    missing = []
    for module in ("psycopg", "pgqueuer", "langgraph.checkpoint.postgres"):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise InputError(
            f"the PostgreSQL store needs packages that are not installed ({', '.join(missing)})",
            hint="pip install 'designloop[postgres]', or leave out --store to keep runs in runs/",
        )


def _check_ports(parts: dict[str, str], shown: str) -> None:
    for port in (parts.get("port") or "").split(","):
        if port and not (port.isdigit() and 0 < int(port) < 65536):
            raise InputError(f"--store {shown}: the port {port!r} is not a number from 1 to 65535", hint=HINT)


def _host(host: str, port: str) -> str:
    hosts, ports = host.split(","), port.split(",") if port else []
    out = []
    for index, name in enumerate(hosts):
        name = quote(name, safe="") if name.startswith("/") else f"[{name}]" if ":" in name else name
        each = ports[index] if len(ports) == len(hosts) else (ports[0] if len(ports) == 1 else "")
        out.append(f"{name}:{each}" if each else name)
    return ",".join(out)


def _shown(parts: dict[str, str]) -> str:
    user = quote(parts["user"], safe="") if parts.get("user") else ""
    secret = ":***" if any(parts.get(k) for k in SECRET_KEYS) else ""
    userinfo = f"{user}{secret}@" if user or secret else ""
    host = _host(parts.get("host") or parts.get("hostaddr") or "", parts.get("port") or "")
    path = "/" + quote(parts["dbname"], safe="") if parts.get("dbname") else ""
    rest = sorted((k, v) for k, v in parts.items() if k not in SHOWN_KEYS and k not in SECRET_KEYS)
    query = "?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in rest) if rest else ""
    return f"postgresql://{userinfo}{host}{path}{query}"


def parse_store(text: str) -> StoreAddress:
    """A store address checked and ready to connect with; InputError (exit 2) when malformed."""
    parts = _parsed(text)
    shown = _shown(parts)
    _check_ports(parts, shown)
    return StoreAddress(text, shown, tuple(v for k, v in parts.items() if k in SECRET_KEYS and v))


def redact(url: str) -> str:
    """An address as messages and records show it: no password (never raises)."""
    try:
        return parse_store(url).shown
    except InputError:
        return UNSHOWN


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every password of the address replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
