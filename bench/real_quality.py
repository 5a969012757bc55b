"""The offline reviewers on real design documents: precision, density, placement, convergence.

    python bench/real_quality.py [--labels-sample N]

Runs the readability auditor (every slice) and the comprehension reviewer on each public
design document in tests/corpus/real/, the adversarial review on the two research logs and
`designloop create` on each log, then prints:

- precision per rule and per role, from the hand labels in tests/corpus/real/labels.toml
  (correct and useful / correct but noise / wrong), for blocker+should-fix and suggestions;
- findings per 1,000 lines and blocker+should-fix per 100 lines of prose;
- findings inside code, HTML comments, link definitions or front matter (target 0);
- the share of findings with a line and a quote that is an exact substring of that line;
- the outcome and rounds of both research-log runs;
- seconds per role on a 1,000-line and an 8,500-line design built from the corpus, side by side.

``--labels-sample N`` prints N unlabelled findings (all blocking ones first, then a seeded
random sample of the rest) for labelling.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.agents.review import review_once  # noqa: E402
from pipeline.agents.roles import load_roles  # noqa: E402
from pipeline.agents.runtime import Runtime  # noqa: E402
from pipeline.formats.design_dir import DesignDir, open_design_dir  # noqa: E402
from pipeline.formats.prose import parse_prose  # noqa: E402
from pipeline.settings import Limits  # noqa: E402

REAL = ROOT / "tests" / "corpus" / "real"
LOGS = ["react-0002-new-version-of-context", "rust-3058-try-trait-v2"]
DOC_ROLES = ("readability-auditor", "comprehension-review")
BLOCKING = ("blocker", "should-fix")
JUDGEMENTS = ("useful", "noise", "wrong")


@dataclass(frozen=True, slots=True)
class Item:
    doc: str
    role: str
    rule: str
    severity: str
    line: int | None
    quote: str | None
    message: str

    @property
    def key(self) -> tuple[str, str, int | None, str | None]:
        return (self.doc, self.rule, self.line, self.quote)


def _repo(tmp: Path, name: str, design: Path | None = None, log: Path | None = None) -> DesignDir:
    repo = tmp / name
    (repo / ".git").mkdir(parents=True)
    target = repo / "docs" / "adr" / name / "_workflow"
    target.mkdir(parents=True)
    if design is not None:
        shutil.copy(design, target / "design.md")
    if log is not None:
        shutil.copy(log, target / "research-log.md")
    return open_design_dir(target.parent)


def _review(d: DesignDir, role: str) -> list[Any]:
    runtime = Runtime(repo_root=d.repo_root, roles=load_roles(d.repo_root), model_specs={})
    run = asyncio.run(review_once(runtime, role, d, Limits()))
    bad = [r.error for r in run.results if r.status != "ok"]
    if bad:
        raise SystemExit(f"{role} on {d.root.name} was INCONCLUSIVE: {bad}")
    return [f for r in run.results if r.review for f in r.review.findings]


def documents() -> list[Path]:
    return sorted(p for p in REAL.glob("*.md") if p.name != "README.md")


def collect(tmp: Path) -> tuple[list[Item], dict[str, list[str]]]:
    items: list[Item] = []
    texts: dict[str, list[str]] = {}
    for doc in documents():
        d = _repo(tmp, doc.stem, design=doc)
        texts[doc.name] = d.design.read_text(encoding="utf-8").split("\n")
        for role in DOC_ROLES:
            items += [
                Item(doc.name, role, f.rule, f.severity, f.line, f.quote, f.message) for f in _review(d, role)
            ]
    for name in LOGS:
        log = REAL / "logs" / name / "research-log.md"
        d = _repo(tmp, "log-" + name, log=log)
        key = f"logs/{name}/research-log.md"
        texts[key] = log.read_text(encoding="utf-8").split("\n")
        items += [
            Item(key, "adversarial-review", f.rule, f.severity, f.line, f.quote, f.message)
            for f in _review(d, "adversarial-review")
        ]
    return items, texts


def research_log_runs(tmp: Path) -> list[tuple[str, dict[str, Any]]]:
    """`designloop create` on each research log, as a user runs it (the offline engine)."""
    out = []
    for name in LOGS:
        d = _repo(tmp, "run-" + name, log=REAL / "logs" / name / "research-log.md")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline.cli",
                "create",
                str(d.root),
                "--json",
                "--runs-dir",
                str(tmp / "runs"),
            ],
            cwd=d.repo_root,
            capture_output=True,
            text=True,
            check=False,
        )
        data = (
            json.loads(done.stdout)
            if done.stdout.strip().startswith("{")
            else {"outcome": done.stderr[-300:]}
        )
        data["exit_code"] = done.returncode
        design = d.design.read_text(encoding="utf-8").split("\n") if d.design.is_file() else []
        for role in ("absorption-check", "comprehension-review", "readability-auditor"):
            if design:
                data.setdefault("after", {})[role] = [
                    (f.severity, f.rule, f.line, f.quote) for f in _review(d, role) if f.severity in BLOCKING
                ]
        data["design_lines"] = len(design)
        out.append((name, data))
    return out


def load_labels() -> dict[tuple[str, str, int | None, str | None], tuple[str, str]]:
    path = REAL / "labels.toml"
    if not path.is_file():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {
        (x["doc"], x["rule"], x.get("line"), x.get("quote")): (x["judgement"], x["reason"])
        for x in data["label"]
    }


def _precision(rows: list[str]) -> str:
    if not rows:
        return "-"
    useful = rows.count("useful") / len(rows)
    correct = (rows.count("useful") + rows.count("noise")) / len(rows)
    return f"{useful:.2f} ({correct:.2f})"


def precision_tables(items: list[Item], labels: dict[Any, tuple[str, str]]) -> tuple[str, list[Item]]:
    by_rule: dict[tuple[str, str, bool], list[str]] = defaultdict(list)
    by_role: dict[tuple[str, bool], list[str]] = defaultdict(list)
    unlabelled_blocking = []
    for item in items:
        label = labels.get(item.key)
        blocking = item.severity in BLOCKING
        if label is None:
            if blocking:
                unlabelled_blocking.append(item)
            continue
        by_rule[(item.role, item.rule, blocking)].append(label[0])
        by_role[(item.role, blocking)].append(label[0])
    counts = Counter((i.role, i.rule, i.severity in BLOCKING) for i in items)
    lines = [
        "precision = correct and useful / labelled (in brackets: correct, useful or noise)",
        "",
        "| role | rule | level | reported | labelled | precision |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (role, rule, blocking), n in sorted(counts.items()):
        rows = by_rule.get((role, rule, blocking), [])
        level = "blocker+should-fix" if blocking else "suggestion"
        lines.append(f"| {role} | {rule} | {level} | {n} | {len(rows)} | {_precision(rows)} |")
    lines += ["", "| role | level | labelled | precision |", "| --- | --- | --- | --- |"]
    for (role, blocking), rows in sorted(by_role.items()):
        level = "blocker+should-fix" if blocking else "suggestion"
        lines.append(f"| {role} | {level} | {len(rows)} | {_precision(rows)} |")
    return "\n".join(lines), unlabelled_blocking


def placement(items: list[Item], texts: dict[str, list[str]]) -> tuple[str, int, int]:
    """Density, findings in non-prose, and exact location share."""
    total_lines = prose_lines = 0
    non_prose: dict[str, set[int]] = {}
    for name, lines in texts.items():
        view = parse_prose("\n".join(lines), lines)
        total_lines += len(lines)
        prose_lines += len({n for b in view.blocks for n in range(b.start, b.end + 1)})
        non_prose[name] = view.non_prose_lines()
    inside = [i for i in items if i.line is not None and i.line in non_prose.get(i.doc, set())]
    located = [
        i
        for i in items
        if i.line is not None
        and i.quote
        and 0 < i.line <= len(texts[i.doc])
        and i.quote in texts[i.doc][i.line - 1]
    ]
    blocking = [i for i in items if i.severity in BLOCKING]
    out = [
        f"documents and logs: {len(texts)}, lines: {total_lines}, lines of prose: {prose_lines}",
        f"findings: {len(items)} ({len(items) * 1000 / total_lines:.1f} per 1,000 lines); "
        f"blocker+should-fix: {len(blocking)} ({len(blocking) * 1000 / total_lines:.1f} per 1,000 lines, "
        f"{len(blocking) * 100 / max(prose_lines, 1):.2f} per 100 lines of prose)",
        f"findings inside code, HTML comments, link definitions or front matter: {len(inside)}",
        f"findings with a line and an exact quote of that line: {len(located)} of {len(items)} "
        f"({len(located) / max(len(items), 1):.0%})",
    ]
    for item in inside[:10]:
        out.append(f"  inside non-prose: {item.doc}:{item.line} {item.rule} {item.quote!r}")
    return "\n".join(out), len(inside), len(located)


def big_design(lines: int) -> str:
    """A design of about ``lines`` lines, made of the corpus documents end to end."""
    out: list[str] = []
    docs = [p.read_text(encoding="utf-8").split("\n") for p in documents()]
    index = 0
    while len(out) < lines:
        out += docs[index % len(docs)] + [""]
        index += 1
    return "\n".join(out[:lines]) + "\n"


def timings(tmp: Path) -> str:
    rows = ["| role | 1,000 lines (s) | 8,500 lines (s) | ratio |", "| --- | --- | --- | --- |"]
    times: dict[int, dict[str, float]] = {}
    for size in (1000, 8500):
        source = tmp / f"big-{size}.md"
        source.write_text(big_design(size), encoding="utf-8")
        d = _repo(tmp, f"big-{size}", design=source)
        times[size] = {}
        for role in DOC_ROLES:
            start = time.perf_counter()
            _review(d, role)
            times[size][role] = time.perf_counter() - start
    for role in DOC_ROLES:
        small, large = times[1000][role], times[8500][role]
        rows.append(f"| {role} | {small:.2f} | {large:.2f} | {large / small:.1f}x |")
    return "\n".join(rows)


def print_sample(items: list[Item], labels: dict[Any, Any], texts: dict[str, list[str]], size: int) -> None:
    todo = [i for i in items if i.key not in labels]
    blocking = [i for i in todo if i.severity in BLOCKING]
    rest = [i for i in todo if i.severity not in BLOCKING]
    random.Random(10).shuffle(rest)
    for item in (blocking + rest)[:size]:
        context = texts[item.doc][item.line - 1] if item.line else ""
        print(json.dumps({**dataclasses.asdict(item), "context": context}, ensure_ascii=False))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--labels-sample", type=int, default=0)
    args = parser.parse_args()
    labels = load_labels()
    with tempfile.TemporaryDirectory() as tmp:
        items, texts = collect(Path(tmp))
        if args.labels_sample:
            print_sample(items, labels, texts, args.labels_sample)
            return
        table, unlabelled = precision_tables(items, labels)
        print(table)
        print(f"\nblocker+should-fix findings without a label: {len(unlabelled)}")
        for item in unlabelled:
            print(f"  {item.doc}:{item.line} {item.rule} {item.quote!r}")
        stale = [k for k in labels if k not in {i.key for i in items}]
        print(f"labels matching no current finding: {len(stale)}")
        print()
        print(placement(items, texts)[0])
        print("\nresearch-log runs (designloop create, offline engine):")
        for name, data in research_log_runs(Path(tmp)):
            after = {role: len(found) for role, found in data.get("after", {}).items()}
            print(
                f"  {name}: {data.get('outcome')} in {data.get('rounds')} round(s), "
                f"exit {data['exit_code']}, "
                f"{data['design_lines']}-line design; blocker+should-fix on a fresh review of it: {after}"
            )
        print("\nseconds per role (the prose view and every rule are linear in the document):")
        print(timings(Path(tmp)))


if __name__ == "__main__":
    main()
