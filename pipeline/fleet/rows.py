"""A batch's rows and what decides each directory's action: the data ``designloop batch`` and
``designloop enqueue`` share (fleet.batch runs a batch, fleet.worker queues one).

A directory is skipped when its latest run of the kind finished (PASS, SHOULD-FIX REMAINS,
BLOCKER REMAINS, DECISION NEEDED) on the very inputs it has now and left the outputs on disk
(``unchanged``), its outcome reported again; resumed when its latest run did not finish
(``unfinished``; a discarded run is withdrawn and counts for nothing); shown as ``edited`` and
left alone when a new run would overwrite later work (runs.overwrite); otherwise a new run
starts. ``--force`` starts a new run whatever the skip and the later work say.

With ``--stale-only`` the skip goes by the design inputs (everything but the code) and the
claims ledgers of what the last run wrote: a directory is skipped when those inputs and
outputs are unchanged and every claim is still current (grounding.drift), so a code change no
claim rests on runs nothing.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipeline.agents.session import SessionOptions, Sessions, servers
from pipeline.errors import ExitCode, InputError
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.findings import Finding
from pipeline.formats.kinds import CreationKind
from pipeline.formats.revisions import Revision, file_of
from pipeline.graph.result import exit_code_for
from pipeline.graph.state import BLOCKER_REMAINS, DECISION_NEEDED, PASS, SHOULD_FIX_REMAINS
from pipeline.grounding.drift import stale_claims
from pipeline.runs.fingerprint import Fingerprints, output_files, outputs_digest
from pipeline.runs.lifecycle_read import Directory, revision_stores
from pipeline.runs.overwrite import Overwrite, later_work
from pipeline.runs.records import FailOn, RunRecord, portable
from pipeline.runs.revisions import input_digests
from pipeline.runs.run_view import RunView
from pipeline.runs.setup import RunPlan, plan_run
from pipeline.runs.store import RunStore

UNFINISHED = frozenset({"interrupted", "paused", "stopped"})
FINISHED = frozenset({PASS, SHOULD_FIX_REMAINS, BLOCKER_REMAINS, DECISION_NEEDED})
"""Outcomes a batch does not repeat on unchanged inputs (INCONCLUSIVE: a review never happened,
so it is run again)."""
EXIT_RANK = (
    ExitCode.INTERNAL,
    ExitCode.BAD_INPUT,
    ExitCode.INCONCLUSIVE,
    ExitCode.BUDGET,
    ExitCode.GATE_PAUSED,
    ExitCode.FINDINGS,
    ExitCode.REFUSED,
    ExitCode.OK,
)
"""The batch's exit code is its directories' most urgent one, in this order (docs/scale.md)."""


@dataclass(frozen=True, slots=True)
class BatchOptions:
    kind: CreationKind
    session: SessionOptions
    jobs: int = 4
    warmup: bool = True
    fail_on: FailOn = "blocker"
    wait: bool = False
    batch_tokens: int | None = None
    batch_cost: Decimal | None = None
    outputs: tuple[Path, ...] = ()
    """designloop's own outputs this batch writes into the repository (its --sarif file): left
    out of the input fingerprint."""
    force: bool = False
    """Run every directory: no skip on unchanged inputs, and over later work (kept under runs/)."""
    stale_only: bool = False
    """Skip by the design inputs and the claims ledgers instead of the whole code: a directory
    runs when its design inputs changed or a claim of what it wrote is stale (docs/scale.md)."""
    approve_if_ready: bool = False
    """Accept each run's revisions when every condition holds (runs.lifecycle.approve_if_ready)."""


@dataclass(slots=True)
class Row:
    """One directory of a batch: what was done, how it ended, what it spent."""

    directory: str
    action: str = "queued"
    """queued, skipped, edited, new, resumed, busy, bad, failed (an internal error before its run)."""
    run_id: str | None = None
    outcome: str | None = None
    exit_code: int | None = None
    round: int = 0
    spawns: int = 0
    tokens: int = 0
    cost: Decimal = Decimal(0)
    cache_hits: int = 0
    message: str | None = None
    started: str | None = None
    findings: list[Finding] = field(default_factory=list)
    """What remains at the end of the run (each with its file, line and quote)."""
    stale: list[str] = field(default_factory=list)
    """With --stale-only: why the claims of what the last run wrote no longer stand."""
    approval: dict[str, Any] | None = None
    """What --approve-if-ready did for the run (the approval made, or the named refusal)."""
    models: dict[str, str] = field(default_factory=dict)
    """The model (or ``offline``) each role that spawned in this batch ran on."""

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "action": self.action,
            "run_id": self.run_id,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "rounds": self.round,
            "spawns": self.spawns,
            "tokens": self.tokens,
            "cost_usd": str(self.cost),
            "cache_hits": self.cache_hits,
            "message": self.message,
            "findings": [f.to_json() for f in self.findings],
            "stale_claims": self.stale,
            "models": dict(sorted(self.models.items())),
        } | ({"approval": self.approval} if self.approval is not None else {})

    def end(self, action: str, code: ExitCode, message: str | None) -> None:
        self.action, self.exit_code, self.message = action, int(code), message

    def skip(self, before: Previous, fail_on: FailOn, stale_only: bool = False) -> None:
        """Nothing to run: the directory's last run finished on these very inputs. Its outcome,
        exit code and findings are reported again; no run starts and no entry is appended."""
        record, view = before
        verdict = view.outcome or PASS
        self.run_id, self.outcome = record.run_id, verdict
        self.findings = list(view.findings)
        code = exit_code_for(verdict, fail_on) if verdict in FINISHED else ExitCode.OK
        what = "design inputs unchanged and every claim current" if stale_only else "inputs unchanged"
        again = f"{what} since run {record.run_id} ({verdict}); --force runs it again"
        self.end("skipped", code, again)

    def skip_accepted(self, revision: Revision, stale_only: bool) -> None:
        """Nothing to run, known from the committed record alone: the directory's accepted
        revision is on disk and was written from the very inputs it has now."""
        self.outcome = revision.outcome
        what = "design inputs unchanged and every claim current" if stale_only else "inputs unchanged"
        self.end(
            "skipped",
            ExitCode.OK,
            f"{what} since the accepted {revision.label()} (the review log and the approvals say so); "
            "--force runs it again",
        )

    def edited(self, later: Overwrite) -> None:
        """Left alone: a new run would overwrite work done since the last one."""
        self.end(
            "edited",
            ExitCode.OK,
            "; ".join(later.reasons) + "; designloop batch create --force runs it (the overwritten "
            "files are kept under runs/<run-id>/)",
        )

    def fail(self, exc: Exception) -> None:
        """What went wrong in this directory is its row, never the batch's end."""
        if isinstance(exc, InputError):
            self.end("bad", ExitCode.BAD_INPUT, exc.render())
        else:
            self.end("failed", ExitCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}")


@dataclass(slots=True)
class Batch:
    batch_id: str
    kind: CreationKind
    rows: list[Row] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        codes = {ExitCode(r.exit_code) for r in self.rows if r.exit_code is not None}
        return next((c for c in EXIT_RANK if c in codes), ExitCode.OK)

    def models(self) -> dict[str, str]:
        """The model each role ran on across the batch (two, comma-separated, when its runs
        differed: a run resumed from an earlier setting)."""
        seen: dict[str, set[str]] = {}
        for row in self.rows:
            for role, model in row.models.items():
                seen.setdefault(role, set()).add(model)
        return {role: ", ".join(sorted(models)) for role, models in sorted(seen.items())}

    def totals(self) -> dict[str, Any]:
        count: dict[str, int] = {}
        for row in self.rows:
            key = row.outcome or row.action
            count[key] = count.get(key, 0) + 1
        return {
            "directories": len(self.rows),
            "outcomes": count,
            "skipped": sum(r.action == "skipped" for r in self.rows),
            "resumed": sum(r.action == "resumed" for r in self.rows),
            "spawns": sum(r.spawns for r in self.rows),
            "tokens": sum(r.tokens for r in self.rows),
            "cost_usd": str(sum((r.cost for r in self.rows), Decimal(0))),
            "cache_hits": sum(r.cache_hits for r in self.rows),
            "models": self.models(),
            "exit_code": int(self.exit_code),
        }

    def save(self, store: RunStore) -> None:
        """Keep the batch's record for ``report --batch``; a batch of bad input only leaves none."""
        if any(row.action != "bad" for row in self.rows):
            store.save_batch(self.batch_id, self.to_json())

    def to_json(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "kind": self.kind,
            "directories": [r.to_json() for r in self.rows],
            "totals": self.totals(),
        }


def new_batch_id(kind: CreationKind) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-batch-{'p1' if kind == 'phase1-creation' else 'p4'}-{secrets.token_hex(3)}"


Previous = tuple[RunRecord, RunView]


@dataclass(slots=True)
class Planned:
    """A directory checked and fingerprinted, with its latest run as the batch found it."""

    plan: RunPlan
    inputs: str
    before: Previous | None


def plan_row(
    row: Row,
    directory: Path,
    options: BatchOptions,
    fingerprints: Fingerprints,
    previous: dict[str, Previous],
    store: RunStore,
    sessions: Sessions | None = None,
) -> Planned | None:
    """Check the directory like a single run and fingerprint its inputs; None when its row is
    already done: bad input, an internal error, skipped as unchanged since its last finished
    run, or left alone as edited since. ``sessions``: the set-up the batch's directories share."""
    try:
        plan = plan_run(
            options.kind, directory, options.session, options.warmup, None, options.fail_on, sessions
        )
        row.directory = portable(plan.design.root, plan.design.repo_root)
        inputs = fingerprint(plan, fingerprints)
        plan.design_inputs = fingerprint(plan, fingerprints, code=False)
        before = previous.get(row.directory)
        if decide(row, plan, inputs, before, options, store) is not None:
            return None
    except Exception as exc:  # one directory's failure never stops the others
        row.fail(exc)
        return None
    return Planned(plan, inputs, before)


def decide(
    row: Row, plan: RunPlan, inputs: str, before: Previous | None, options: BatchOptions, store: RunStore
) -> str | None:
    """``skipped`` or ``edited`` when the directory's row is done without a run (the row says
    why), else None: its unfinished run goes on, or a new one starts (with --force, over later
    work, whose files the new run keeps)."""
    if before is not None and unfinished(before):
        return None
    if not options.force and before is not None:
        if options.stale_only:
            if current(row, before, plan, options.kind):
                row.skip(before, options.fail_on, stale_only=True)
                return "skipped"
        elif unchanged(before, inputs, plan.design, options.kind):
            row.skip(before, options.fail_on)
            return "skipped"
    if not options.force and (accepted := accepted_unchanged(row, plan, options, store)) is not None:
        row.skip_accepted(accepted, options.stale_only)
        return "skipped"
    later = later_work(plan.design, options.kind, store)
    if later and not options.force:
        row.edited(later)
        return "edited"
    plan.overwrite = later.reasons
    return None


def latest_runs(store: RunStore, kind: CreationKind, directory: str | None = None) -> dict[str, Previous]:
    """The latest run of ``kind`` of each design directory (by its recorded path); with
    ``directory``, of that one only (read afresh, e.g. once its lock is held)."""
    by_dir: dict[str, list[RunRecord]] = {}
    for record in store.records(directory):
        if record.kind == kind:
            by_dir.setdefault(record.directory, []).append(record)
    found: dict[str, Previous] = {}
    for name, records in by_dir.items():  # the event logs replayed from the latest run back
        for record in sorted(records, key=lambda r: r.created, reverse=True):
            try:
                view = store.view(record.run_id)
            except InputError:
                break  # a run whose events cannot be read is no earlier run to go by
            if view.state != "discarded":  # a withdrawn run counts for nothing
                found[name] = (record, view)
                break
    return found


def unchanged(
    previous: tuple[RunRecord, RunView] | None, inputs: str, design: DesignDir, kind: CreationKind
) -> bool:
    """Whether the directory's last run finished on these very inputs and left these outputs."""
    if previous is None:
        return False
    record, view = previous
    return (
        view.outcome in FINISHED
        and record.inputs == inputs
        and view.outputs is not None
        and view.outputs == outputs_digest(design, kind)
    )


def current(row: Row, previous: Previous, plan: RunPlan, kind: CreationKind) -> bool:
    """``--stale-only``: whether the last run finished on these design inputs, left these
    outputs, and every claim of what it wrote still stands (its reasons go on the row)."""
    record, view = previous
    if view.outcome not in FINISHED or record.design_inputs is None:
        return False
    if record.design_inputs != plan.design_inputs:
        return False
    if view.outputs is None or view.outputs != outputs_digest(plan.design, kind):
        return False
    row.stale = stale_claims(plan.design.repo_root, output_files(plan.design, kind))
    return not row.stale


def unfinished(previous: tuple[RunRecord, RunView] | None) -> bool:
    """Whether the directory's latest run did not finish (so a batch resumes it)."""
    return (
        previous is not None and previous[1].outcome is None and previous[1].state in UNFINISHED | {"running"}
    )


def fingerprint(plan: RunPlan, fingerprints: Fingerprints, code: bool = True) -> str:
    """The inputs fingerprint of a planned run (runs.fingerprint), its models' servers included
    (without ``code``: all but the code)."""
    runtime = plan.session.runtime
    return fingerprints.inputs(plan.design, plan.kind, runtime.model_specs, servers(runtime), code)


def accepted_unchanged(row: Row, plan: RunPlan, options: BatchOptions, store: RunStore) -> Revision | None:
    """The accepted revision of the kind's document when nothing about it changed, told from the
    committed record alone (a fresh clone, an evicted CI cache): each document the kind writes
    that exists is its accepted revision byte for byte (the approvals file), and the inputs that
    revision's run read (its review-log marker) are the inputs now (with ``--stale-only``: all
    but the code, and every claim current). None: a run is needed."""
    design, kind = plan.design, options.kind
    lifecycle = Directory.read(design, revision_stores(store))
    main: Revision | None = None
    prints = Fingerprints(store.runs_dir)
    for path in output_files(design, kind):
        if not path.is_file():
            continue
        file = file_of(path.relative_to(design.root).as_posix())
        acc = lifecycle.accepted(file) if file is not None else None
        if acc is None or lifecycle.on_disk(acc.file) != acc.sha256:
            return None
        rev = next((r for r in lifecycle.revisions if (r.file, r.number) == (acc.file, acc.number)), None)
        if rev is None or not rev.inputs:
            return None
        now = input_digests(design, kind, prints)
        parts = [p for p in rev.inputs if not (options.stale_only and p == "code")]
        if any(rev.inputs[p] != now.get(p) for p in parts):
            return None
        main = main or rev
    if main is None:
        return None
    if options.stale_only:
        row.stale = stale_claims(design.repo_root, output_files(design, kind))
        if row.stale:
            return None
    return main
