"""A run as it happens, for people: the live view on a terminal (round, the spawns in flight
with their elapsed time, those done, the checks in plain words, tokens and cost so far), and
the same steps as lines on stderr (``--verbose``) where there is no terminal to redraw.

The view keeps fixed column widths and never grows taller than the terminal: the spawns in
flight first, then the latest of the finished ones and of the checks, each list cut to what
fits with "… N more" said.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from decimal import Decimal

from rich.console import Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from pipeline.agents.resolve import OFFLINE
from pipeline.formats.contracts import declined_words
from pipeline.formats.findings import Finding
from pipeline.formats.kinds import Kind
from pipeline.runs.check_events import (
    CheckEvent,
    ColdReadCheck,
    ComprehensionCheck,
    DualCleanCheck,
    GateCheck,
    MechanicalCheck,
    MergedCheck,
    ScopeCheck,
    VerdictCheck,
)
from pipeline.runs.event_fields import BaseEvent
from pipeline.runs.events import Finished, Paused, RoundStarted, SliceSkipped, SpawnBegun, Spawned, Stopped

NAME_RATIO, STATE_RATIO = 2, 3
"""The columns' shares of the terminal's width: fixed, whatever the cells hold."""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def mechanical_words(event: MechanicalCheck) -> str:
    """The mechanical checks' line: how many findings, and how many of them are open (a blocker
    or a should-fix)."""
    if not event.findings:
        return "mechanical checks: clean"
    counts = [f"{_plural(event.blockers, 'blocker')}"]
    if event.found:  # every event records its findings; the severities are counted from them
        should = sum(1 for f in event.found if f.severity == "should-fix")
        counts += [f"{should} should-fix", f"{event.findings - event.blockers - should} suggestion(s)"]
    return f"mechanical checks: {_plural(event.findings, 'finding')} ({', '.join(counts)})"


def dual_clean_words(event: DualCleanCheck) -> str:
    """A round's evaluation: "clean" only when the pair and the mechanical checks have nothing
    open; "dual-clean" when the pair is clean (the loop's exit) and mechanical findings remain."""
    mechanical = event.mechanical or 0
    said = "not clean" if not event.clean else "dual-clean" if mechanical else "clean"
    words = f"round {event.round} {said}: auditors {event.auditor} open, second check {event.second} open"
    if event.mechanical is not None:
        words += f", mechanical checks {mechanical} open"
    if event.inconclusive:
        words += f"; no valid review from {', '.join(event.inconclusive)}"
    return words


def check_words(event: CheckEvent) -> str:
    """A check in plain words (never a Python repr)."""
    match event:
        case MechanicalCheck():
            return mechanical_words(event)
        case DualCleanCheck():
            return dual_clean_words(event)
        case ComprehensionCheck():
            return f"comprehension gate: {event.verdict or '-'}, {_plural(event.findings, 'finding')}"
        case ColdReadCheck():
            return f"cold read ({event.check}): {event.verdict or '-'}, {_plural(event.findings, 'finding')}"
        case GateCheck():
            return f"research log's adversarial gate: {event.state}"
        case ScopeCheck():
            where = f" ({', '.join(event.sections)})" if event.sections else ""
            return f"cold-read scope: {event.cold_read}{where}"
        case MergedCheck():
            words = f"round {event.round} merged: {event.open} open"
            if event.inconclusive:
                words += f"; no valid review from {', '.join(event.inconclusive)}"
            return words
        case VerdictCheck():
            declined = f", {declined_words(event.declined)}" if event.declined else ""
            return f"verdict: {event.outcome} ({event.remaining} remaining{declined})"
    return f"check {getattr(event, 'check', '')}".strip()


def _where(slice_: tuple[int, int] | None) -> str:
    return f" lines {slice_[0]}-{slice_[1]}" if slice_ else ""


def spawn_words(event: Spawned) -> str:
    words = f"{event.status}, {_plural(event.findings, 'finding')}, {event.tokens} tokens"
    if event.cache_hits:
        words += f", {event.cache_hits} cached"
    return words


def step_line(event: BaseEvent) -> str | None:
    """One event as a line for a log (``--verbose``), or None for what a log needs not say."""
    match event:
        case RoundStarted():
            return f"round {event.round} of {event.budget}"
        case SpawnBegun():
            engine = "offline engine" if event.model == OFFLINE else event.model
            return f"  {event.role}{_where(event.slice)}: started ({engine})"
        case Spawned():
            return f"  {event.role}{_where(event.slice)}: {spawn_words(event)}"
        case SliceSkipped():
            return f"  readability-auditor{_where(event.slice)}: skipped, settled and unchanged"
        case CheckEvent():
            return f"  {check_words(event)}"
        case Paused():
            return f"paused: {event.message}"
        case Stopped():
            return f"stopped: {event.message}"
        case Finished():
            return f"outcome: {event.line}"
    return None


class StepLines:
    """A run's steps as lines on stderr, each written whole as it happens."""

    def __call__(self, event: BaseEvent) -> None:
        line = step_line(event)
        if line is not None:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()


@dataclass(slots=True)
class InFlight:
    name: str
    model: str
    began: float


@dataclass(slots=True)
class LiveState:
    kind: Kind
    round: int = 0
    budget: int = 0
    running: dict[str, InFlight] = field(default_factory=dict)
    spawns: dict[str, str] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """The latest round's open findings (blockers and should-fix)."""
    tokens: int = 0
    cost: Decimal = Decimal(0)
    unpriced: bool = False
    cached: int = 0
    status: str = "running"
    clock: float = 0.0

    def apply(self, event: BaseEvent) -> None:
        match event:
            case RoundStarted():
                self.round, self.budget = event.round, event.budget or self.budget
            case SpawnBegun():
                name = f"r{event.round} {event.role}{_where(event.slice)}"
                self.running[name] = InFlight(name, event.model, time.monotonic())
            case Spawned():
                name = f"r{event.round} {event.role}{_where(event.slice)}"
                self.running.pop(name, None)
                self.spawns[name] = spawn_words(event)
                self.tokens += event.tokens
                self.cost += event.cost_usd
                self.unpriced |= event.model != OFFLINE and event.calls > 0 and not event.cost_usd
                self.cached += event.cache_hits
            case SliceSkipped():
                self.spawns[f"r{event.round} readability-auditor{_where(event.slice)}"] = "skipped: settled"
            case CheckEvent():
                self.checks.append(f"r{event.round} {check_words(event)}")
                if isinstance(event, DualCleanCheck):
                    self.findings = [f for f in event.found if f.blocking]
            case Paused():
                self.status = f"paused: {event.message}"
            case Finished():
                self.status = f"outcome: {event.line}"

    def cost_text(self) -> str:
        if self.unpriced:
            return f"${self.cost} + unpriced" if self.cost else "unpriced"
        return f"${self.cost}"

    def render(self, height: int = 24) -> RenderableType:
        now = time.monotonic()
        head = Text(
            f"{self.kind}  round {self.round} of {self.budget}  tokens {self.tokens}  "
            f"cost {self.cost_text()}  cached calls {self.cached}  {self.status}",
            style="bold",
            no_wrap=True,
            overflow="ellipsis",
        )
        # Each row is one line (cells never wrap here: the summary printed after the run has it
        # all); the head takes one line and each table four more (its rules and its header).
        found_rows = min(len(self.findings), 3) + (len(self.findings) > 3)
        room = max(4, height - 1 - 8 - (4 + found_rows if self.findings else 0) - 1)
        running = list(self.running.values())
        done = list(self.spawns.items())
        shown_running = running[: room - 2]
        room -= len(shown_running)
        shown_done = done[-max(1, room // 2 - 1) :] if done else []
        room -= len(shown_done) + (len(done) > len(shown_done))
        spawns = Table(show_header=True, expand=True)
        spawns.add_column("spawn", ratio=NAME_RATIO, no_wrap=True, overflow="ellipsis")
        spawns.add_column("state", ratio=STATE_RATIO, no_wrap=True, overflow="ellipsis")
        for item in shown_running:
            engine = "offline engine" if item.model == OFFLINE else item.model
            spawns.add_row(item.name, f"running {now - item.began:4.0f}s ({engine})")
        if len(done) > len(shown_done):
            spawns.add_row(f"… {len(done) - len(shown_done)} earlier", "")
        for name, state in shown_done:
            spawns.add_row(name, state)
        checks = Table(show_header=True, expand=True)
        checks.add_column("checks", ratio=1, no_wrap=True, overflow="ellipsis")
        shown_checks = self.checks[-max(1, room) :]
        for line in shown_checks:
            checks.add_row(line)
        parts: list[RenderableType] = [head, spawns, checks]
        if self.findings:
            found = Table(show_header=True, expand=True)
            found.add_column("where", ratio=NAME_RATIO, no_wrap=True, overflow="ellipsis")
            found.add_column("finding", ratio=STATE_RATIO, no_wrap=True, overflow="ellipsis")
            for f in self.findings[:3]:
                found.add_row(f"{f.file or ''}:{f.line or ''}", f"{f.severity}: {f.describe()}")
            if len(self.findings) > 3:
                found.add_row(f"… {len(self.findings) - 3} more", "")
            parts.append(found)
        return Group(*parts)


class LiveView:
    def __init__(self, kind: Kind) -> None:
        from pipeline.cli.output import console

        self.state = LiveState(kind)
        # The console exists before the Live: Live renders once as it is made, and the view's
        # height is the console's.
        self.console = console()
        self.live = Live(
            console=self.console,
            get_renderable=self._render,
            refresh_per_second=4,
            transient=False,
            vertical_overflow="crop",
        )

    def _render(self) -> RenderableType:
        return self.state.render(self.console.size.height)

    def __enter__(self) -> LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.refresh()
        self.live.__exit__(None, None, None)

    def __call__(self, event: BaseEvent) -> None:
        self.state.apply(event)
