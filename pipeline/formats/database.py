"""SQLite files of the run store (the checkpoints and the model-call cache), checked without
writing to them.

A damaged store is named, never silently replaced: a file that is not an SQLite database, or
one cut short, is refused with what to do before anything is written. The check reads only
the 100-byte header and the file's size, so it creates no journal or shared-memory file and
never waits on another process; damage deeper in a file is caught when it is read
(:func:`damaged`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pipeline.errors import InputError

HEADER = b"SQLite format 3\x00"


class DamagedStore(InputError):
    """A checkpoint or cache file that cannot be read as the database it should be."""


def damaged(path: Path, what: str, detail: str) -> DamagedStore:
    return DamagedStore(
        f"the {what} is damaged: {detail}",
        file=path,
        hint=f"move it aside (mv {path} {path}.damaged) and run again; "
        + (
            "runs recorded in it cannot be resumed, start them anew: finished model calls are "
            "answered from the cache"
            if what == "checkpoint store"
            else "model calls are then asked again"
        ),
    )


def check_database(path: Path, what: str) -> None:
    """Refuse ``path`` when it exists and is not a whole SQLite database (an empty file is one)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(
            f"the {what} could not be read: {exc.strerror}", file=path, hint="fix its permissions"
        ) from None
    if not path.is_file():
        raise InputError(f"the {what} is not a file", file=path, hint="move it aside and run again")
    if size == 0:
        return
    try:
        with path.open("rb") as handle:
            head = handle.read(100)
    except OSError as exc:
        raise InputError(
            f"the {what} could not be read: {exc.strerror}", file=path, hint="fix its permissions"
        ) from None
    if len(head) < 100 or not head.startswith(HEADER):
        raise damaged(path, what, "it is not an SQLite database")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    counter_valid = head[24:28] == head[92:96]
    if counter_valid and pages and size < pages * page_size:
        raise damaged(path, what, f"it is cut short ({size} of {pages * page_size} bytes)")


def sqlite_failure(exc: sqlite3.Error, path: Path, what: str) -> InputError | None:
    """The named error for an SQLite failure on the store, or None when it is not the store's fault."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError):
        if "locked" in text or "busy" in text:
            return InputError(
                f"the {what} stayed busy: {text}",
                file=path,
                hint="another designloop process is writing it; run again when it is done",
            )
        if "readonly" in text or "unable to open" in text:
            return InputError(
                f"the {what} cannot be written: {text}",
                file=path,
                hint="make the runs directory writable, or pass --runs-dir",
            )
        return None
    if isinstance(exc, sqlite3.DatabaseError):
        return damaged(path, what, text)
    return None
