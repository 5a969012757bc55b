"""Starting, resuming and finishing a creation run: run records, the checkpointer, exit codes."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

from pipeline.agents.runtime import BudgetExceeded, Usage
from pipeline.agents.session import SessionOptions, open_session
from pipeline.errors import ExitCode, InputError, WiringError
from pipeline.formats.design_dir import open_design_dir
from pipeline.formats.research_log import load_research_log
from pipeline.formats.textio import atomic_write
from pipeline.graph.build import build_graph
from pipeline.graph.state import PHASE1, RunDeps, build_deps
from pipeline.runs.events import EventLog

CHECKPOINTS = "checkpoints.sqlite"
OUTCOME_EXIT = {
    "PASS": ExitCode.OK,
    "BLOCKER REMAINS": ExitCode.FINDINGS,
    "SHOULD-FIX REMAINS": ExitCode.FINDINGS,
}


@dataclass(slots=True)
class RunResult:
    run_id: str
    kind: str
    exit_code: ExitCode
    state: dict[str, Any]
    paused: dict[str, Any] | None = None
    message: str | None = None
    spent: Usage | None = None
    """This process's own ledger, when it knows more than the checkpoint (a stop mid-node)."""

    def to_json(self) -> dict[str, Any]:
        usage = Usage()
        for item in self.state.get("usage", []):
            usage.merge(Usage.from_json(item))
        if self.spent is not None and self.spent.total_tokens > usage.total_tokens:
            usage = self.spent
        findings = self.state.get("remaining", [])
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "outcome": self.state.get("outcome") or ("PAUSED" if self.paused else "STOPPED"),
            "exit_code": int(self.exit_code),
            "rounds": self.state.get("round"),
            "findings": findings,
            "usage": usage.to_json(),
            "review_log_entry": self.state.get("review_entry"),
            "draft": self.state.get("draft"),
            "history": self.state.get("history", []),
            "notes": self.state.get("notes", []),
            "paused": self.paused,
            "message": self.message,
        }


def stored_url(url: str | None) -> str | None:
    """The base URL as the run record keeps it: one that carries credentials is not kept
    (a resumed run then takes the server from OPENAI_BASE_URL)."""
    if url is None:
        return None
    parts = urlsplit(url)
    return None if parts.username or parts.password else url


def new_run_id(kind: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{'p1' if kind == PHASE1 else 'p4'}-{secrets.token_hex(3)}"


@asynccontextmanager
async def checkpointer(runs_dir: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """One SQLite checkpointer per process: one file under the runs directory, WAL, a busy timeout."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(runs_dir / CHECKPOINTS, timeout=30) as conn:
        await conn.execute("PRAGMA busy_timeout = 30000")
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        yield saver


def _record(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "run.json"
    if not path.is_file():
        raise InputError("no such run", file=run_dir, hint="designloop runs lists the runs")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def prepare_run(
    kind: str, directory: Path, options: SessionOptions, warmup: bool, code_root: Path | None = None
) -> tuple[str, Path]:
    """Validate the inputs, write run.json and the before-snapshot; return the run id and its directory."""
    design = open_design_dir(directory, code_root)
    if kind == PHASE1:
        load_research_log(design.research_log)  # refuse an unreadable or malformed log up front
        target = design.design
    else:
        if not design.design.is_file():
            raise InputError(
                "phase4-creation needs the frozen phase-1 design",
                file=design.design,
                hint="run designloop create first, or restore _workflow/design.md",
            )
        target = design.final
    session = open_session(design.repo_root, options)  # after validation: bad input leaves nothing behind
    run_id = new_run_id(kind)
    run_dir = session.runs_dir / run_id
    run_dir.mkdir(parents=True)
    if target.is_file():
        atomic_write(run_dir / "before.md", target.read_text(encoding="utf-8"))
    record = {
        "run_id": run_id,
        "kind": kind,
        "directory": str(design.root),
        "code_root": str(design.code_root),
        "created": dt.datetime.now(dt.UTC).isoformat(),
        "warmup": warmup,
        "options": {
            "model": options.model,
            "role_models": list(options.role_models),
            "base_url": stored_url(options.base_url),
            "budget_tokens": options.budget_tokens,
            "max_cost": options.max_cost,
            "runs_dir": str(session.runs_dir),
        },
        "models": session.runtime.model_specs,
        "draft": str(target.relative_to(design.repo_root)),
    }
    atomic_write(run_dir / "run.json", json.dumps(record, indent=2) + "\n")
    EventLog(run_dir).emit(
        "run_start", run_kind=kind, directory=str(design.root), models=session.runtime.model_specs
    )
    return run_id, run_dir


async def execute(
    run_dir: Path,
    *,
    resume: bool,
    budget_tokens: int | None = None,
    max_cost: str | None = None,
    listener: Callable[[dict[str, Any]], None] | None = None,
    configure: Callable[[RunDeps], None] | None = None,
) -> RunResult:
    """Run (or resume) the graph for the run in ``run_dir`` until it finishes, pauses or stops."""
    record = _record(run_dir)
    opts = record["options"]
    options = SessionOptions(
        opts["model"],
        tuple(opts["role_models"]),
        opts["base_url"],
        budget_tokens if budget_tokens is not None else opts["budget_tokens"],
        max_cost if max_cost is not None else opts["max_cost"],
        Path(opts["runs_dir"]),
    )
    design = open_design_dir(Path(record["directory"]), Path(record["code_root"]))
    session = open_session(design.repo_root, options)
    deps = build_deps(
        session.runtime, design, session.limits, session.run, run_dir, bool(record.get("warmup", True))
    )
    if listener is not None:
        deps.events.subscribe(listener)
    if configure is not None:
        configure(deps)
    config: RunnableConfig = {
        "configurable": {"thread_id": record["run_id"], "deps": deps},
        "recursion_limit": 400,
    }
    kind = record["kind"]
    async with checkpointer(session.runs_dir) as saver:
        graph = build_graph(saver)
        snapshot = await graph.aget_state(config)
        values: dict[str, Any] = dict(snapshot.values or {})
        for item in values.get("usage", []):
            deps.runtime.ledger.add(int(item["round"]), str(item["role"]), Usage.from_json(item))
        graph_input: Any
        if not resume or not values:
            graph_input = {
                "run_id": record["run_id"],
                "kind": kind,
                "round": 1,
                "budget": session.limits.iteration_budget,
                "draft": record["draft"],
                "author_failures": 0,
                "flagged": [],
                "settled": {},
            }
        elif snapshot.interrupts:
            graph_input = Command(resume={"resumed_at": dt.datetime.now(dt.UTC).isoformat()})
        elif not snapshot.next:
            return _result(record, values, None)
        else:
            graph_input = None
        deps.events.emit("resume" if resume else "start", budget_tokens=options.budget_tokens)
        try:
            await graph.ainvoke(graph_input, config, durability="sync")
        except BudgetExceeded as exc:
            spent = deps.runtime.ledger.total()
            deps.events.emit("stopped", message=exc.message, usage=spent.to_json())
            values = dict((await graph.aget_state(config)).values or {})
            return RunResult(
                record["run_id"], kind, ExitCode.BUDGET, values, message=exc.render(), spent=spent
            )
        except (WiringError, InputError) as exc:
            deps.events.emit("stopped", message=exc.message)
            raise
        snapshot = await graph.aget_state(config)
        values = dict(snapshot.values or {})
        if snapshot.interrupts:
            paused = snapshot.interrupts[0].value
            gate = paused.get("gate", {}) if isinstance(paused, dict) else {}
            deps.events.emit("paused", gate=gate.get("state"), message=gate.get("message"))
            return RunResult(
                record["run_id"],
                kind,
                ExitCode.GATE_PAUSED,
                values,
                paused=paused,
                message=paused["gate"]["message"] if isinstance(paused, dict) else str(paused),
            )
        return _result(record, values, None)


def _result(record: dict[str, Any], values: dict[str, Any], message: str | None) -> RunResult:
    outcome = values.get("outcome")
    code = OUTCOME_EXIT.get(str(outcome), ExitCode.FINDINGS)
    return RunResult(record["run_id"], record["kind"], code, values, message=message or values.get("summary"))


def run_dir_for(runs_dir: Path, run_id: str) -> Path:
    path = runs_dir / run_id
    if not (path / "run.json").is_file():
        raise InputError(f"no run named {run_id!r}", file=runs_dir, hint="designloop runs lists the runs")
    return path
