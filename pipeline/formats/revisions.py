"""Revisions of a design directory's documents (docs/lifecycle.md, docs/formats.md §7 and §10).

A revision is what one run left in one document: its bytes' SHA-256, a number that increases
per directory and file, the run, its kind and outcome, who asked for it and who that was, when,
the workflow it ran under and what it read. The review-log entry of the run carries one
``designloop-revision`` marker per revision (so a clone without the run store knows them); the
run store keeps the bytes as well (``designloop show``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from urllib.parse import quote, unquote

from pipeline.errors import InputError
from pipeline.formats.contracts import declined_words

FILES: dict[str, str] = {
    "design": "_workflow/design.md",
    "mechanics": "_workflow/design-mechanics.md",
    "final": "design-final.md",
    "final-mechanics": "design-mechanics-final.md",
}
"""Each document a revision can be of, by its name on the command line, with its path in the
design directory."""
COMPANION = {"design": "mechanics", "final": "final-mechanics"}
REQUESTERS = ("cli", "batch", "worker", "studio")
MARKER_RE = re.compile(r"^<!-- designloop-revision: (?P<file>[a-z-]+) (?P<fields>.*?) ?-->$")
MARKER_START = "<!-- designloop-revision:"
INPUT_NAMES = {
    "research-log": "the research log",
    "plan": "the plan and track files (episodes)",
    "settings": "the directory's designloop.toml",
    "frozen-design": "the frozen design.md and its companion",
    "code": "the code",
}
"""What a revision's run read, digested part by part (``inputs``), and how each is named."""


def file_of(path: str) -> str | None:
    """The document a design-directory-relative path is, or None."""
    return next((name for name, rel in FILES.items() if rel == path), None)


def basename(file: str) -> str:
    return FILES[file].rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class Finalised:
    """The design.md a phase-4 run finalised: its bytes, and its revision when it was one."""

    sha256: str
    number: int | None
    note: str = ""
    """Why no revision is named: none recorded, or the file changed since one."""

    def describe(self) -> str:
        which = f"design.md r{self.number}" if self.number is not None else "design.md"
        extra = f"; {self.note}" if self.note else ""
        return f"{which} (sha256 {self.sha256[:12]}…{extra})"

    def encode(self) -> str:
        return f"{self.number if self.number is not None else '-'}:{self.sha256}"

    @staticmethod
    def decode(value: str) -> Finalised:
        number, _, sha = value.partition(":")
        return Finalised(sha, int(number) if number.isdigit() else None)


@dataclass(frozen=True, slots=True)
class Revision:
    """One revision of one document of a design directory (the directory is the context)."""

    file: str
    number: int
    sha256: str
    run_id: str
    kind: str
    outcome: str
    requested_by: str = "cli"
    actor: str = ""
    time: str = ""
    workflow: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    finalised: Finalised | None = None
    entry: int | None = None
    """The review-log entry that names it (known when it was read from the log)."""
    declined: int = 0
    """How many parts of the user's instruction the run's inline editor declined: a flag on the
    outcome, named wherever the outcome is (the review log's marker carries it)."""

    @property
    def path(self) -> str:
        return FILES[self.file]

    def family(self, directory: str) -> str:
        """Stable per design directory and document: every revision of the document shares it."""
        return f"{directory}:{self.file}"

    def label(self) -> str:
        return f"{basename(self.file)} r{self.number}"

    def line(self) -> str:
        """How the review log and the commands name it."""
        return f"{self.label()} (sha256 {self.sha256[:12]}…)"

    def outcome_words(self) -> str:
        """Its run's outcome as every line names it: ``PASS, 1 part of the instruction declined``."""
        return f"{self.outcome}, {declined_words(self.declined)}" if self.declined else self.outcome

    def marker(self) -> str:
        """The review-log marker: every field, each value percent-encoded."""
        fields = {
            "r": str(self.number),
            "sha256": self.sha256,
            "outcome": self.outcome,
            "requested_by": self.requested_by,
            "actor": self.actor,
            "at": self.time,
        }
        if self.workflow:
            fields["workflow"] = self.workflow
        if self.inputs:
            fields["inputs"] = ",".join(f"{k}:{v}" for k, v in sorted(self.inputs.items()))
        if self.finalised is not None:
            fields["finalised"] = self.finalised.encode()
        if self.declined:
            fields["declined"] = str(self.declined)
        text = " ".join(f"{k}={quote(v, safe='@:,.+_')}" for k, v in fields.items())
        return f"{MARKER_START} {self.file} {text} -->"

    def to_json(self, directory: str) -> dict[str, object]:
        return {
            "file": self.file,
            "path": self.path,
            "family": self.family(directory),
            "number": self.number,
            "sha256": self.sha256,
            "run_id": self.run_id,
            "kind": self.kind,
            "outcome": self.outcome,
            "requested_by": self.requested_by,
            "actor": self.actor,
            "time": self.time,
            "workflow": self.workflow,
            "inputs": dict(self.inputs),
            "finalised": (
                {"number": self.finalised.number, "sha256": self.finalised.sha256}
                if self.finalised is not None
                else None
            ),
            "review_log_entry": self.entry,
            "declined": self.declined,
        }


def _malformed(what: str, line: int | None, path: object) -> InputError:
    return InputError(
        f"malformed revision marker: {what}",
        file=str(path) if path is not None else None,
        line=line,
        hint="designloop writes these markers; restore the line from version control (docs/formats.md §7)",
    )


def parse_marker(
    text: str,
    run_id: str | None,
    kind: str,
    *,
    path: object = None,
    line: int | None = None,
    entry: int | None = None,
    date: str = "",
) -> Revision:
    """A revision from its review-log marker (``run_id``, ``kind``, ``entry``: the entry's)."""
    match = MARKER_RE.match(text.strip())
    if match is None or match.group("file") not in FILES:
        raise _malformed("it does not name a document", line, path)
    fields: dict[str, str] = {}
    for part in match.group("fields").split():
        key, sep, value = part.partition("=")
        if not sep:
            raise _malformed(f"{part!r} is not key=value", line, path)
        fields[key] = unquote(value)
    number, sha = fields.get("r", ""), fields.get("sha256", "")
    if not number.isdigit() or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise _malformed("it needs r=<number> and sha256=<64 hex>", line, path)
    declined = fields.get("declined", "0")
    if not declined.isdigit():
        raise _malformed(f"declined={declined!r} is not a number", line, path)
    inputs = dict(p.split(":", 1) for p in fields.get("inputs", "").split(",") if ":" in p)
    finalised = Finalised.decode(fields["finalised"]) if "finalised" in fields else None
    return Revision(
        file=match.group("file"),
        number=int(number),
        sha256=sha,
        run_id=run_id or "",
        kind=kind,
        outcome=fields.get("outcome", "?"),
        requested_by=fields.get("requested_by", "cli"),
        actor=fields.get("actor", ""),
        time=fields.get("at", date),
        workflow=fields.get("workflow"),
        inputs=inputs,
        finalised=finalised,
        entry=entry,
        declined=int(declined),
    )


def merge(*sources: list[Revision]) -> list[Revision]:
    """One list, by document and number, from several sources (the run store, the review log):
    the first source's fields win; the review-log entry number and the declined parts, which
    only the review log records, are kept from whichever knows them."""
    found: dict[tuple[str, int], Revision] = {}
    for source in sources:
        for rev in source:
            key = (rev.file, rev.number)
            if key not in found:
                found[key] = rev
                continue
            known = found[key]
            if known.entry is None and rev.entry is not None:
                known = replace(known, entry=rev.entry)
            if not known.declined and rev.declined:
                known = replace(known, declined=rev.declined)
            found[key] = known
    return sorted(found.values(), key=lambda r: (r.file, r.number))
