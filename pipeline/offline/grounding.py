"""The code a phase-1 design names, as PSI finds it: the Class Design and Workflow sections.

The names are the code spans of the log's decisions that look like code (``Class``,
``module.function``, ``snake_case``, ``name()``). PSI answers where each is defined (with
its signature) and where it is used; the author writes what it answered and nothing else.
A name PSI does not find is not written about, and when the code holds none of the names
the sections are left out (the author's summary says so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.formats.research_log import Decision
from pipeline.grounding.mentions import looks_like_symbol
from pipeline.offline.observe import Observations
from pipeline.offline.text import code_spans

CAMEL_RE = re.compile(r"[A-Z][A-Za-z0-9]+")
MAX_USES = 4
"""Places listed per name in the Workflow section."""


@dataclass(slots=True)
class Grounded:
    name: str
    where: str
    """``path:line`` of the first definition PSI found."""
    signature: str
    decisions: list[int] = field(default_factory=list)
    uses: list[str] = field(default_factory=list)
    """``path:line`` of each place the code uses the name (its definition aside)."""


def names_in(decisions: list[Decision]) -> dict[str, list[int]]:
    """Code names the decisions use, each with the decisions that use it (in log order)."""
    found: dict[str, list[int]] = {}
    for decision in decisions:
        for value in decision.fields.values():
            for span in code_spans(value.value):
                if looks_like_symbol(span) or CAMEL_RE.fullmatch(span):
                    users = found.setdefault(span, [])
                    if decision.number not in users:
                        users.append(decision.number)
    return found


def _first(answer: str) -> str:
    return answer.splitlines()[0] if answer.strip() else ""


def ground(decisions: list[Decision], obs: Observations) -> list[Grounded]:
    """What PSI finds for each name: definition, signature, uses. Two turns of tool calls."""
    names = names_in(decisions)
    if not names or not obs.has_tool("psi"):
        return []
    order = sorted(names)
    definitions = obs.call_many([("psi", {"query": n, "kind": "definition"}) for n in order])
    found = [(n, d) for n, d in zip(order, definitions, strict=True) if not d.startswith("no definition")]
    if not found:
        return []
    calls: list[tuple[str, dict[str, object]]] = []
    for name, _ in found:
        calls += [
            ("psi", {"query": name, "kind": "signature"}),
            ("psi", {"query": name, "kind": "references"}),
        ]
    answers = obs.call_many(calls)
    out = []
    for index, (name, definition) in enumerate(found):
        where = _first(definition).rsplit(" at ", 1)[-1]
        signature = _first(answers[2 * index]).split(": ", 1)[-1].strip()
        refs = answers[2 * index + 1]
        uses = [] if refs.startswith("no references") else [line.split(":", 2) for line in refs.splitlines()]
        places = [f"{u[0]}:{u[1]}" for u in uses if len(u) >= 2 and f"{u[0]}:{u[1]}" != where]
        out.append(Grounded(name, where, signature, names[name], places[:MAX_USES]))
    return out


def _decision_list(numbers: list[int]) -> str:
    ids = [f"D{n}" for n in numbers]
    return ids[0] if len(ids) == 1 else ", ".join(ids[:-1]) + " and " + ids[-1]


def class_design(grounded: list[Grounded]) -> list[str]:
    """The Class Design section: each named element where the code defines it."""
    if not grounded:
        return []
    out = [
        "## Class Design",
        "",
        "**TL;DR:** The code elements the decisions name, where the code defines them and which "
        "decision names each.",
        "",
    ]
    for item in grounded:
        signature = (
            f", declared as `{item.signature}`" if item.signature and "`" not in item.signature else ""
        )
        out.append(
            f"- `{item.name}` is defined at `{item.where}`{signature}; "
            f"decision {_decision_list(item.decisions)} names it."
        )
    return [*out, ""]


def workflow(grounded: list[Grounded]) -> list[str]:
    """The Workflow section: where the code uses each named element."""
    used = [g for g in grounded if g.uses]
    if not used:
        return []
    out = [
        "## Workflow",
        "",
        "**TL;DR:** Where the code uses the elements the decisions name, so a reader can follow "
        "each decision into the code.",
        "",
    ]
    for item in used:
        places = ", ".join(f"`{u}`" for u in item.uses)
        out.append(f"- The code uses `{item.name}` at {places}.")
    return [*out, ""]
