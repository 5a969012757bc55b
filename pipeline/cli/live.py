"""A rich live view of a run for people: round, each slice, the checks, tokens and cost so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from rich.console import Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from pipeline.formats.findings import Finding
from pipeline.formats.kinds import Kind
from pipeline.runs.check_events import CheckEvent, DualCleanCheck
from pipeline.runs.event_fields import BaseEvent
from pipeline.runs.events import Finished, Paused, RoundStarted, SliceSkipped, Spawned


@dataclass(slots=True)
class LiveState:
    kind: Kind
    round: int = 0
    budget: int = 0
    spawns: dict[str, str] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """The latest round's open findings (blockers and should-fix)."""
    tokens: int = 0
    cost: Decimal = Decimal(0)
    cached: int = 0
    status: str = "running"

    def apply(self, event: BaseEvent) -> None:
        match event:
            case RoundStarted():
                self.round, self.budget = event.round, event.budget or self.budget
            case Spawned():
                where = f" {event.slice[0]}-{event.slice[1]}" if event.slice else ""
                self.spawns[f"r{event.round} {event.role}{where}"] = (
                    f"{event.status}, {event.findings} finding(s), {event.tokens} tokens"
                    + (f", {event.cache_hits} cached" if event.cache_hits else "")
                )
                self.tokens += event.tokens
                self.cost += event.cost_usd
                self.cached += event.cache_hits
            case SliceSkipped():
                where = f"{event.slice[0]}-{event.slice[1]}"
                self.spawns[f"r{event.round} readability-auditor {where}"] = "skipped: settled and unchanged"
            case CheckEvent():
                shown = {k: v for k, v in event.details().items() if k not in ("round", "found")}
                self.checks.append(f"r{event.round} " + ", ".join(f"{k}={v}" for k, v in shown.items()))
                if isinstance(event, DualCleanCheck):
                    self.findings = [f for f in event.found if f.blocking]
            case Paused():
                self.status = f"paused: {event.message}"
            case Finished():
                self.status = f"outcome: {event.line}"

    def render(self) -> RenderableType:
        head = Text(
            f"{self.kind}  round {self.round} of {self.budget}  tokens {self.tokens}  "
            f"cost ${self.cost}  cached calls {self.cached}  {self.status}",
            style="bold",
        )
        spawns = Table("spawn", "state", expand=True)
        for name, state in self.spawns.items():
            spawns.add_row(name, state)
        checks = Table("checks", expand=True)
        for line in self.checks[-8:]:
            checks.add_row(line)
        found = Table("where", "finding", expand=True)
        for f in self.findings[:8]:
            found.add_row(f"{f.file or ''}:{f.line or ''}", f"{f.severity}: {f.describe()}")
        return Group(head, spawns, checks, found) if self.findings else Group(head, spawns, checks)


class LiveView:
    def __init__(self, kind: Kind) -> None:
        self.state = LiveState(kind)
        self.live = Live(self.state.render(), refresh_per_second=4, transient=False)

    def __enter__(self) -> LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.update(self.state.render())
        self.live.__exit__(None, None, None)

    def __call__(self, event: BaseEvent) -> None:
        self.state.apply(event)
        self.live.update(self.state.render())
