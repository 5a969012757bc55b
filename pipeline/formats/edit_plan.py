"""One mutation's file changes, planned in memory, validated whole, then written.

A plan reads its files through a reader (the live files, or the snapshot a run took when it
started), so planning the same edit twice gives the same result. Nothing is written until
every change is planned and validated; line 1 of every existing file stays byte-for-byte.
Committing checks each file first: a file already in its planned state is left alone (a
resumed run), a file still in its original state is written, and a file changed by someone
else stops the commit before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import confinement
from pipeline.errors import InputError, MalformedEdit
from pipeline.formats.stamp import line1_preserved
from pipeline.formats.textio import atomic_write_bytes, decode, encode

Reader = Callable[[Path], bytes | None]


def read_live(path: Path) -> bytes | None:
    try:
        return confinement.read_bytes(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(
            f"could not read the file: {exc.strerror}", file=path, hint="check the file's permissions"
        ) from None


@dataclass(slots=True)
class Planned:
    path: Path
    before: bytes | None
    text: str
    newline: str = "\n"
    bom: bool = False

    @property
    def after(self) -> bytes:
        return encode(self.text, self.newline, self.bom)

    @property
    def changed(self) -> bool:
        if self.before is None:
            return bool(self.text)
        return self.before != self.after


@dataclass(slots=True)
class EditPlan:
    reader: Reader = read_live
    files: dict[Path, Planned] = field(default_factory=dict)
    new_stamped: set[Path] = field(default_factory=set)
    """Files this plan creates with a stamp of their own (length-trigger-crossing)."""

    def _load(self, path: Path) -> Planned:
        if path not in self.files:
            data = self.reader(path)
            if data is None:
                self.files[path] = Planned(path, None, "")
            else:
                source = decode(data, path)
                self.files[path] = Planned(path, data, source.text, source.newline, source.bom)
        return self.files[path]

    def exists(self, path: Path) -> bool:
        planned = self._load(path)
        return planned.before is not None or bool(planned.text)

    def text(self, path: Path) -> str:
        return self._load(path).text

    def original(self, path: Path) -> str:
        planned = self._load(path)
        return decode(planned.before, path).text if planned.before is not None else ""

    def set(self, path: Path, text: str) -> None:
        self._load(path).text = text

    def changed(self) -> list[Path]:
        return [p for p, f in self.files.items() if f.changed]

    def created(self) -> list[Path]:
        return [p for p, f in self.files.items() if f.before is None and f.changed]

    def validate(self) -> None:
        """Line 1 of every existing file is kept byte-for-byte (only creation writes a stamp)."""
        for path in self.changed():
            planned = self.files[path]
            if planned.before is not None and not line1_preserved(planned.before, planned.after):
                raise MalformedEdit(
                    "the edit would change line 1 of the file",
                    file=path,
                    line=1,
                    hint="line 1 carries the workflow-sha stamp; only the creation kinds write it. "
                    "Leave the first line out of --old",
                )

    def commit(self, current: Reader = read_live) -> list[Path]:
        """Write every changed file; returns the files written now. Checks all before writing any."""
        self.validate()
        pending: list[Planned] = []
        for path in self.changed():
            planned = self.files[path]
            now = current(path)
            if now == planned.after:
                continue
            if now != planned.before:
                raise InputError(
                    "the file changed since this edit started; nothing was written",
                    file=path,
                    hint="start the edit again on the current files",
                )
            pending.append(planned)
        for planned in pending:
            atomic_write_bytes(planned.path, planned.after)
        return [p.path for p in pending]
