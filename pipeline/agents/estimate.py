"""What a run will spend, before it runs: spawns, tokens and a cost range per design directory.

The estimate follows the loop's shape: the partition of the (expected) document gives the
auditor fan-out; each role's request carries its instructions, its tool definitions and
what it reads, re-sent on every turn of its conversation. The low end is one round that
passes; the high end is every round of the budget with no section settled. Prices come
from genai-prices (the table pydantic-ai prices responses with); a model it does not know
is reported as unpriced, never as free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from pipeline.agents.roles import RoleDef, instructions_for
from pipeline.agents.session import Session
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.kinds import PHASE1
from pipeline.formats.slices import expected_slice_count
from pipeline.formats.textio import read_text

TOOL_CHARS = 450
"""About the size of one tool's definition in a request."""
TURNS = {"design-author": 4, "readability-auditor": 3, "absorption-check": 3, "fidelity-check": 4}
DEFAULT_TURNS = 3
OUTPUT_TOKENS = 400
"""A review's answer, or an author's summary (the draft itself is counted apart)."""
PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "openai-chat": "openai", "google-gla": "google"}
PROVIDERS |= {"google-vertex": "google", "groq": "groq", "mistral": "mistral", "deepseek": "deepseek"}


@dataclass(slots=True)
class Spend:
    spawns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)
    unpriced: set[str] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(slots=True)
class Estimate:
    directory: str
    kind: str
    lines: int
    slices: int
    rounds: int
    low: Spend
    high: Spend

    def to_json(self) -> dict[str, object]:
        def side(s: Spend) -> dict[str, object]:
            priced = {"cost_usd": str(s.cost), "unpriced": sorted(s.unpriced)}
            return {"spawns": s.spawns, "tokens": s.tokens, **priced}

        return {
            "directory": self.directory,
            "kind": self.kind,
            "expected_lines": self.lines,
            "slices": self.slices,
            "budget_rounds": self.rounds,
            "low": side(self.low),
            "high": side(self.high),
        }


def _chars(path: Path) -> int:
    if path.is_file():
        return len(read_text(path).text)
    if path.is_dir():
        return sum(len(read_text(p).text) for p in sorted(path.glob("*.md")))
    return 0


def _price(spec: str, input_tokens: int, output_tokens: int, spend: Spend) -> None:
    provider, _, name = spec.partition(":")
    if spec == "offline":
        return
    try:
        price = calc_price(
            PriceUsage(input_tokens=input_tokens, output_tokens=output_tokens),
            name or spec,
            provider_id=PROVIDERS.get(provider),
        )
    except LookupError:
        spend.unpriced.add(spec)
        return
    spend.cost += Decimal(str(price.total_price))


def _spawn(spend: Spend, role: RoleDef, spec: str, prefix_chars: int, read_chars: int, cpt: int) -> None:
    """One spawn: every turn re-sends the prefix; every turn after the first, what was read."""
    turns = TURNS.get(role.name, DEFAULT_TURNS)
    prefix = math.ceil((prefix_chars + TOOL_CHARS * len(role.tools)) / cpt)
    reads = math.ceil(read_chars / cpt)
    input_tokens = turns * prefix + (turns - 1) * reads
    output_tokens = OUTPUT_TOKENS * turns
    spend.spawns += 1
    spend.input_tokens += input_tokens
    spend.output_tokens += output_tokens
    _price(spec, input_tokens, output_tokens, spend)


def estimate(d: DesignDir, kind: str, session: Session) -> Estimate:
    limits, runtime = session.limits, session.runtime
    cpt = limits.chars_per_token
    if kind == PHASE1:
        source = _chars(d.research_log)
        draft = _chars(d.design) or round(source * 1.2)
        second = "absorption-check"
        author_reads = source + _chars(d.plan) + _chars(d.plan_dir)
        second_reads = source + draft
    else:
        frozen = _chars(d.design)
        draft = _chars(d.final) or round(frozen * 1.1)
        second = "fidelity-check"
        author_reads = frozen + _chars(d.plan_dir)
        second_reads = draft + frozen + _chars(d.plan_dir)
    lines = max(1, draft // 60)
    slices = expected_slice_count(lines, limits.window, limits.cap, limits.single_slice_max)
    roles = runtime.roles
    prefix = {name: len(instructions_for(role, d.repo_root)) for name, role in roles.items()}
    spec = runtime.model_specs

    def round_(spend: Spend, first: bool) -> None:
        author = roles["design-author"]
        _spawn(spend, author, spec[author.name], prefix[author.name], author_reads if first else draft, cpt)
        spend.output_tokens += math.ceil(draft / cpt)  # the draft the author writes
        for _ in range(slices):
            auditor = roles["readability-auditor"]
            _spawn(spend, auditor, spec[auditor.name], prefix[auditor.name], draft // slices, cpt)
        _spawn(spend, roles[second], spec[second], prefix[second], second_reads, cpt)

    low, high = Spend(), Spend()
    round_(low, True)
    comprehension = roles["comprehension-review"]
    _spawn(low, comprehension, spec[comprehension.name], prefix[comprehension.name], draft, cpt)
    for n in range(limits.iteration_budget):
        round_(high, n == 0)
        _spawn(high, comprehension, spec[comprehension.name], prefix[comprehension.name], draft, cpt)
    return Estimate(d.rel(d.root) or str(d.root), kind, lines, slices, limits.iteration_budget, low, high)
