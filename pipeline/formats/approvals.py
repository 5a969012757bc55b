"""The approvals file, ``<design dir>/design-approvals.md`` (docs/formats.md §10).

It is committed with the design, so a clone on another machine (CI included) knows which
revision of each document was accepted, by whom and on what evidence, without the run store.
``designloop approve`` and ``designloop reject`` append to it; nothing rewrites a record. It is
not the review log: no counter of the review log counts an approval.

Each record is a heading and its fields::

    ## 2026-12-01T17:20:04Z — accepted — design r3

    - file: _workflow/design.md
    - sha256: <64 hex>
    - actor: alice@example.com
    - requested_by: cli
    - evidence: run 20261201-171303-p1-daf3cd (phase1-creation, PASS), review log Mutation 1

A rejection is ``rejected`` and adds ``- why: <text>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError
from pipeline.formats.revisions import FILES, Revision
from pipeline.formats.textio import atomic_write, read_text

NAME = "design-approvals.md"
PREAMBLE = (
    "# Approvals\n\n"
    "Accepted and rejected revisions of this design directory's documents, appended by\n"
    "`designloop approve` and `designloop reject`. Append-only: commit it with the design and\n"
    "never edit a record (docs/formats.md §10).\n"
)
HEAD_RE = re.compile(
    r"^## (?P<time>\d{4}-\d{2}-\d{2}T[0-9:.]+Z) (?:—|--) (?P<action>accepted|rejected) (?:—|--) "
    r"(?P<file>[a-z-]+) r(?P<number>\d+)$"
)
FIELD_RE = re.compile(r"^- (?P<key>[a-z0-9_]+): (?P<value>.*\S)$")
EVIDENCE_RE = re.compile(r"^run (?P<run>\S+)")
REQUIRED = ("file", "sha256", "actor", "requested_by", "evidence")
Action = str


@dataclass(frozen=True, slots=True)
class Approval:
    """One record: a revision accepted or rejected."""

    time: str
    action: Action
    file: str
    number: int
    sha256: str
    actor: str
    requested_by: str
    evidence: str
    why: str | None = None
    line: int = 0

    @property
    def run_id(self) -> str | None:
        match = EVIDENCE_RE.match(self.evidence)
        return match.group("run") if match else None

    def names(self, rev: Revision) -> bool:
        return (self.file, self.number, self.sha256) == (rev.file, rev.number, rev.sha256)

    def render(self) -> str:
        lines = [
            f"## {self.time} — {self.action} — {self.file} r{self.number}",
            "",
            f"- file: {FILES[self.file]}",
            f"- sha256: {self.sha256}",
            f"- actor: {self.actor}",
            f"- requested_by: {self.requested_by}",
            f"- evidence: {self.evidence}",
        ]
        if self.why is not None:
            lines.append(f"- why: {' '.join(self.why.split())}")
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, object]:
        return {
            "time": self.time,
            "action": self.action,
            "file": self.file,
            "number": self.number,
            "sha256": self.sha256,
            "actor": self.actor,
            "requested_by": self.requested_by,
            "evidence": self.evidence,
            "run_id": self.run_id,
            "why": self.why,
        }


def _bad(path: Path, line: int, what: str) -> InputError:
    return InputError(
        f"malformed approvals file: {what}",
        file=path,
        line=line,
        hint="the file is append-only and written by designloop approve/reject; restore it from "
        "version control (git checkout -- FILE), then run the command again (docs/formats.md §10)",
    )


def _record(path: Path, head: re.Match[str], line: int, fields: dict[str, str]) -> Approval:
    missing = [k for k in REQUIRED if k not in fields]
    if head.group("action") == "rejected" and "why" not in fields:
        missing.append("why")
    if missing:
        raise _bad(path, line, f"the record has no {', '.join(missing)}")
    file = head.group("file")
    if file not in FILES or fields["file"] != FILES[file]:
        raise _bad(path, line, f"{file!r} and {fields['file']!r} do not name one document")
    if not re.fullmatch(r"[0-9a-f]{64}", fields["sha256"]):
        raise _bad(path, line, "sha256 is not 64 lowercase hex digits")
    return Approval(
        time=head.group("time"),
        action=head.group("action"),
        file=file,
        number=int(head.group("number")),
        sha256=fields["sha256"],
        actor=fields["actor"],
        requested_by=fields["requested_by"],
        evidence=fields["evidence"],
        why=fields.get("why"),
        line=line,
    )


def parse_approvals(path: Path) -> list[Approval]:
    """Every record, in the order appended; a file that is not there holds none."""
    if not path.exists() and not path.is_symlink():
        return []
    lines = read_text(path, what="approvals file").lines
    records: list[Approval] = []
    head: tuple[re.Match[str], int] | None = None
    fields: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        if line.startswith("## "):
            if head is not None:
                records.append(_record(path, head[0], head[1], fields))
            match = HEAD_RE.match(line.rstrip())
            if match is None:
                raise _bad(
                    path, number, f'"{line.strip()}" is not "## <time> — accepted|rejected — <file> rN"'
                )
            head, fields = (match, number), {}
        elif head is not None and line.strip():
            field = FIELD_RE.match(line.rstrip())
            if field is None:
                raise _bad(path, number, f'"{line.strip()}" is not a "- key: value" field')
            if field.group("key") in fields:  # two values: neither may be taken for the record's
                raise _bad(path, number, f'the field "{field.group("key")}" is given twice in one record')
            fields[field.group("key")] = field.group("value")
    if head is not None:
        records.append(_record(path, head[0], head[1], fields))
    return records


def append_approvals(path: Path, records: list[Approval]) -> None:
    """Append ``records`` in one atomic write; the file is read (and must parse) first."""
    old = read_text(path, what="approvals file") if path.exists() or path.is_symlink() else None
    parse_approvals(path)
    text = old.text if old is not None else PREAMBLE
    if not text.endswith("\n"):
        text += "\n"
    text += "".join("\n" + r.render() for r in records)
    atomic_write(path, text, newline=old.newline if old else "\n", bom=old.bom if old else False)


def accepted(records: list[Approval], file: str) -> Approval | None:
    """The document's accepted revision: the latest acceptance of it."""
    return next((r for r in reversed(records) if r.file == file and r.action == "accepted"), None)


def state_of(records: list[Approval], rev: Revision, current: int) -> str:
    """candidate, accepted, superseded or rejected (docs/lifecycle.md). ``current``: the number
    of the document's latest revision."""
    if (acc := accepted(records, rev.file)) is not None and acc.names(rev):
        return "accepted"
    if any(r.action == "rejected" and r.names(rev) for r in records):
        return "rejected"
    if any(r.action == "accepted" and r.names(rev) for r in records) or rev.number < current:
        return "superseded"
    return "candidate"
