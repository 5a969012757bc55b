"""The fingerprint of what a creation run reads, and of what it wrote (docs/scale.md).

A batch skips a design directory whose inputs and outputs are both unchanged since its last
run ended PASS: no run starts and no request is sent. The inputs are

* the kind, and the version of designloop;
* the resolved model of every role and the OpenAI-compatible base URL (the model config);
* the workflow definitions a run uses, as the stamp digests them (agents, prompts, params,
  the user's loop settings: ``agents.roles.workflow_definitions``);
* the design directory's inputs: the research log, the implementation plan, the track files,
  its designloop.toml, and for phase 4 the frozen design and its companion;
* the code the run reads: every file under the code root, except hidden files and directories
  (``.git``, ``.venv`` ...), ``__pycache__`` and ``node_modules``, the runs directory, every
  design directory's ``_workflow/`` and the phase-4 outputs. A file over 4 MiB counts by its
  path and size. One batch digests each code root once.

The outputs are the files the kind writes (``_workflow/design.md`` and its companion; or
``design-final.md`` and ``design-mechanics-final.md``): a PASS whose output was edited since
is not a PASS of what is on disk. Contents are hashed, never times, so a copy of the
repository at another path or on another machine has the same fingerprint.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from pipeline.agents.roles import workflow_definitions
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.kinds import PHASE1

BIG = 4 * 2**20
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "_workflow"})
SKIPPED_FILES = frozenset({"design-final.md", "design-mechanics-final.md"})


def version() -> str:
    try:
        return metadata.version("designloop")
    except metadata.PackageNotFoundError:
        return "unknown"


def _file_digest(path: Path) -> str:
    size = path.stat().st_size
    if size > BIG:
        return f"size:{size}"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(paths: Iterable[Path], root: Path) -> list[tuple[str, str]]:
    return [(p.relative_to(root).as_posix(), _file_digest(p)) for p in paths if p.is_file()]


def code_digest(code_root: Path, skip: Iterable[Path] = ()) -> str:
    """Every file under ``code_root`` the run may read (see the module's list), by content."""
    skipped = {p.resolve() for p in skip}
    entries: list[tuple[str, str]] = []
    for here, dirs, files in os.walk(code_root):
        base = Path(here)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".") and d not in SKIPPED_DIRS and (base / d).resolve() not in skipped
        )
        for name in sorted(files):
            if name.startswith(".") or name in SKIPPED_FILES:
                continue
            path = base / name
            if path.is_symlink() and not path.exists():
                continue
            entries.append((path.relative_to(code_root).as_posix(), _file_digest(path)))
    return _hash(entries)


def _hash(entries: Iterable[tuple[str, object]]) -> str:
    h = hashlib.sha256()
    for name, value in entries:
        h.update(f"{name}\0{value}\n".encode())
    return h.hexdigest()


def input_files(design: DesignDir, kind: str) -> list[Path]:
    files = [design.research_log, design.plan, design.root / "designloop.toml"]
    if design.plan_dir.is_dir():
        files += sorted(p for p in design.plan_dir.rglob("*.md"))
    if kind != PHASE1:
        files += [design.design, design.mechanics]
    return files


def output_files(design: DesignDir, kind: str) -> list[Path]:
    if kind == PHASE1:
        return [design.design, design.mechanics]
    return [design.final, design.final_mechanics]


class Fingerprints:
    """Fingerprints for one batch: each code root is digested once."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir
        self._code: dict[Path, str] = {}
        self._workflow: dict[Path, str] = {}

    def code(self, code_root: Path) -> str:
        if code_root not in self._code:
            self._code[code_root] = code_digest(code_root, [self.runs_dir])
        return self._code[code_root]

    def workflow(self, repo_root: Path) -> str:
        if repo_root not in self._workflow:
            self._workflow[repo_root] = _hash(
                (name, hashlib.sha256(data).hexdigest()) for name, data in workflow_definitions(repo_root)
            )
        return self._workflow[repo_root]

    def inputs(self, design: DesignDir, kind: str, models: dict[str, str], base_url: str | None) -> str:
        parts: list[tuple[str, object]] = [
            ("kind", kind),
            ("designloop", version()),
            ("models", sorted(models.items())),
            ("base_url", base_url or os.environ.get("OPENAI_BASE_URL", "")),
            ("workflow", self.workflow(design.repo_root)),
            ("code", self.code(design.code_root)),
            ("code_root", design.rel(design.code_root)),
        ]
        parts += _files(input_files(design, kind), design.root)
        return _hash(parts)


def outputs_digest(design: DesignDir, kind: str) -> str:
    return _hash(_files(output_files(design, kind), design.root))
