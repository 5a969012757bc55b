"""The lifecycle's transitions (docs/lifecycle.md): approve and reject a document's current
revision, approve what a run just left (``--approve-if-ready``), and refuse an edit of a design
frozen by phase 4.

A transition is checked whole before it writes anything: a refused one raises
TransitionRefused (exit 6) with a stable name and changes nothing (no file, no store row, no
review-log entry). An accepted or rejected revision is recorded in the directory's committed
approvals file (formats.approvals) in one atomic append. One transition at a time: approve and
reject hold the directory's run lock, so a run and a transition, or two transitions, never
interleave.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipeline.errors import DesignloopError, ExitCode, InputError, TransitionRefused
from pipeline.formats.approvals import NAME, Approval, append_approvals, parse_approvals
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.kinds import CREATION_KINDS
from pipeline.formats.research_log import load_research_log
from pipeline.formats.review_chain import tampered
from pipeline.formats.review_log import DECLINED_TAIL, entry_findings, parse_entries
from pipeline.formats.revisions import FILES, REQUESTERS, Revision, basename
from pipeline.formats.textio import check_write_target
from pipeline.runs.lifecycle_read import Directory, open_findings, revision_stores, stage_files
from pipeline.runs.lock import LockLost, RunLock, RunLocked, holder_for
from pipeline.runs.revisions import RevisionStore, actor

if TYPE_CHECKING:
    from pipeline.runs.store import RunStore

MALFORMED = "malformed-transition"
ACTIVE = "active-run"
NO_REVISION = "no-current-revision"
CHANGED = "changed-since-revision"
FIX_OPEN = "required-fix-open"
GATE_OPEN = "gate-open"
REJECTED = "revision-rejected"
ALREADY = "already-accepted"
NOT_CANDIDATE = "not-a-candidate"
FROZEN = "design-frozen"
TAMPERED = "review-log-tampered"
DECLINED = "instruction-declined"
PASS = "PASS"


@dataclass(frozen=True, slots=True)
class Request:
    """One transition asked for: ``approve`` or ``reject``, of which documents, why, by whom."""

    action: str
    files: tuple[str, ...] = ()
    """Empty: the stage's documents (docs/lifecycle.md, "Which documents")."""
    why: str | None = None
    requested_by: str = "cli"


def malformed(message: str, hint: str) -> TransitionRefused:
    return TransitionRefused(MALFORMED, message, hint=hint)


def request(action: str, file: str | None, why: str | None, requested_by: str = "cli") -> Request:
    """A transition request, checked: one action, a known document, a reason for a rejection."""
    if action not in ("approve", "reject"):
        raise malformed(f"{action!r} is not a transition", "ask approve or reject")
    if file is not None and file not in FILES:
        raise malformed(f"--file {file!r} is not a document", f"--file one of {', '.join(FILES)}")
    if requested_by not in REQUESTERS:
        raise malformed(f"requested_by {requested_by!r} is unknown", f"one of {', '.join(REQUESTERS)}")
    if action == "approve" and why is not None:
        raise malformed(
            "both approve and reject asked: --why is the reason for a rejection",
            "approve takes no --why; to reject, run designloop reject DIR --why TEXT",
        )
    if action == "reject" and not (why or "").strip():
        raise malformed("a rejection needs its reason", "pass --why TEXT (it is recorded with the rejection)")
    return Request(action, (file,) if file else (), why.strip() if why else None, requested_by)


def _refuse(name: str, message: str, design: DesignDir, hint: str) -> TransitionRefused:
    return TransitionRefused(name, message, file=design.root, hint=hint)


def check_current(d: Directory, file: str) -> Revision:
    """The document's current revision, when it exists and is what is on disk."""
    design, name = d.design, basename(file)
    rev = d.current(file)
    if rev is None:
        what = "exists but " if d.on_disk(file) else "does not exist and "
        raise _refuse(
            NO_REVISION,
            f"{name} {what}has no revision: no run of this designloop has written it",
            design,
            "run designloop create (or final, or edit) to write a revision, then approve it",
        )
    if d.on_disk(file) != rev.sha256:
        raise _refuse(
            CHANGED,
            f"{name} is not {rev.label()} any more (sha256 {rev.sha256[:12]}…): it was changed "
            "since the revision was recorded (a hand edit, or a run that did not finish)",
            design,
            f"designloop show {design.rel(design.root)} --revision {rev.number} --file {file} prints "
            f"{rev.label()}; review the change through designloop edit, or restore the revision",
        )
    return rev


def check_approvable(d: Directory, file: str) -> Revision:
    """Every condition of an approval, in order (docs/lifecycle.md): a current revision, the
    bytes on disk are it, its run ended PASS, the research log's gate is resolved; and it is
    neither rejected nor accepted already."""
    rev = check_current(d, file)
    design = d.design
    if found := tampered(design.mutations, design.repo_root):
        raise _refuse(
            TAMPERED,
            "the review log is not as designloop wrote it, so no revision it names can be trusted: "
            + "; ".join(found[:3]),
            design,
            "restore design-mutations.md from version control (git checkout -- FILE); a document "
            "edited by hand goes through designloop edit, or a new run",
        )
    if rev.outcome != PASS:
        found = open_findings(design, rev)
        listed = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
        raise _refuse(
            FIX_OPEN,
            f"{rev.label()}'s run {rev.run_id} ended {rev.outcome}, not PASS"
            + (f": {listed}" if listed else ""),
            design,
            "fix what is open (designloop edit), or run again; only a PASS revision can be accepted",
        )
    gate = load_research_log(design.research_log).gate()
    if gate.state != "resolved":
        raise _refuse(
            GATE_OPEN,
            gate.message(),
            design,
            "resolve the research log's adversarial gate (designloop gate DIR shows it), then approve",
        )
    if (rejection := d.rejected(rev)) is not None:
        raise _refuse(
            REJECTED,
            f"{rev.label()} was rejected on {rejection.time} by {rejection.actor}: {rejection.why}",
            design,
            "a rejected revision is never accepted; run again to make a new revision",
        )
    if (acc := d.accepted(file)) is not None and acc.names(rev):
        raise _refuse(
            ALREADY,
            f"{rev.label()} is accepted already (on {acc.time} by {acc.actor})",
            design,
            "nothing to do; designloop status DIR shows it",
        )
    return rev


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def record_for(rev: Revision, action: str, who: str, requested_by: str, why: str | None = None) -> Approval:
    evidence = f"run {rev.run_id} ({rev.kind}, {rev.outcome_words()})"
    if rev.entry is not None:
        evidence += f", review log Mutation {rev.entry}"
    return Approval(_now(), action, rev.file, rev.number, rev.sha256, who, requested_by, evidence, why)


@dataclass(slots=True)
class Done:
    """A transition made: the records appended, and the accepted revisions each one replaced."""

    action: str
    directory: str
    records: list[Approval]
    superseded: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "action": self.action,
            "directory": self.directory,
            "records": [r.to_json() for r in self.records],
            "superseded": self.superseded,
            "approvals_file": f"{self.directory}/{NAME}",
        }


def _targets(d: Directory, req: Request) -> list[str]:
    """The documents a request is about: those named, else the stage's documents that still
    need the transition (a plain approve leaves an accepted companion as it is)."""
    if req.files:
        return list(req.files)
    files = stage_files(d.design)
    pending = [
        f
        for f in files
        if (rev := d.current(f)) is None or (acc := d.accepted(f)) is None or not acc.names(rev)
    ]
    return pending or files


def decide(d: Directory, req: Request) -> Done:
    """The records ``req`` appends, checked against the directory as it is; raises when refused."""
    from pipeline.runs.records import portable

    design = d.design
    directory = portable(design.root, design.repo_root)
    files = _targets(d, req)
    who = actor(design.repo_root)
    done = Done(req.action, directory, [])
    for file in files:
        if req.action == "approve":
            rev = check_approvable(d, file)
            if (acc := d.accepted(file)) is not None:
                done.superseded[file] = acc.number
        else:
            rev = _rejectable(d, file)
        done.records.append(
            record_for(
                rev, "accepted" if req.action == "approve" else "rejected", who, req.requested_by, req.why
            )
        )
    return done


def _rejectable(d: Directory, file: str) -> Revision:
    rev = d.current(file)
    if rev is None:
        raise _refuse(
            NO_REVISION,
            f"{basename(file)} has no revision to reject",
            d.design,
            "designloop status DIR lists the revisions",
        )
    if (acc := d.accepted(file)) is not None and acc.names(rev):
        raise _refuse(
            NOT_CANDIDATE,
            f"{rev.label()} is the accepted revision; reject turns down a candidate, never the accepted one",
            d.design,
            "run again (or edit) to make a new candidate, then accept or reject that",
        )
    if d.rejected(rev) is not None:
        raise _refuse(
            NOT_CANDIDATE, f"{rev.label()} is rejected already", d.design, "designloop status DIR shows it"
        )
    return rev


def transition(design: DesignDir, stores: Sequence[RevisionStore], req: Request, lock: RunLock) -> Done:
    """Approve or reject under the directory's lock (refused while any run or transition holds it)."""
    holder = holder_for(f"{req.action}-{dt.datetime.now(dt.UTC).strftime('%Y%m%d-%H%M%S')}")
    try:
        lock.acquire(holder, False, None)
    except RunLocked as exc:
        raise _refuse(ACTIVE, exc.message, design, "wait for it to finish, then ask again") from None
    try:
        done = decide(Directory.read(design, stores), req)
        append_approvals(design.root / NAME, done.records)
        return done
    finally:
        lock.release()


def approve_run(
    design: DesignDir, stores: Sequence[RevisionStore], run_id: str, lock: RunLock | None, requested_by: str
) -> Done:
    """``--approve-if-ready``: accept the revisions run ``run_id`` just recorded, in the same
    invocation and under the lock the run held, only when every condition holds, checked in
    order (docs/lifecycle.md); the first that fails refuses the whole approval."""
    d = Directory.read(design, stores)
    mine = [r for r in d.revisions if r.run_id == run_id]
    if not mine and _left_the_accepted(d, run_id):
        return Done("approve", design.rel(design.root), [])  # its bytes are the accepted revision
    if not mine:
        raise _refuse(
            NO_REVISION,
            f"run {run_id} recorded no revision (it did not finish, or wrote no document)",
            design,
            "finish the run (designloop resume), then designloop approve DIR",
        )
    req = Request("approve", tuple(dict.fromkeys(r.file for r in mine)), None, requested_by)
    for rev in mine:
        current = d.current(rev.file)
        if current is not None and current.number != rev.number:
            raise _refuse(
                NO_REVISION,
                f"{rev.label()} is no longer the current revision ({current.label()} is)",
                design,
                "designloop approve DIR approves the current one",
            )
    try:
        done = decide(d, req)
    except TransitionRefused as exc:
        if exc.name != ALREADY:
            raise
        return Done("approve", design.rel(design.root), [])  # a finished run resumed: nothing more
    if declined := next((rev for rev in mine if rev.declined), None):
        raise _declined(design, declined)
    if lock is not None:
        try:
            lock.check()
        except LockLost as exc:
            raise _refuse(ACTIVE, exc.message, design, "approve it with designloop approve DIR") from None
    append_approvals(design.root / NAME, done.records)
    return done


def _declined(design: DesignDir, rev: Revision) -> TransitionRefused:
    """A run that did only part of what was asked is the user's to accept, never accepted by
    --approve-if-ready: the refusal names the parts (from the run's review-log entry)."""
    parts = entry_findings(design.mutations, rev.entry, ("declined",)) if rev.entry is not None else []
    said = "; ".join(p.removeprefix("declined: ").removesuffix(DECLINED_TAIL) for p in parts)
    where = f"the review log's Mutation {rev.entry}" if rev.entry is not None else "the run's summary"
    return _refuse(
        DECLINED,
        f"{rev.label()}'s run {rev.run_id} ended {rev.outcome_words()}" + (f": {said}" if said else ""),
        design,
        f"read what was declined ({where} names it); to accept {rev.label()} as it is, run designloop "
        f"approve {design.rel(design.root)}; or edit again to have it done",
    )


def _left_the_accepted(d: Directory, run_id: str) -> bool:
    """Whether run ``run_id`` finished (its review-log entry is there) leaving each stage document
    as its accepted revision: bytes equal to an accepted revision record no new one."""
    if not any(e.run_id == run_id for e in parse_entries(d.design.mutations)):
        return False
    accepted_now = [d.accepted(file) for file in stage_files(d.design)]
    return all(a is not None and d.on_disk(a.file) == a.sha256 for a in accepted_now)


def check_approvals(design: DesignDir) -> None:
    """Before a run that will approve what it leaves (--approve-if-ready): its approvals file can
    be appended to (it parses; it is no symbolic link), so bad input stops the run before it starts."""
    path = design.root / NAME
    check_write_target(path)
    parse_approvals(path)


def refuse_frozen(design: DesignDir, kind: str, unfreeze: bool) -> None:
    """An interactive kind on a design phase 4 has finalised is refused unless asked for."""
    if kind in CREATION_KINDS or unfreeze or not design.final.exists():
        return
    raise _refuse(
        FROZEN,
        f"design-final.md exists: phase 4 froze design.md and its companion, so {kind} is refused",
        design,
        "pass --unfreeze to edit the frozen design anyway (design-final.md is left as it is)",
    )


@dataclass(slots=True)
class Approved:
    """What ``--approve-if-ready`` did: the approval made, or why it was refused."""

    done: Done | None = None
    refused: DesignloopError | None = None
    """A named refusal (TransitionRefused), or bad input met on the way (an approvals file that
    does not parse or is a link: exit 2)."""

    def exit_code(self, run: ExitCode) -> ExitCode:
        """The invocation's exit: the run's own, unless the run exited 0 and the approval failed."""
        return self.refused.exit_code if self.refused is not None and run == ExitCode.OK else run

    def to_json(self) -> dict[str, object]:
        if self.refused is not None:
            return {"approved": False, "error": self.refused.to_json()}
        assert self.done is not None
        return {"approved": True} | self.done.to_json()

    def line(self) -> str:
        if self.refused is not None:
            return f"not approved: {self.refused.render()}"
        assert self.done is not None
        if not self.done.records:
            return "approved already: nothing to record"
        return (
            "approved: "
            + ", ".join(f"{basename(r.file)} r{r.number}" for r in self.done.records)
            + (f" (recorded in {self.done.directory}/{NAME}: commit it with the design)")
        )


def approve_if_ready(
    design: DesignDir, store: RunStore, run_id: str, lock: RunLock | None, requested_by: str
) -> Approved:
    """``--approve-if-ready`` after a run: its outcome stands whatever the approval's."""
    try:
        return Approved(done=approve_run(design, revision_stores(store), run_id, lock, requested_by))
    except (TransitionRefused, InputError) as exc:
        return Approved(refused=exc)
