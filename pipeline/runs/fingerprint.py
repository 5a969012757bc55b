"""The fingerprint of what a creation run reads, and of what it wrote (docs/scale.md).

A batch skips a design directory whose inputs and outputs are both unchanged since its last
run ended PASS: no run starts and no request is sent. The inputs are

* the kind, and the version of designloop;
* the resolved model of every role, and the server each model talks to as its provider
  resolved it (``--base-url``, OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_BASE_URL ...);
* the workflow definitions a run uses, as the stamp digests them (agents, prompts, params,
  the user's loop settings: ``agents.roles.workflow_definitions``);
* the design directory's inputs: the research log, the implementation plan, the track files,
  its designloop.toml, and for phase 4 the frozen design and its companion;
* the code the run can read: when every role runs on the offline engine, the files the code
  index lists under the code root (the engine reads the code only through it: hidden files
  included, hidden directories not); else every file the tools' walk yields under the
  repository root (a model's Grep, Glob and Read reach all of it, hidden directories too).
  Both walks (agents.readable) skip version control, virtual environments, caches and build
  output. Left out: the runs directory, every other runs directory under the repository
  (agents.readable.store_dirs), designloop's recorded outputs (agents.readable.byproducts; no
  role reads them), and every design directory's ``_workflow/``, phase-4 outputs and claims
  ledgers: the documents designloop writes (counting one directory's documents as another's code would make
  the two re-run each other for ever; each directory's own inputs are listed above). Sockets,
  FIFOs and devices are never opened; a file that cannot be read counts by its error. A file
  over 4 MiB counts by its path and size. One batch digests each root once.

The outputs are the files the kind writes (``_workflow/design.md`` and its companion; or
``design-final.md`` and ``design-mechanics-final.md``): a PASS whose output was edited since
is not a PASS of what is on disk. Contents are hashed, never times, so a copy of the
repository at another path or on another machine has the same fingerprint.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path

from pipeline import confinement
from pipeline.agents.readable import byproducts, store_dirs, walk
from pipeline.agents.resolve import OFFLINE
from pipeline.agents.roles import workflow_definitions
from pipeline.formats.approvals import NAME as APPROVALS
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.kinds import CREATION_KINDS, PHASE1, Kind
from pipeline.grounding.ledger import DESIGN_DOCS, LEDGER_NAMES

BIG = 4 * 2**20
CHUNK = 2**20
DESIGN_NAMES = DESIGN_DOCS | LEDGER_NAMES | {APPROVALS}
"""The documents designloop writes in every design directory (their claims ledgers and the
approvals file included: neither makes a batch run again): never anyone's code."""


@cache
def version() -> str:
    """designloop's version (looked up once: the installed metadata does not change under a run)."""
    try:
        return metadata.version("designloop")
    except metadata.PackageNotFoundError:
        return "unknown"


def _file_digest(path: Path) -> str:
    """A regular file's SHA-256; a file that is not one, or cannot be read, counts by what it is
    (it is opened without blocking, so a FIFO swapped in is never waited on)."""
    try:
        fd = confinement.open_fd(path)
    except (IsADirectoryError, confinement.NotRegularFile):
        return f"special:{stat.S_IFMT(os.stat(path).st_mode)}"
    except confinement.OutsideRepository:
        return "outside-the-repository"
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    try:
        info = os.fstat(fd)
        if info.st_size > BIG:
            return f"size:{info.st_size}"
        h = hashlib.sha256()
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
        return h.hexdigest()
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    finally:
        os.close(fd)


def _files(paths: Iterable[Path], root: Path) -> list[tuple[str, str]]:
    return [(p.relative_to(root).as_posix(), _file_digest(p)) for p in paths if p.is_file()]


def code_digest(code_root: Path, skip: Iterable[Path] = (), hidden_dirs: bool = True) -> str:
    """Every file under ``code_root`` the run can read (see the module's list), by content;
    without ``hidden_dirs``, as the code index walks it (hidden directories left out)."""
    root = code_root.resolve()
    skipped = {p.resolve() for p in skip}

    def left_out(path: Path) -> bool:
        return path.name in DESIGN_NAMES or path in skipped

    found = walk(root, left_out, hidden_dirs)
    entries = [(path.relative_to(root).as_posix(), _file_digest(path)) for path in found]
    return _hash(entries)


def _hash(entries: Iterable[tuple[str, object]]) -> str:
    h = hashlib.sha256()
    for name, value in entries:
        h.update(f"{name}\0{value}\n".encode())
    return h.hexdigest()


def input_files(design: DesignDir, kind: Kind) -> list[Path]:
    files = [design.research_log, design.plan, design.root / "designloop.toml"]
    if design.plan_dir.is_dir():
        files += sorted(p for p in design.plan_dir.rglob("*.md"))
    if kind != PHASE1:
        files += [design.design, design.mechanics]
    return files


def output_files(design: DesignDir, kind: Kind) -> list[Path]:
    if kind == PHASE1:
        return [design.design, design.mechanics]
    return [design.final, design.final_mechanics]


Private = Callable[[Path], Sequence[Path]]
"""Where no role reads in a repository (its runs directories and designloop's recorded outputs),
as the session of a run found it (agents.session.SetUp.private_dirs)."""


class Fingerprints:
    """Fingerprints for one batch: each root is digested once. ``skip``: more of designloop's
    own outputs to leave out (the batch's ``--sarif`` file). ``private``: where no role reads in
    a repository, as the runs' set-up already found it (else found here, by a walk of the
    repository for runs directories)."""

    def __init__(self, runs_dir: Path, skip: Iterable[Path] = (), private: Private | None = None) -> None:
        self.runs_dir = runs_dir
        self.skip = tuple(skip)
        self.private = private
        self._code: dict[tuple[Path, bool], str] = {}
        self._workflow: dict[Path, str] = {}

    def _left_out(self, repo_root: Path) -> tuple[Path, ...]:
        if self.private is not None:
            return (self.runs_dir, *self.private(repo_root), *self.skip)
        stores = store_dirs(repo_root)  # every runs directory: no role reads one
        return (self.runs_dir, *byproducts(self.runs_dir, repo_root), *stores, *self.skip)

    def code(self, root: Path, repo_root: Path, wide: bool) -> str:
        """``wide``: walked as a model's tools walk it, else as the code index does."""
        if (root, wide) not in self._code:
            self._code[root, wide] = code_digest(root, self._left_out(repo_root), hidden_dirs=wide)
        return self._code[root, wide]

    def workflow(self, repo_root: Path) -> str:
        if repo_root not in self._workflow:
            self._workflow[repo_root] = _hash(
                (name, hashlib.sha256(data).hexdigest()) for name, data in workflow_definitions(repo_root)
            )
        return self._workflow[repo_root]

    def inputs(
        self,
        design: DesignDir,
        kind: Kind,
        models: dict[str, str],
        servers: dict[str, str],
        code: bool = True,
    ) -> str:
        """``models``: each role's model; ``servers``: each model's server (agents.session.servers).
        Without ``code``: everything but the code (``batch --stale-only`` lets the claims
        ledgers stand for the code)."""
        wide = any(spec != OFFLINE for spec in models.values())
        root = design.repo_root if wide else design.code_root
        parts: list[tuple[str, object]] = [
            ("kind", kind),
            ("designloop", version()),
            ("models", sorted(models.items())),
            ("servers", sorted(servers.items())),
            ("workflow", self.workflow(design.repo_root)),
        ]
        if code:
            parts.append(("code", self.code(root, design.repo_root, wide)))
        parts.append(("code_root", design.rel(design.code_root)))
        parts += _files(input_files(design, kind), design.root)
        return _hash(parts)


def outputs_digest(design: DesignDir, kind: Kind) -> str:
    return _hash(_files(output_files(design, kind), design.root))


def written_files(design: DesignDir, kind: Kind) -> list[Path]:
    """The documents a run of ``kind`` writes: a creation kind's outputs, or (an interactive
    edit) design.md and its companion."""
    if kind in CREATION_KINDS:
        return output_files(design, kind)
    return [design.design, design.mechanics]


def file_digests(design: DesignDir, paths: Iterable[Path]) -> dict[str, str | None]:
    """Each file's SHA-256 by its repository-relative path (None when it does not exist)."""
    out: dict[str, str | None] = {}
    for path in paths:
        try:
            out[design.rel(path)] = hashlib.sha256(confinement.read_bytes(path)).hexdigest()
        except FileNotFoundError:
            out[design.rel(path)] = None
    return out
