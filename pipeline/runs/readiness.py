"""Readiness (docs/lifecycle.md): which revision of each document is accepted, which is
current, and every gap between a design directory and "accepted and current".

Everything is read from what a clone holds (the review log's revision markers, the committed
approvals file, the research log, the files on disk, the workflow definitions, the inputs) plus
whatever run store is at hand, so ``designloop status DIR`` and ``designloop ready`` say the same
on a fresh clone as where the runs ran. The gaps of a document:

* ``missing``: the document does not exist; ``no-revision``: it exists, no run recorded it;
* ``changed-since-revision``: its bytes are not its current revision's (a hand edit);
* ``outcome-not-pass``: its current revision's run did not end PASS (with the open findings);
* ``revision-rejected``; ``not-accepted``: its current revision is not the accepted one;
* ``workflow-changed``: the workflow definitions changed since the revision's run (the stamp);
* ``inputs-changed``: what the accepted revision's run read changed since (research log,
  episodes and plan, code, the frozen design);
* ``stale-claims``: a claim of its claims ledger is stale (``designloop drift``: the code a
  sentence rests on changed, moved or is gone, or the sentence left its line);
  ``no-claims-ledger``: it has no ledger, so its claims cannot be checked;

and of the directory: ``gate-open`` (the research log's gate), ``run-active`` (a run holds it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.agents.roles import workflow_definitions, workflow_overrides
from pipeline.errors import InputError
from pipeline.formats.approvals import Approval, state_of
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.research_log import Gate, load_research_log
from pipeline.formats.review_chain import tampered
from pipeline.formats.revisions import FILES, INPUT_NAMES, Revision, basename
from pipeline.formats.stamp import WorkflowSha
from pipeline.grounding.drift import ClaimState, Drift
from pipeline.grounding.index_store import store_for
from pipeline.grounding.ledger import ledger_path, load_ledger
from pipeline.runs.fingerprint import Fingerprints
from pipeline.runs.lifecycle import PASS
from pipeline.runs.lifecycle_read import Directory, open_findings, stage, stage_files
from pipeline.runs.lock import Holder
from pipeline.runs.revisions import RevisionStore, input_digests


@dataclass(frozen=True, slots=True)
class Gap:
    name: str
    message: str
    details: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"gap": self.name, "message": self.message, "details": list(self.details)}


@dataclass(frozen=True, slots=True)
class ClaimsCheck:
    """A document's claims ledger checked against the code now (grounding.drift)."""

    ledger: str
    """The ledger, relative to the repository root."""
    states: list[ClaimState]

    @property
    def stale(self) -> list[ClaimState]:
        return [s for s in self.states if s.stale]

    def to_json(self) -> dict[str, object]:
        return {
            "ledger": self.ledger,
            "claims": len(self.states),
            "current": sum(s.status == "current" for s in self.states),
            "stale": [s.to_json() for s in self.stale],
            "unchecked": [s.to_json() for s in self.states if s.status == "unchecked"],
        }


@dataclass(slots=True)
class DocStatus:
    """One document: on disk, its revisions with their states, the accepted one, its gaps."""

    file: str
    in_stage: bool
    sha256: str | None
    revisions: list[tuple[Revision, str]]
    current: Revision | None
    accepted: Approval | None
    gaps: list[Gap] = field(default_factory=list)
    claims: ClaimsCheck | None = None
    """The drift result of its claims ledger (None: the document or its ledger is absent)."""

    def to_json(self, directory: str) -> dict[str, object]:
        current = self.current
        return {
            "file": self.file,
            "path": FILES[self.file],
            "in_stage": self.in_stage,
            "exists": self.sha256 is not None,
            "sha256": self.sha256,
            "current": (
                current.to_json(directory) | {"state": self.state_of(current)}
                if current is not None
                else None
            ),
            "accepted": self.accepted.to_json() if self.accepted is not None else None,
            "revisions": [
                {"number": r.number, "sha256": r.sha256, "state": s, "run_id": r.run_id, "outcome": r.outcome}
                for r, s in self.revisions
            ],
            "gaps": [g.to_json() for g in self.gaps],
            "claims": self.claims.to_json() if self.claims is not None else None,
        }

    def state_of(self, rev: Revision) -> str:
        return next((s for r, s in self.revisions if r.number == rev.number), "candidate")


@dataclass(slots=True)
class DirStatus:
    directory: str
    stage: str
    gate: Gate | None
    holder: Holder | None
    docs: list[DocStatus]
    gaps: list[Gap] = field(default_factory=list)
    """The directory's own gaps (its gate, a run holding it)."""

    @property
    def ready(self) -> bool:
        return not self.gaps and all(not d.gaps for d in self.docs if d.in_stage)

    def all_gaps(self) -> list[tuple[str | None, Gap]]:
        """Every gap that stands between the directory and ready, with its document."""
        out: list[tuple[str | None, Gap]] = [(None, g) for g in self.gaps]
        return out + [(d.file, g) for d in self.docs if d.in_stage for g in d.gaps]

    def to_json(self) -> dict[str, object]:
        return {
            "directory": self.directory,
            "stage": self.stage,
            "ready": self.ready,
            "gate": self.gate.to_json() if self.gate is not None else None,
            "active_run": self.holder.describe() if self.holder is not None else None,
            "gaps": [g.to_json() for g in self.gaps],
            "files": [d.to_json(self.directory) for d in self.docs],
        }


class Context:
    """What several directories share: the workflow SHA of a repository, input digests."""

    def __init__(self, runs_dir: Path) -> None:
        self.prints = Fingerprints(runs_dir)
        self.index_store = store_for(runs_dir)
        self._workflow: dict[Path, str] = {}
        self._drift: dict[Path, Drift] = {}

    def drift(self, repo_root: Path) -> Drift:
        """One drift checker per repository (the code files it reads are read once)."""
        if repo_root not in self._drift:
            self._drift[repo_root] = Drift(repo_root, self.index_store)
        return self._drift[repo_root]

    def workflow(self, repo_root: Path) -> str:
        if repo_root not in self._workflow:
            sha = WorkflowSha(repo_root, workflow_overrides(repo_root), workflow_definitions(repo_root))
            self._workflow[repo_root] = sha.get()
        return self._workflow[repo_root]


def _gate(design: DesignDir) -> tuple[Gate | None, Gap | None]:
    try:
        gate = load_research_log(design.research_log).gate()
    except InputError as exc:
        return None, Gap("gate-open", f"the research log cannot be read: {exc.message}")
    if gate.state == "resolved":
        return gate, None
    items = tuple(f"line {i.line}: {i.severity}: {i.text}" for i in gate.open_items)
    return gate, Gap("gate-open", gate.message(), items)


def _presence(doc: DocStatus, d: Directory) -> list[Gap]:
    name, rev = basename(doc.file), doc.current
    if doc.sha256 is None:
        return [Gap("missing", f"{name} does not exist")]
    if rev is None:
        return [Gap("no-revision", f"{name} exists, but no run recorded a revision of it")]
    out: list[Gap] = []
    if doc.sha256 != rev.sha256:
        out.append(
            Gap("changed-since-revision", f"{name} changed since {rev.label()} (sha256 {rev.sha256[:12]}…)")
        )
    if rev.outcome != PASS:
        found = tuple(open_findings(d.design, rev))
        out.append(Gap("outcome-not-pass", f"{rev.label()}'s run {rev.run_id} ended {rev.outcome}", found))
    state = doc.state_of(rev)
    if state == "rejected":
        rejection = d.rejected(rev)
        why = f": {rejection.why}" if rejection is not None else ""
        out.append(Gap("revision-rejected", f"{rev.label()} was rejected{why}"))
    elif state != "accepted":
        acc = doc.accepted
        was = f"r{acc.number} is accepted" if acc is not None else "no revision is accepted"
        out.append(Gap("not-accepted", f"{rev.label()} is a {state}; {was}"))
    return out


def _drift(doc: DocStatus, d: Directory, ctx: Context) -> list[Gap]:
    """What changed since the revision that counts: the accepted one, else the current one."""
    basis = doc.current
    if doc.accepted is not None:
        basis = next((r for r, _ in doc.revisions if doc.accepted.names(r)), basis)
    if basis is None:
        return []
    out: list[Gap] = []
    design = d.design
    now = ctx.workflow(design.repo_root)
    if basis.workflow and basis.workflow != now:
        out.append(
            Gap(
                "workflow-changed",
                f"the workflow definitions changed since {basis.label()}'s run "
                f"(workflow {basis.workflow[:12]}…, now {now[:12]}…)",
            )
        )
    if basis.inputs:
        current = input_digests(design, basis.kind, ctx.prints)
        changed = [k for k, v in sorted(basis.inputs.items()) if current.get(k) != v]
        if changed:
            named = ", ".join(INPUT_NAMES.get(k, k) for k in changed)
            out.append(Gap("inputs-changed", f"since {basis.label()}'s run, {named} changed", tuple(changed)))
    return out


def _claims(doc: DocStatus, d: Directory, ctx: Context) -> list[Gap]:
    """The document's claims ledger against the code now: a stale claim is a gap, each named at
    the design line that makes it; so is a missing ledger. A damaged one is bad input (exit 2)."""
    name = basename(doc.file)
    path = d.design.root / FILES[doc.file]
    ledger = ledger_path(path)
    if not ledger.is_file():
        hint = "write it from the design and the code: designloop claims DIR (and commit it)"
        return [Gap("no-claims-ledger", f"{name} has no claims ledger ({ledger.name})", (hint,))]
    states = ctx.drift(d.design.repo_root).check(path, load_ledger(ledger))
    doc.claims = ClaimsCheck(ledger.relative_to(d.design.repo_root).as_posix(), states)
    stale = doc.claims.stale
    if not stale:
        return []
    details = tuple(f'line {s.line}: {s.entry.mention}: {s.what}: "{s.entry.quote}"' for s in stale)
    message = f"{len(stale)} of {len(states)} claims of {name} are stale (designloop drift)"
    return [Gap("stale-claims", message, details)]


def doc_status(d: Directory, file: str, in_stage: bool, ctx: Context) -> DocStatus:
    revisions = [r for r in d.revisions if r.file == file]
    current = d.current(file)
    top = current.number if current is not None else 0
    doc = DocStatus(
        file=file,
        in_stage=in_stage,
        sha256=d.on_disk(file),
        revisions=[(r, state_of(d.approvals, r, top)) for r in revisions],
        current=current,
        accepted=d.accepted(file),
    )
    if doc.sha256 is not None:
        doc.gaps = _presence(doc, d) + _drift(doc, d, ctx) + _claims(doc, d, ctx)
    else:
        doc.gaps = _presence(doc, d)
    return doc


def directory_status(
    design: DesignDir, stores: Sequence[RevisionStore], holder: Holder | None, ctx: Context
) -> DirStatus:
    """The directory's documents and gaps (``holder``: the run holding its lock, if any)."""
    from pipeline.runs.records import portable

    d = Directory.read(design, stores)
    in_stage = set(stage_files(design))
    shown = [f for f in FILES if f in in_stage or d.on_disk(f) is not None or d.current(f) is not None]
    gate, gate_gap = _gate(design)
    status = DirStatus(
        portable(design.root, design.repo_root),
        stage(design),
        gate,
        holder,
        [doc_status(d, f, f in in_stage, ctx) for f in shown],
    )
    if gate_gap is not None:
        status.gaps.append(gate_gap)
    if found := tampered(design.mutations, design.repo_root):
        status.gaps.append(
            Gap("review-log-tampered", "the review log is not as designloop wrote it", tuple(found))
        )
    if holder is not None:
        status.gaps.append(Gap("run-active", f"{holder.describe()} is working on this design directory"))
    return status
