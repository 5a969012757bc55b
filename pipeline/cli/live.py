"""A rich live view of a run for people: round, each slice, the checks, tokens and cost so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from rich.console import Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from pipeline.formats.findings import Finding


@dataclass(slots=True)
class LiveState:
    kind: str
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

    def apply(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "round":
            self.round, self.budget = event["round"], event.get("budget", self.budget)
        elif kind == "spawn":
            where = f" {event['slice'][0]}-{event['slice'][1]}" if event.get("slice") else ""
            self.spawns[f"r{event['round']} {event['role']}{where}"] = (
                f"{event['status']}, {event['findings']} finding(s), {event['tokens']} tokens"
                + (f", {event['cache_hits']} cached" if event.get("cache_hits") else "")
            )
            self.tokens += int(event.get("tokens", 0))
            self.cost += Decimal(str(event.get("cost_usd") or 0))
            self.cached += int(event.get("cache_hits", 0))
        elif kind == "slice_skipped":
            self.spawns[f"r{event['round']} readability-auditor {event['slice'][0]}-{event['slice'][1]}"] = (
                "skipped: settled and unchanged"
            )
        elif kind == "check":
            detail = ", ".join(
                f"{k}={v}" for k, v in event.items() if k not in ("time", "pid", "type", "round", "found")
            )
            self.checks.append(f"r{event.get('round', '?')} {detail}")
            if event.get("check") == "dual-clean" and isinstance(event.get("found"), list):
                found = [Finding.model_validate(f) for f in event["found"]]
                self.findings = [f for f in found if f.blocking]
        elif kind == "paused":
            self.status = f"paused: {event.get('message')}"
        elif kind == "outcome":
            self.status = f"outcome: {event.get('line')}"

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
    def __init__(self, kind: str) -> None:
        self.state = LiveState(kind)
        self.live = Live(self.state.render(), refresh_per_second=4, transient=False)

    def __enter__(self) -> LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.update(self.state.render())
        self.live.__exit__(None, None, None)

    def __call__(self, event: dict[str, Any]) -> None:
        self.state.apply(event)
        self.live.update(self.state.render())
