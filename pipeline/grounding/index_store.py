"""The code index kept on disk, one per code root, keyed by each code file's content.

Building the code index parses every source file (seconds for a few hundred files); a fleet
asks for it once per design directory and per command. The store keeps what the index holds of
each file (grounding.psi's ``FileEntry``: its symbols and its uses of names), keyed by the
file's path and a digest of its bytes. A later build reads every file (it must, to know what
changed), digests it, and parses only the files whose bytes the store has not seen: unchanged
code costs a read and a digest per file, and a change to one file re-indexes that file only.

The store is a JSON file under ``<runs>/index/`` named by the code root and by what shapes an
entry (the store's format, designloop's version, the PSI and claims tables), so a change to any
of them starts afresh. It is written atomically when anything changed; a store that does not
parse is ignored (and rewritten), never an error: it is a cache. Nothing in it is a secret a
file holds: symbols, names and line numbers (a ``.env`` variable's signature carries no value).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from pipeline import confinement
from pipeline.formats.textio import atomic_write
from pipeline.grounding.psi import CodeIndex, FileEntry, iter_sources, read_entry, source_bytes
from pipeline.grounding.psi_text import readable_text
from pipeline.grounding.symbols import Symbol
from pipeline.settings import data_dir

STORE_FORMAT = 1
INDEX_DIR = "index"
"""The store's directory in the runs directory."""


def _version() -> str:
    try:
        return metadata.version("designloop")
    except metadata.PackageNotFoundError:
        return "0"


def _store_key(repo_root: Path, code_root: Path) -> str:
    params = data_dir("params")
    h = hashlib.sha256()
    for part in (
        str(STORE_FORMAT).encode(),
        _version().encode(),
        (code_root.relative_to(repo_root).as_posix() if code_root != repo_root else ".").encode(),
        confinement.read_bytes(params / "psi.toml"),
        confinement.read_bytes(params / "claims.toml"),
    ):
        h.update(part)
        h.update(b"\x1f")
    return h.hexdigest()[:20]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _dump(entry: FileEntry, digest: str) -> dict[str, Any]:
    return {
        "digest": digest,
        "language": entry.language,
        "config": entry.config,
        "symbols": [
            [s.name, s.qualified, s.kind, s.line, s.signature, s.exact, s.end] for s in entry.symbols
        ],
        "uses": entry.uses,
    }


def _loaded(rel: str, raw: dict[str, Any]) -> FileEntry | None:
    """A file's entry as the store keeps it, or None when the store's record is not one."""
    try:
        symbols = [
            Symbol(n, q, k, rel, line, sig, exact, end) for n, q, k, line, sig, exact, end in raw["symbols"]
        ]
        return FileEntry(rel, raw["language"], symbols, raw["uses"], raw["config"])
    except (KeyError, TypeError, ValueError):
        return None


class IndexStore:
    """The code index of one code root, kept under ``directory`` (``<runs>/index``)."""

    def __init__(self, directory: Path, repo_root: Path, code_root: Path) -> None:
        self.path = directory / f"{_store_key(repo_root, code_root)}.json"
        self.repo_root = repo_root
        self.code_root = code_root
        self.reparsed: list[str] = []
        """The files the last build parsed (their bytes were new to the store)."""

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(confinement.read_bytes(self.path))
        except (OSError, ValueError, confinement.OutsideRepository):
            return {}
        files = data.get("files") if isinstance(data, dict) and data.get("format") == STORE_FORMAT else None
        return files if isinstance(files, dict) else {}

    def build(self, private: Callable[[Path], bool]) -> CodeIndex:
        """The code index of the code root, from the store where a file's bytes are unchanged."""
        known = self._read()
        kept: dict[str, dict[str, Any]] = {}
        index = CodeIndex(root=self.repo_root, root_under=self.code_root)
        self.reparsed = []
        for path in iter_sources(self.code_root, private, self.repo_root):
            rel = path.relative_to(self.repo_root).as_posix()
            try:
                data, why = source_bytes(self.repo_root, rel, path)
            except confinement.OutsideRepository:
                continue
            if data is None:
                index.add(FileEntry(rel, note=why))
                continue
            digest = _digest(data)
            raw = known.get(rel)
            entry = _loaded(rel, raw) if isinstance(raw, dict) and raw.get("digest") == digest else None
            if entry is None or raw is None:
                entry, _ = read_entry(rel, data, path)
                self.reparsed.append(rel)
                raw = _dump(entry, digest)
            kept[rel] = raw
            text = readable_text(data) if entry.language == "text" else None
            index.add(entry, text.split("\n") if text is not None else None)
        if self.reparsed or set(kept) != set(known):
            self._write(kept)
        return index

    def _write(self, files: dict[str, dict[str, Any]]) -> None:
        try:
            self.path.parent.mkdir(exist_ok=True)
            atomic_write(
                self.path, json.dumps({"format": STORE_FORMAT, "files": files}, separators=(",", ":"))
            )
        except OSError:
            pass  # a cache that cannot be kept is rebuilt next time


def store_for(runs_dir: Path | None) -> Path | None:
    """Where the code index is kept: the runs directory's ``index/``, when the runs directory
    exists (a command that only reads never creates one)."""
    if runs_dir is None or not runs_dir.is_dir():
        return None
    return runs_dir / INDEX_DIR
