"""One creation run per design directory, many at once in one process (``designloop batch``).

Every directory is checked like a single run; a bad one is reported (exit 2) and the others go
on. A directory whose inputs and outputs are unchanged since its last run passed is skipped
without a request (runs.fingerprint); one whose last run did not finish (interrupted, paused,
stopped by a budget) is resumed; any other starts a new run. Each run holds its directory's
lock for its whole length (the store's lock: across processes, and across machines on the
PostgreSQL store). The runs share one checkpointer, one model-call cache and, when given, the
batch's budget. A run that fails, pauses or stops never stops the others.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipeline.agents.cache import LazyCache, RequestCache
from pipeline.agents.pool import Pool, PooledBudget
from pipeline.agents.session import SessionOptions
from pipeline.errors import DesignloopError, ExitCode, InputError
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.findings import Finding
from pipeline.graph.deps import RunDeps
from pipeline.graph.runner import RunResult, execute
from pipeline.graph.state import PASS
from pipeline.runs.events import EventLog
from pipeline.runs.fingerprint import Fingerprints, outputs_digest
from pipeline.runs.lock import Holder, RunLocked, holder_for
from pipeline.runs.records import FailOn, RunRecord, portable
from pipeline.runs.setup import OpenRun, load_run, plan_run, start_run
from pipeline.runs.store import RunStore
from pipeline.runs.views import RunView
from pipeline.settings import CACHE_DIR, repo_root

UNFINISHED = frozenset({"interrupted", "paused", "stopped"})
EXIT_RANK = (
    ExitCode.INTERNAL,
    ExitCode.BAD_INPUT,
    ExitCode.INCONCLUSIVE,
    ExitCode.BUDGET,
    ExitCode.GATE_PAUSED,
    ExitCode.FINDINGS,
    ExitCode.OK,
)
"""The batch's exit code is its directories' most urgent one, in this order (docs/scale.md)."""


@dataclass(frozen=True, slots=True)
class BatchOptions:
    kind: str
    session: SessionOptions
    jobs: int = 4
    warmup: bool = True
    fail_on: FailOn = "blocker"
    wait: bool = False
    batch_tokens: int | None = None
    batch_cost: Decimal | None = None


@dataclass(slots=True)
class Row:
    """One directory of a batch: what was done, how it ended, what it spent."""

    directory: str
    action: str = "queued"
    """queued, skipped, new, resumed, busy, bad, running, done."""
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
        }


@dataclass(slots=True)
class Batch:
    batch_id: str
    kind: str
    rows: list[Row] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        codes = {ExitCode(r.exit_code) for r in self.rows if r.exit_code is not None}
        return next((c for c in EXIT_RANK if c in codes), ExitCode.OK)

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
            "exit_code": int(self.exit_code),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "kind": self.kind,
            "directories": [r.to_json() for r in self.rows],
            "totals": self.totals(),
        }


class SharedCache:
    """The batch's one model-call cache, handed to every run; only the batch closes it."""

    def __init__(self, inner: RequestCache) -> None:
        self.inner = inner

    def get(self, key: str) -> Any:
        return self.inner.get(key)

    def set(self, key: str, value: bytes) -> Any:
        return self.inner.set(key, value)

    def close(self) -> None:
        return None


def new_batch_id(kind: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-batch-{'p1' if kind == 'phase1-creation' else 'p4'}-{secrets.token_hex(3)}"


def latest_runs(store: RunStore, kind: str) -> dict[str, tuple[RunRecord, RunView]]:
    """The latest run of ``kind`` of each design directory (by its recorded path)."""
    found: dict[str, tuple[RunRecord, RunView]] = {}
    for record, view in store.records():
        if record.kind != kind:
            continue
        current = found.get(record.directory)
        if current is None or record.created > current[0].created:
            found[record.directory] = (record, view)
    return found


def unchanged(previous: tuple[RunRecord, RunView] | None, inputs: str, design: DesignDir, kind: str) -> bool:
    """Whether the directory's last run passed on these very inputs and left these outputs."""
    if previous is None:
        return False
    record, view = previous
    return (
        view.outcome == PASS
        and record.inputs == inputs
        and view.outputs is not None
        and view.outputs == outputs_digest(design, kind)
    )


def unfinished(previous: tuple[RunRecord, RunView] | None) -> bool:
    """Whether the directory's latest run did not finish (so a batch resumes it)."""
    return (
        previous is not None and previous[1].outcome is None and previous[1].state in UNFINISHED | {"running"}
    )


Progress = Callable[[Row, dict[str, Any] | None], None]


class BatchRunner:
    """Runs one batch: ``run(directories)`` returns the batch with one row per directory."""

    def __init__(
        self,
        options: BatchOptions,
        store: RunStore,
        progress: Progress | None = None,
        configure: Callable[[RunDeps], None] | None = None,
    ) -> None:
        self.options = options
        self.configure = configure
        self.store = store
        self.progress = progress or (lambda row, event: None)
        self.pool = Pool(options.batch_tokens, options.batch_cost)
        self.fingerprints = Fingerprints(store.runs_dir)
        self.cache: RequestCache | None = None
        self.batch = Batch(new_batch_id(options.kind), options.kind)

    async def run(self, directories: list[Path]) -> Batch:
        self.batch.rows = [Row(portable(d, repo_root(d))) for d in directories]
        shared = self.store.cache()
        self.cache = SharedCache(shared or LazyCache(self.store.runs_dir / CACHE_DIR))
        previous = latest_runs(self.store, self.options.kind)
        gate = asyncio.Semaphore(max(1, self.options.jobs))
        try:
            async with self.store.checkpointer() as saver:

                async def one(row: Row, directory: Path) -> None:
                    async with gate:
                        await self._directory(row, directory, previous, saver)

                await asyncio.gather(*(one(r, d) for r, d in zip(self.batch.rows, directories, strict=True)))
        finally:
            (shared or self.cache.inner).close()
        self.store.save_batch(self.batch.batch_id, self.batch.to_json())
        return self.batch

    def _say(self, row: Row, event: dict[str, Any] | None = None) -> None:
        self.progress(row, event)

    async def _directory(
        self, row: Row, directory: Path, previous: dict[str, tuple[RunRecord, RunView]], saver: Any
    ) -> None:
        opts = self.options
        try:
            plan = plan_run(opts.kind, directory, opts.session, opts.warmup, None, opts.fail_on)
        except InputError as exc:
            self._end(row, "bad", ExitCode.BAD_INPUT, exc.render())
            return
        design = plan.design
        row.directory = portable(design.root, design.repo_root)
        inputs = self.fingerprints.inputs(
            design, opts.kind, plan.session.runtime.model_specs, opts.session.base_url
        )
        before = previous.get(row.directory)
        if unchanged(before, inputs, design, opts.kind):
            assert before is not None
            row.run_id, row.outcome = before[0].run_id, PASS
            self._end(row, "skipped", ExitCode.OK, "inputs unchanged since the last PASS")
            return
        lock = self.store.lock(design.root, row.directory)
        # The lock names the run that will work on the directory (status tells it is running).
        working = before[0].run_id if before is not None and unfinished(before) else plan.run_id
        try:
            await self._acquire(lock, holder_for(working), row)
        except RunLocked as exc:
            self._end(row, "busy", ExitCode.BAD_INPUT, exc.render())
            return
        try:
            run, resume = self._open(plan, before, inputs, row)
            row.run_id, row.action = run.run_id, "resumed" if resume else "new"
            row.started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            self._say(row)
            result = await self._execute(run, resume, row, saver)
            if result.state is not None and result.state.outcome is not None:
                row.outcome = result.state.outcome.verdict
                row.findings = list(result.state.outcome.remaining)
                if row.outcome == PASS:
                    self._record_outputs(run, design)
            else:
                row.outcome = "PAUSED" if result.paused else "STOPPED"
            self._end(row, row.action, result.exit_code, row.message or result.message)
        except DesignloopError as exc:
            self._end(row, "bad" if isinstance(exc, InputError) else row.action, exc.exit_code, exc.render())
        except Exception as exc:  # one directory's failure never stops the others
            self._end(row, row.action, ExitCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
        finally:
            lock.release()

    async def _acquire(self, lock: Any, holder: Holder, row: Row) -> None:
        if not self.options.wait:
            lock.acquire(holder, False, None)
            return

        def waiting(current: Holder | None) -> None:
            row.message = f"waiting for {current.describe() if current else 'another run'}"
            self._say(row)

        await asyncio.to_thread(lock.acquire, holder, True, waiting)

    def _open(
        self, plan: Any, before: tuple[RunRecord, RunView] | None, inputs: str, row: Row
    ) -> tuple[OpenRun, bool]:
        """The unfinished run of the directory, or a new one."""
        opts = self.options.session
        if unfinished(before):
            assert before is not None
            try:
                run_dir = self.store.run_dir(before[0].run_id)
                run = load_run(
                    run_dir, opts.budget_tokens, opts.max_cost, self.options.fail_on, plan.design.repo_root
                )
                return self._equip(run), True
            except InputError as exc:  # a run that cannot be resumed never blocks its directory
                row.message = f"run {before[0].run_id} could not be resumed ({exc.message}); started anew"
        plan.inputs = inputs
        run = start_run(plan)
        self.store.register(run.run_dir)
        return self._equip(run), False

    def _equip(self, run: OpenRun) -> OpenRun:
        runtime = run.session.runtime
        runtime.cache = self.cache
        runtime.budget = PooledBudget(runtime.budget.max_tokens, runtime.budget.max_cost, self.pool)
        return run

    async def _execute(self, run: OpenRun, resume: bool, row: Row, saver: Any) -> RunResult:
        def listen(event: dict[str, Any]) -> None:
            kind = event.get("type")
            if kind in ("start", "resume"):  # the ledger holds the run's earlier spending by now
                self.pool.track(run.session.runtime.ledger)
            elif kind == "round":
                row.round = int(event.get("round", row.round))
            elif kind == "spawn":
                row.spawns += 1
                row.tokens += int(event.get("tokens", 0))
                row.cost += Decimal(str(event.get("cost_usd", "0") or "0"))
                row.cache_hits += int(event.get("cache_hits", 0))
            self._say(row, event)

        return await execute(
            run, resume=resume, listener=listen, configure=self.configure, store=self.store, saver=saver
        )

    def _record_outputs(self, run: OpenRun, design: DesignDir) -> None:
        """The outputs the passing run left, so the next batch can tell they are unchanged."""
        log = EventLog(run.run_dir)
        published = self.store.publish(run.run_dir)
        if published is not None:
            log.subscribe(published)
        log.emit("outputs", digest=outputs_digest(design, self.options.kind))

    def _end(self, row: Row, action: str, code: ExitCode, message: str | None) -> None:
        row.action, row.exit_code, row.message = action, int(code), message
        self._say(row)
