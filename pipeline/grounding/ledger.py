"""The claims ledger beside each design file (docs/formats.md §11).

``design.md`` has ``design.claims.json`` beside it, ``design-final.md`` has
``design-final.claims.json``, and so on. One entry per code claim: the design line and the
exact quote that makes it, what it names, the code span it resolved to and a fingerprint of
that span. The file is written deterministically (no time, no absolute path; entries in
document order), so it is committed with the design and its diff shows what moved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from pipeline import confinement
from pipeline.bounded import Unbounded, load_json
from pipeline.errors import InputError
from pipeline.formats.spawn_params import ClaimRef
from pipeline.formats.textio import atomic_write, read_text
from pipeline.grounding.mentions import MentionKind

LEDGER_FORMAT = 2
SUFFIX = ".claims.json"
DESIGN_FILES = ("design.md", "design-mechanics.md")
"""The design files under ``_workflow/``."""
FINAL_FILES = ("design-final.md", "design-mechanics-final.md")
"""The phase-4 design files at the top of a design directory."""
LEDGER_NAMES = frozenset(Path(n).stem + SUFFIX for n in (*DESIGN_FILES, *FINAL_FILES))
DESIGN_DOCS = frozenset({"_workflow", *FINAL_FILES})
"""The documents designloop writes in every design directory (never anyone's code)."""
Method = Literal["tree-sitter", "text", "path", "config"]


def _recorded(name: str) -> str:
    problem = confinement.recorded_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


RecordedPath = Annotated[str, Field(min_length=1), AfterValidator(_recorded)]
"""A path relative to the repository root that does not climb out of it (pipeline.confinement)."""


class ClaimEntry(BaseModel):
    """One code claim: where the design makes it and the code it rests on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    line: int = Field(ge=1)
    """The design file's line that makes the claim (1-based, the stamp counted)."""
    quote: str = Field(min_length=1)
    """The claim's sentence as that line holds it, exactly."""
    mention: str = Field(min_length=1)
    """The name, path or location as the design writes it."""
    kind: MentionKind
    symbol: str | None = None
    """The qualified symbol it resolved to (a location claim: the name found on the cited lines)."""
    file: RecordedPath
    """The code file (or directory, for a path claim), relative to the repository root."""
    first: int = Field(ge=0)
    last: int = Field(ge=0)
    """The span's first and last line (0 and 0 for a directory)."""
    method: Method
    """How the fingerprint was taken: tree-sitter tokens, normalised text, or the path alone."""
    fingerprint: str = Field(min_length=1)
    literals: list[str] = []
    """The values its sentence quotes that the span holds (numbers normalised)."""
    candidates: int = Field(default=1, ge=1)
    """How many definitions the name had (more than one: ambiguous, and this is one of them)."""

    def ref(self) -> ClaimRef:
        """The claim as a reviewer is handed it (formats.spawn_params)."""
        return ClaimRef.model_validate(self.model_dump(include=set(ClaimRef.model_fields)))


class Ledger(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: int = LEDGER_FORMAT
    design: str = Field(min_length=1)
    """The design file's name (the ledger sits beside it)."""
    code_root: RecordedPath
    """The code root the claims resolved under, relative to the repository root."""
    claims: list[ClaimEntry] = []

    def text(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def ledger_path(design_file: Path) -> Path:
    """Where the ledger of ``design_file`` lives: beside it, ``<stem>.claims.json``."""
    return design_file.with_name(design_file.stem + SUFFIX)


def _damaged(path: Path, what: str, line: int | None = None) -> InputError:
    return InputError(
        f"the claims ledger is damaged: {what}",
        file=path,
        line=line,
        hint="restore it from version control, or write it afresh from the design and the code: "
        "designloop claims DIR --accept-current",
    )


def load_ledger(path: Path, root: Path | None = None) -> Ledger:
    """Read a ledger, or raise an InputError naming the file (and the line) when it does not
    parse. Every path it records is confined to ``root`` (by default the repository the ledger
    lies in): one that is absolute, climbs out with ``..`` or resolves (through any link)
    outside makes the ledger damaged, and nothing it names is read."""
    raw = read_text(path, what="claims ledger")
    hint = _damaged(path, "").hint or ""
    try:
        data = load_json(raw.text, file=path, what="claims ledger", hint=hint)
    except Unbounded as exc:
        raise _damaged(path, exc.problem.removeprefix("is "), exc.line) from None
    try:
        ledger = Ledger.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the top level"
        message = str(first.get("ctx", {}).get("error", first["msg"]))
        raise _damaged(path, f"{where}: {message}", _line_of(raw.text, first.get("input"))) from None
    if ledger.format != LEDGER_FORMAT:
        raise _damaged(
            path,
            f"format {ledger.format}, written by another designloop (this one reads format "
            f"{LEDGER_FORMAT}): its fingerprints cannot be compared",
        )
    base = root if root is not None else confinement.repository_of(path)
    if base is not None:
        named = [(ledger.code_root, "code_root"), *((c.file, "a claim's file") for c in ledger.claims)]
        for name, what in named:
            try:
                confinement.recorded(base, name, what=what)
            except confinement.OutsideRepository as exc:
                raise _damaged(path, exc.message, _line_of(raw.text, name)) from None
    return ledger


def _line_of(text: str, value: object) -> int | None:
    """The line of the first place ``text`` holds the JSON string ``value`` (None: not a string)."""
    if not isinstance(value, str):
        return None
    at = text.find(json.dumps(value, ensure_ascii=False))
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def write_ledger(path: Path, ledger: Ledger) -> bool:
    """Write the ledger when its bytes change; True when it was written."""
    text = ledger.text()
    try:
        if path.is_file() and confinement.read_bytes(path) == text.encode("utf-8"):
            return False
    except OSError:
        pass
    atomic_write(path, text)
    return True


def design_files(root: Path) -> list[Path]:
    """The design files of a design directory that exist (phase 1's, then phase 4's)."""
    found = [root / "_workflow" / n for n in DESIGN_FILES] + [root / n for n in FINAL_FILES]
    return [p for p in found if p.is_file()]


def claim_directories(patterns: list[str], base: Path) -> list[Path]:
    """Design directories named by paths or globs (relative to ``base`` unless absolute): each
    match holding ``_workflow/`` or a phase-4 design file, in a stable order, each once. A
    pattern that names none is an input error."""
    import glob

    found: list[Path] = []
    for pattern in patterns:
        rooted = pattern if Path(pattern).is_absolute() else str(base / pattern)
        matches = sorted(Path(m) for m in glob.glob(rooted, recursive=True))
        dirs = [
            m.resolve()
            for m in matches
            if m.is_dir() and ((m / "_workflow").is_dir() or any((m / n).is_file() for n in FINAL_FILES))
        ]
        if not dirs:
            raise InputError(
                f"{pattern!r} names no design directory",
                hint="pass directories holding _workflow/ or design-final.md, or a glob such as 'docs/adr/*'",
            )
        found += [d for d in dirs if d not in found]
    return found
