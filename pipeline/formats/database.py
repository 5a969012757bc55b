"""SQLite files of the run store (the checkpoints and the model-call cache), checked without
writing to them.

A damaged store is named, never silently replaced: a file that is not an SQLite database, or
one SQLite itself finds damaged, is refused with what to do before anything is written. The
check reads the 100-byte header; a file shorter than its header says is not taken for damage
on its size alone (a write-ahead log can hold the pages the main file does not yet, as after a
full disk): SQLite is asked (``PRAGMA quick_check`` on a read-only connection, which reads
through the log and never waits on another process). Damage deeper in a file is caught when
it is read (:func:`damaged`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pipeline.errors import InputError
from pipeline.formats.space import space_error

HEADER = b"SQLite format 3\x00"


class DamagedStore(InputError):
    """A checkpoint or cache file that cannot be read as the database it should be."""


def damaged(path: Path, what: str, detail: str) -> DamagedStore:
    return DamagedStore(
        f"the {what} is damaged: {detail}",
        file=path,
        hint=f"move it aside (mv {path} {path}.damaged) and run again; " + AFTERMATH.get(what, AFTERMATH[""]),
    )


AFTERMATH = {
    "checkpoint store": "runs recorded in it cannot be resumed, start them anew: finished model calls "
    "are answered from the cache",
    "revision store": "the bytes of the revisions it kept are gone (the review log still names each "
    "revision and its SHA-256)",
    "": "model calls are then asked again",
}
"""What moving a damaged store aside loses."""


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
        verdict = integrity(path)
        if verdict is not None:
            raise damaged(path, what, f"it is cut short ({size} of {pages * page_size} bytes): {verdict}")


def integrity(path: Path) -> str | None:
    """SQLite's own verdict on ``path`` (None: whole, or busy and so not known to be damaged)."""
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        rows = connection.execute("PRAGMA quick_check").fetchall()
    except sqlite3.OperationalError as exc:
        return None if "locked" in str(exc) or "busy" in str(exc) else str(exc)
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        connection.close()
    found = [str(row[0]) for row in rows]
    return None if found == ["ok"] else "; ".join(found[:3])


def sqlite_failure(exc: sqlite3.Error, path: Path, what: str) -> InputError | None:
    """The named error for an SQLite failure on the store, or None when it is not the store's fault."""
    text = str(exc)
    full = space_error(exc, path.parent)
    if full is not None:
        return full
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
