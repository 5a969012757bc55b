"""How well each review role finds planted defects, with any configured model.

The bundled example (examples/) is copied to a scratch repository and its design written
there by the offline engine (``create``, then ``final``): a clean design.md and a clean
design-final.md. For each review role, defects it owns are planted into a copy (a 66-word
sentence for the readability auditor, a dangling reference for the comprehension reviewer,
a dropped decision record for the absorption check, a name the code lacks for the fidelity
check ...), and the role runs once on the planted document and once on the clean one
(``designloop review``). Scores per role:

- precision: of the findings the role reported on the planted document and not on the clean
  one, the share that name a planted defect (its rule, on its lines);
- recall: the share of planted defects some finding names;
- located: of those findings, the share whose quote stands on the line they cite.

Run it with the offline engine (no flag), or with a model, as a run takes it:

    python bench/model_eval.py --model anthropic:claude-sonnet-4-5
    python bench/model_eval.py --role-model fidelity-check=openai:gpt-5-mini --roles fidelity-check
    python bench/model_eval.py --model openai:relay --base-url http://127.0.0.1:PORT/v1

Each role's run pays for two spawns. ``--json`` prints the scores and every finding.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples"
DIRECTORY = "docs/adr/0001-request-rate-limiter"
LONG = (
    "When a tenant sends a request the middleware reads the tenant header, finds the route, "
    "builds the key, asks the store for the bucket, waits for the answer, checks the tokens "
    "that remain, decides whether to pass the request on or to refuse it, writes the decision "
    "to the log and to the metrics, and only then hands the request to the application that "
    "serves it."
)
WALL = " ".join(
    [
        "The bucket keeps two numbers for each tenant and route.",
        "One is the count of tokens left, the other the time of the last refill.",
        "On each request the store computes how many tokens the elapsed time has earned.",
        "It adds them, caps the sum at the capacity and takes one token if one is there.",
        "The result goes back to the middleware as an allowed flag and the tokens left.",
    ]
    * 5
)


@dataclass(frozen=True, slots=True)
class Defect:
    name: str
    rules: frozenset[str]
    """The rule IDs that name it."""
    text: str
    """The planted text: its lines in the planted document are where a finding must point."""
    through: str | None = None
    """When set, the span runs on to the line holding this text (a whole decision record)."""


@dataclass(slots=True)
class Plant:
    """One role's planted document: the clean text with its defects put in."""

    role: str
    document: str
    """design.md or design-final.md, relative to the design directory."""
    defects: list[Defect] = field(default_factory=list)
    edits: list[tuple[str, str, str]] = field(default_factory=list)
    """What plants them, in order: ("after", heading, paragraph) adds a paragraph after the
    section's TL;DR, ("replace", old, new) replaces text once, ("drop", start, "") removes a
    decision record."""


def plants() -> list[Plant]:
    auditor = Plant("readability-auditor", "_workflow/design.md")
    auditor.defects = [
        Defect("66-word sentence", frozenset({"hs-sentence-length"}), LONG),
        Defect("wall of text", frozenset({"hs-wall-of-text"}), WALL),
        Defect("hedge", frozenset({"hs-hedge"}), "The refill might perhaps run a little late."),
        Defect("AI-tell words", frozenset({"hs-ai-tell"}), "The store seamlessly leverages the Lua script."),
    ]
    auditor.edits = [
        ("after", "## Buckets per tenant and route", LONG),
        ("after", "## Bucket state in Redis", WALL),
        ("after", "## When Redis is unreachable", "The refill might perhaps run a little late."),
        ("after", "## Conventions", "The store seamlessly leverages the Lua script."),
    ]
    comprehension = Plant("comprehension-review", "_workflow/design.md")
    dangling = "Keys are spread over the cluster as the Key Sharding section below describes."
    tldr = "**TL;DR:** Every request is written to the audit log with its tenant and route."
    early = "Each bucket is found by its TRK."
    comprehension.defects = [
        Defect("dangling reference", frozenset({"cr-dangling-ref"}), dangling),
        Defect("TL;DR about another subject", frozenset({"cr-tldr-mismatch"}), tldr),
        Defect("acronym used before its definition", frozenset({"cr-term-order"}), early),
    ]
    comprehension.edits = [
        ("after", "## Bucket state in Redis", dangling),
        ("tldr", "## Answer refusals with 429 and a computed Retry-After", tldr),
        ("after", "## Buckets per tenant and route", early),
        ("after", "## Conventions", "The tenant route key (TRK) joins the tenant and the route."),
    ]
    absorption = Plant("absorption-check", "_workflow/design.md")
    invented = "### D9: Shard buckets across Redis clusters by tenant"
    absorption.defects = [
        Defect("dropped decision record", frozenset({"abs-missing-record"}), "## Decision Records"),
        Defect(
            "record citing no log decision",
            frozenset({"abs-bad-source"}),
            "### D6:",
            through="**Source:** research-log D99",
        ),
        Defect("invented decision", frozenset({"abs-invented-decision"}), invented),
    ]
    absorption.edits = [
        ("drop", "### D2:", ""),
        ("replace", "**Source:** research-log D6", "**Source:** research-log D99"),
        (
            "replace",
            "## Decision Records\n",
            f"## Decision Records\n\n{invented}\n**Decision:** Each tenant's buckets live on one of "
            "four Redis clusters, chosen by a hash of the tenant.\n**Alternatives rejected:** One "
            "cluster for every tenant (a single point of contention).\n**Rationale:** Spreads the "
            "load of the largest tenants.\n",
        ),
    ]
    fidelity = Plant("fidelity-check", "design-final.md")
    symbol = "The store calls `TokenBucket.refill_all` once a minute to top every bucket up."
    path = "The Lua script is kept in `ratelimit/quota_script.lua`."
    stale = "While Redis is unreachable, every request is allowed, with no limit at all."
    fidelity.defects = [
        Defect("name the code lacks", frozenset({"fid-missing-symbol"}), symbol),
        Defect("path the code lacks", frozenset({"fid-missing-path"}), path),
        Defect("superseded behaviour", frozenset({"fid-superseded", "fid-contradicted"}), stale),
    ]
    fidelity.edits = [
        ("after", "## Bucket state in Redis", f"{symbol}\n\n{path}"),
        ("after", "## When Redis is unreachable", stale),
    ]
    return [auditor, comprehension, absorption, fidelity]


def _section(text: str, heading: str) -> tuple[int, int]:
    """The start of the section's TL;DR paragraph and the end of that paragraph."""
    at = text.index(heading + "\n")
    tldr = text.index("**TL;DR:**", at)
    end = text.find("\n\n", tldr)
    return tldr, (len(text) if end < 0 else end)


def plant(clean: str, p: Plant) -> str:
    text = clean
    for op, a, b in p.edits:
        if op == "drop":
            start = text.index(a)
            end = text.find("\n### ", start + 1)
            text = text[:start] + text[end + 1 :]
        elif op == "after":
            _, end = _section(text, a)
            text = text[:end] + "\n\n" + b + text[end:]
        elif op == "tldr":
            start, end = _section(text, a)
            text = text[:start] + b + text[end:]
        elif a in text:
            text = text.replace(a, b, 1)
        else:
            raise SystemExit(f"cannot plant into {p.document}: {a!r} is not in the clean document")
    return text


def lines_of(document: str, defect: Defect) -> range:
    """The 1-based lines the defect spans in the planted document."""
    at = document.index(defect.text)
    first = document.count("\n", 0, at) + 1
    last = first + defect.text.count("\n")
    if defect.through is not None:
        last = document.count("\n", 0, document.index(defect.through, at)) + 1
    return range(first, last + 1)


def review(repo: Path, role: str, draft: Path, model_args: list[str]) -> list[dict[str, Any]]:
    """One spawn of ``role`` on ``draft``; its findings as --json gives them."""
    command = [sys.executable, "-m", "pipeline.cli", "review", role, DIRECTORY, "--draft", str(draft)]
    command += ["--runs-dir", str(repo.parent / "runs"), "--json", *model_args]
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{role}: designloop review exited {done.returncode}: {done.stderr.strip()}")
    data = json.loads(done.stdout)
    found: list[dict[str, Any]] = []
    for result in data["results"]:
        if result["status"] != "ok":
            raise SystemExit(f"{role}: INCONCLUSIVE: {result.get('error')}")
        found += result["output"]["findings"]
    return found


def _stands(f: dict[str, Any], lines: list[str]) -> bool:
    """The finding's quote stands on the line it cites."""
    line, quote = f.get("line"), f.get("quote")
    return bool(line and quote and 0 < line <= len(lines) and quote in lines[line - 1])


def _key(f: dict[str, Any]) -> tuple[str, str]:
    return (str(f.get("rule")), " ".join(str(f.get("quote") or "").split()))


def score(
    p: Plant, planted: str, found: list[dict[str, Any]], background: list[dict[str, Any]]
) -> dict[str, Any]:
    seen = {_key(f) for f in background}
    reported = [f for f in found if _key(f) not in seen]
    lines = planted.split("\n")
    spans = {d.name: lines_of(planted, d) for d in p.defects}

    def names(f: dict[str, Any], d: Defect) -> bool:
        return f.get("rule") in d.rules and f.get("line") in spans[d.name]

    hits = [f for f in reported if any(names(f, d) for d in p.defects)]
    caught = [d.name for d in p.defects if any(names(f, d) for f in reported)]
    located = [
        f
        for f in reported
        if f.get("line")
        and f.get("quote")
        and 0 < f["line"] <= len(lines)
        and f["quote"] in lines[f["line"] - 1]
    ]
    return {
        "role": p.role,
        "planted": len(p.defects),
        "reported": len(reported),
        "precision": len(hits) / len(reported) if reported else None,
        "recall": len(caught) / len(p.defects),
        "located": len(located) / len(reported) if reported else None,
        "missed": [d.name for d in p.defects if d.name not in caught],
        "findings": reported,
    }


def scratch_repo(base: Path) -> Path:
    """The example in a scratch repository, its design and final design written offline."""
    repo = base / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(EXAMPLE / "ratelimit", repo / "ratelimit")
    shutil.copytree(EXAMPLE / "docs", repo / "docs")
    for kind in ("create", "final"):
        done = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", kind, DIRECTORY, "--runs-dir", str(base / "offline-runs")],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"the offline {kind} did not pass: {done.stdout[-500:]}{done.stderr[-500:]}")
    return repo


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="every role's model (pydantic-ai string); default: offline")
    parser.add_argument("--role-model", action="append", default=[], metavar="ROLE=MODEL")
    parser.add_argument("--base-url", help="an OpenAI-compatible server (a local one, or a relay)")
    parser.add_argument("--roles", nargs="*", help="only these roles")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    model_args = [*(["--model", args.model] if args.model else [])]
    model_args += [x for rm in args.role_model for x in ("--role-model", rm)]
    model_args += ["--base-url", args.base_url] if args.base_url else []
    results = []
    with tempfile.TemporaryDirectory(prefix="designloop-eval-") as tmp:
        repo = scratch_repo(Path(tmp))
        design_dir = repo / DIRECTORY
        for p in plants():
            if args.roles and p.role not in args.roles:
                continue
            clean_path = design_dir / p.document
            clean = clean_path.read_text(encoding="utf-8")
            planted_path = clean_path.with_name(clean_path.stem + "-planted.md")
            planted = plant(clean, p)
            planted_path.write_text(planted, encoding="utf-8")
            background = review(repo, p.role, clean_path, model_args)
            found = review(repo, p.role, planted_path, model_args)
            planted_path.unlink()
            results.append(score(p, planted, found, background))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    model = args.model or "offline"
    print(f"model: {model}" + (f" ({', '.join(args.role_model)})" if args.role_model else ""))
    print("| role | planted | reported | precision | recall | located | missed |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        missed = ", ".join(r["missed"]) or "none"
        print(
            f"| {r['role']} | {r['planted']} | {r['reported']} | {_pct(r['precision'])} | "
            f"{_pct(r['recall'])} | {_pct(r['located'])} | {missed} |"
        )


if __name__ == "__main__":
    main()
