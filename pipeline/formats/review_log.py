"""The append-only review log, design-mutations.md (docs/formats.md §7).

Appends happen under a file lock, read the log afresh to number the entry, and replace
the file atomically, so two processes appending at once get two well-formed entries with
distinct numbers. An entry may carry a run marker; appending the same run twice returns
the number it already has, which makes a resumed run's append happen exactly once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock, Timeout

from pipeline.errors import InputError
from pipeline.formats.kinds import DESIGN_SYNC, MECHANICS_EDIT, MUTATION_KINDS, PHASE1
from pipeline.formats.review_chain import chain_line, last_chain
from pipeline.formats.revisions import MARKER_START, Revision, parse_marker
from pipeline.formats.textio import atomic_write, read_text

ENTRY_RE = re.compile(
    r"^## Mutation (?P<num>\d+)\s*(?:—|--|-)\s*(?P<date>\d{4}-\d{2}-\d{2})\s*(?:—|--|-)\s*"
    r"(?P<kind>[a-z0-9-]+)(?:\s*\((?P<file>[^)]*)\))?\s*$"
)
RUN_MARKER_RE = re.compile(r"^<!-- designloop-run: (?P<run>[A-Za-z0-9._:-]+) -->$")
WROTE_RE = re.compile(r"^<!-- designloop-wrote: (?P<files>(?:[^\s=]+=[0-9a-f]{64}\s*)+)-->$")
"""What the run left in the documents it writes: ``path=sha256`` (relative to the design
directory), so a later creation tells the run's own bytes from a hand edit, in any clone."""
SYNC_RESETS = frozenset({DESIGN_SYNC, PHASE1})
MARKER_SPAN = 16
"""How far after its heading an entry's markers may go (run, wrote, one per revision)."""


@dataclass(frozen=True, slots=True)
class LogEntry:
    number: int
    date: str
    kind: str
    file: str | None
    line: int
    run_id: str | None
    wrote: dict[str, str] = field(default_factory=dict)
    revisions: tuple[Revision, ...] = ()
    """The revisions the run recorded (its ``designloop-revision`` markers)."""


@dataclass(slots=True)
class MutationEntry:
    """One entry to append, rendered per docs/formats.md §7."""

    kind: str
    target_file: str
    diff_summary: str
    mechanical_target: str
    mechanical: str
    cold_read_scope: str
    cold_read: str
    findings: list[str] = field(default_factory=list)
    iteration: int = 1
    budget: int = 3
    outcome: str = "PASS"
    working_mode_counter: int | None = None
    extra: list[str] = field(default_factory=list)
    date: dt.date | None = None
    one_line: str | None = None
    """A one-line entry (a zero-delta design-sync): this line stands for the whole body."""
    wrote: dict[str, str] = field(default_factory=dict)
    """The SHA-256 of each document the run leaves, by its path in the design directory."""
    revisions: list[Revision] = field(default_factory=list)
    """The revisions the run recorded: a marker each, and one line naming them."""
    finalised: str | None = None
    """Phase 4: the design.md revision the run finalised, in words."""

    def render(self, number: int, run_id: str | None) -> str:
        date = (self.date or dt.date.today()).isoformat()
        parts = [f"## Mutation {number} — {date} — {self.kind} ({self.target_file})", ""]
        if run_id:
            parts += [f"<!-- designloop-run: {run_id} -->", ""]
        if self.wrote:
            files = " ".join(f"{name}={digest}" for name, digest in sorted(self.wrote.items()))
            parts += [f"<!-- designloop-wrote: {files} -->", ""]
        if self.revisions:
            parts += [r.marker() for r in self.revisions] + [""]
        if self.one_line is not None:
            parts.append(self.one_line)
            if self.working_mode_counter is not None:
                parts.append(
                    f"**Working-mode counter**: {self.working_mode_counter} mechanics-edits since last sync"
                )
            return "\n".join(parts) + "\n"
        parts += [f"**Diff summary**: {self.diff_summary}", ""]
        parts.append(f"**Mechanical checks** (target={self.mechanical_target}): {self.mechanical}")
        parts.append(f"**Cold-read** (scope: {self.cold_read_scope}): {self.cold_read}")
        parts += ["", "**Findings**:"]
        parts += [f"- {item}" for item in self.findings] or ["- none"]
        parts += ["", f"**Iterations**: {self.iteration} of {self.budget} ({self.outcome})"]
        if self.revisions:
            parts += ["", "**Revision**: " + "; ".join(r.line() for r in self.revisions)]
        if self.finalised:
            parts += [f"**Finalised**: {self.finalised}"]
        if self.working_mode_counter is not None:
            parts += [
                "",
                f"**Working-mode counter**: {self.working_mode_counter} mechanics-edits since last sync",
            ]
        parts += [*(["", *self.extra] if self.extra else [])]
        return "\n".join(parts) + "\n"


def parse_entries(path: Path) -> list[LogEntry]:
    if not path.exists():
        return []
    source = read_text(path, what="review log")
    lines = source.lines
    entries: list[LogEntry] = []
    fenced = False
    for index, line in enumerate(lines):
        if line.startswith("```") or line.startswith("~~~"):
            fenced = not fenced
        if fenced or not line.startswith("## Mutation"):
            continue
        match = ENTRY_RE.match(line.strip())
        if not match:
            raise InputError(
                f'malformed review-log heading "{line.strip()}"',
                file=path,
                line=index + 1,
                hint='entries start "## Mutation N — YYYY-MM-DD — <kind> (<file>)"; fix the heading by hand',
            )
        entries.append(_entry(path, lines, index, match))
    return entries


def _entry(path: Path, lines: list[str], index: int, match: re.Match[str]) -> LogEntry:
    """An entry from its heading and the markers that follow it (before its first bold line)."""
    run_id, wrote = None, {}
    marks: list[tuple[int, str]] = []
    for offset, follow in enumerate(lines[index + 1 : index + 1 + MARKER_SPAN], start=index + 2):
        text = follow.strip()
        if follow.startswith("## ") or text.startswith("**"):
            break
        marker, files = RUN_MARKER_RE.match(text), WROTE_RE.match(text)
        if marker and run_id is None:
            run_id = marker.group("run")
        if files:
            wrote = dict(pair.split("=", 1) for pair in files.group("files").split())
        if text.startswith(MARKER_START):
            marks.append((offset, text))
    number, kind = int(match.group("num")), match.group("kind")
    revisions = tuple(
        parse_marker(text, run_id, kind, path=path, line=at, entry=number, date=match.group("date"))
        for at, text in marks
    )
    return LogEntry(
        number, match.group("date"), kind, match.group("file"), index + 1, run_id, wrote, revisions
    )


def log_revisions(entries: list[LogEntry]) -> list[Revision]:
    """Every revision the review log names, in the order of its entries."""
    return [rev for entry in entries for rev in entry.revisions]


DECLINED_TAIL = " (the inline editor did not carry it out)"
"""What follows each ``- declined: PART`` line of an entry's Findings list."""


def entry_findings(path: Path, number: int, kinds: tuple[str, ...] = ("blocker", "should-fix")) -> list[str]:
    """The lines of entry ``number``'s **Findings** list of ``kinds`` (by default its blocker and
    should-fix lines; ``("declined",)``: the parts of the instruction its run declined)."""
    if not path.is_file():
        return []
    out: list[str] = []
    inside = False
    starts = tuple(f"- {kind}:" for kind in kinds)
    for line in read_text(path, what="review log").lines:
        head = ENTRY_RE.match(line.strip()) if line.startswith("## Mutation") else None
        if head is not None:
            inside = int(head.group("num")) == number
        elif inside and line.startswith(starts):
            out.append(line[2:])
    return out


def next_number(entries: list[LogEntry]) -> int:
    return max((e.number for e in entries), default=0) + 1


def periodic_count(entries: list[LogEntry]) -> int:
    """Entries counted by the periodic whole-doc counter (all but mechanics-edit)."""
    return sum(1 for e in entries if e.kind != MECHANICS_EDIT)


def periodic_whole_doc_due(entries: list[LogEntry], kind: str, every: int = 5) -> bool:
    """True when the mutation about to run is the Nth, 2Nth, ... counted entry."""
    if kind == MECHANICS_EDIT:
        return False
    return (periodic_count(entries) + 1) % every == 0


def working_mode_count(entries: list[LogEntry]) -> int:
    """mechanics-edit entries since the latest design-sync (or phase1-creation)."""
    count = 0
    for entry in entries:
        if entry.kind in SYNC_RESETS:
            count = 0
        elif entry.kind == MECHANICS_EDIT:
            count += 1
    return count


def sync_suggested(entries: list[LogEntry], at: int = 5) -> bool:
    return working_mode_count(entries) >= at


def last_sync(entries: list[LogEntry]) -> LogEntry | None:
    """The latest design-sync (or phase1-creation) entry: where the working-mode counter restarts."""
    return next((e for e in reversed(entries) if e.kind in SYNC_RESETS), None)


@dataclass(frozen=True, slots=True)
class AppendResult:
    number: int
    appended: bool
    text: str
    """The entry as it stands in the log (appended now, or by an earlier try of the same run)."""


def entry_text(path: Path, entries: list[LogEntry], entry: LogEntry) -> str:
    """The block of ``entry``: from its heading to the next entry's (or the end of the log)."""
    lines = read_text(path, what="review log").lines
    later = [e.line for e in entries if e.line > entry.line]
    block = lines[entry.line - 1 : min(later) - 1 if later else len(lines)]
    return "\n".join(block).rstrip() + "\n"


def lock_path(path: Path, lock_dir: Path) -> Path:
    """The append lock of the review log at ``path``: a file in ``lock_dir`` (the runs
    directory's ``locks/``), named by the log's real path, never a file beside the log."""
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:20]
    return lock_dir / f"review-log-{key}.lock"


def append_entry(
    path: Path, entry: MutationEntry, run_id: str | None = None, timeout: float = 60.0, *, lock_dir: Path
) -> AppendResult:
    """Append ``entry`` exactly once (per ``run_id`` when given), atomically, under a lock
    kept in ``lock_dir``."""
    if entry.kind not in MUTATION_KINDS:
        raise InputError(f"unknown mutation kind {entry.kind!r}", hint=f"one of {sorted(MUTATION_KINDS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    held = lock_path(path, lock_dir)
    held.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(held), timeout=timeout)
    try:
        with lock:
            entries = parse_entries(path)
            if run_id is not None:
                for existing in entries:
                    if existing.run_id == run_id:
                        return AppendResult(existing.number, False, entry_text(path, entries, existing))
            number = next_number(entries)
            if entry.kind in (MECHANICS_EDIT, DESIGN_SYNC) and entry.working_mode_counter is None:
                entry.working_mode_counter = (
                    0 if entry.kind == DESIGN_SYNC else working_mode_count(entries) + 1
                )
            block = entry.render(number, run_id)
            old = read_text(path, what="review log") if path.exists() else None
            text = old.text if old else ""
            # Tamper evidence without the run store (formats.review_chain): linked to the last entry.
            block = block.rstrip("\n") + "\n\n" + chain_line(last_chain(text), block) + "\n"
            if text and not text.endswith("\n"):
                text += "\n"
            if text:
                text += "\n"
            atomic_write(
                path, text + block, newline=old.newline if old else "\n", bom=old.bom if old else False
            )
            return AppendResult(number, True, block)
    except Timeout:
        raise InputError(
            "timed out waiting for the review-log lock",
            file=path,
            hint=f"another designloop process holds {held}; wait for it or remove a stale lock",
        ) from None
