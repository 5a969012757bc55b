"""The offline reviewers on real design documents: precision, density, placement, convergence.

    python bench/real_quality.py [--set NAME ...] [--labels-sample N] [--no-timings]

tests/corpus/real/manifest.toml puts every document and research log in a set: ``original``
(the first 25 documents and 2 logs), ``tuning`` (documents and a log the rules were tuned
on) and ``held-out`` (documents and logs from other sources, run only to measure). By
default the bench runs ``original`` and ``tuning``; ``--set held-out`` runs the held-out
set alone. For the chosen sets it runs the readability auditor (every slice) and the
comprehension reviewer on each document, the adversarial review on each research log and
`designloop create` on each log, then prints:

- precision per rule and per role, from the hand labels (tests/corpus/real/labels.toml, and
  labels-held-out.toml for the held-out set: correct and useful / correct but noise /
  wrong), for blocker+should-fix and suggestions;
- findings, blocker+should-fix and suggestions per 1,000 lines, and blocker+should-fix per
  100 lines of prose;
- findings inside code, HTML comments, link definitions or front matter (target 0);
- the share of findings with a line and a quote that is an exact substring of that line;
- for each research-log run: its outcome and rounds, every field of every decision found in
  the design (whitespace aside), and every Decision line's tokens found byte for byte;
- seconds per role on a 1,000-line and an 8,500-line design built from the corpus, side by side.

``--labels-sample N`` prints N unlabelled findings (all blocking ones first, then a random
sample of the suggestions, shuffled with a fixed seed) for labelling. ``--export FILE``
writes, for a reader who has not seen the engine, every blocker and should-fix finding and a
sample of ``--export-suggestions`` suggestions (drawn with ``--seed``), one JSON object per
line: id, role, severity, rule, file, line, quote, message and three lines of context either
side.

``held-out-2`` (Matrix's spec proposals, TensorFlow's RFCs, Ethereum's EIPs), ``held-out-3``
(PyTorch's RFCs, the WebAssembly component model's design documents, Lightning's BOLTs),
``held-out-4`` (Flux's RFCs, Ray's enhancement proposals, Dapr's proposals, TiKV's RFCs) and
``held-out-5`` (Prometheus's, Thanos's, Argo CD's and Kubeflow's proposals) were
each exported so once the engine was frozen and judged by an independent reader: right,
not-worth-it or wrong, kept in labels-held-out-N.toml as useful, noise and wrong.
``held-out-6`` (Cluster API's proposals, Crossplane's design documents, Kyverno's design
proposals, cert-manager's design documents) was chosen and committed before the engine read
it; until labels-held-out-6.toml exists its findings all count as unlabelled.
``held-out-7`` (Bevy's, npm's, Neon's and RisingWave's RFCs) was chosen and committed the
same way; until labels-held-out-7.toml exists its findings all count as unlabelled.
``held-out-8`` (Apache TVM's RFCs, Scala's improvement proposals, OpenXLA's RFCs, the OpenAPI
Specification's proposals) was chosen and committed the same way; until labels-held-out-8.toml
exists its findings all count as unlabelled.
``held-out-9`` (Cedar's RFCs, Crystal's RFCs, Delta Lake's protocol RFCs, JAX's enhancement
proposals) was chosen and committed the same way; until labels-held-out-9.toml exists its
findings all count as unlabelled.
``held-out-10`` (Qiskit's RFCs, conda's enhancement proposals, Wagtail's RFCs, Buck2's RFCs)
was chosen and committed the same way; until labels-held-out-10.toml exists its findings all
count as unlabelled.
``held-out-11`` (Zarr's enhancement proposals, Julia's enhancement proposals, D's improvement
proposals, Mozilla application services' architecture decision records) was chosen and
committed the same way; until labels-held-out-11.toml exists its findings all count as
unlabelled.
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
SETS = (
    "original",
    "tuning",
    "held-out",
    "held-out-2",
    "held-out-3",
    "held-out-4",
    "held-out-5",
    "held-out-6",
    "held-out-7",
    "held-out-8",
    "held-out-9",
    "held-out-10",
    "held-out-11",
)
DEFAULT_SETS = ("original", "tuning")
LABEL_FILES = {
    "held-out": "labels-held-out.toml",
    "held-out-2": "labels-held-out-2.toml",
    "held-out-3": "labels-held-out-3.toml",
    "held-out-4": "labels-held-out-4.toml",
    "held-out-5": "labels-held-out-5.toml",
    "held-out-6": "labels-held-out-6.toml",
    "held-out-7": "labels-held-out-7.toml",
    "held-out-8": "labels-held-out-8.toml",
    "held-out-9": "labels-held-out-9.toml",
    "held-out-10": "labels-held-out-10.toml",
    "held-out-11": "labels-held-out-11.toml",
}
"""Labels per set; every other set's labels are in labels.toml."""
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


def _manifest() -> dict[str, Any]:
    return tomllib.loads((REAL / "manifest.toml").read_text(encoding="utf-8"))


def documents(sets: tuple[str, ...] = SETS) -> list[Path]:
    return sorted(REAL / d["file"] for d in _manifest()["doc"] if d.get("set", "original") in sets)


def logs(sets: tuple[str, ...]) -> list[str]:
    return sorted(entry["name"] for entry in _manifest()["log"] if entry["set"] in sets)


def collect(tmp: Path, sets: tuple[str, ...]) -> tuple[list[Item], dict[str, list[str]]]:
    items: list[Item] = []
    texts: dict[str, list[str]] = {}
    for doc in documents(sets):
        d = _repo(tmp, doc.stem, design=doc)
        texts[doc.name] = d.design.read_text(encoding="utf-8").split("\n")
        for role in DOC_ROLES:
            items += [
                Item(doc.name, role, f.rule, f.severity, f.line, f.quote, f.message) for f in _review(d, role)
            ]
    for name in logs(sets):
        log = REAL / "logs" / name / "research-log.md"
        d = _repo(tmp, "log-" + name, log=log)
        key = f"logs/{name}/research-log.md"
        texts[key] = log.read_text(encoding="utf-8").split("\n")
        items += [
            Item(key, "adversarial-review", f.rule, f.severity, f.line, f.quote, f.message)
            for f in _review(d, "adversarial-review")
        ]
    return items, texts


def _flat(text: str) -> str:
    return " ".join(text.split())


def kept(log_text: str, design: str) -> tuple[list[str], list[str]]:
    """What of the log's decisions the design lost: every field's value (whitespace aside),
    and every token of every Decision line, byte for byte, in the decision's record (or, for
    a decision without one, on the line that names its title)."""
    from pipeline.offline.logtext import log_from_text
    from pipeline.offline.text import doc_from_text

    flat = _flat(design)
    records = {r.source: r for r in doc_from_text(design).d_records() if r.source is not None}
    fields, tokens = [], []
    for decision in log_from_text(log_text).decisions:
        for name, field in decision.fields.items():
            if field.value and _flat(field.value) not in flat:
                fields.append(f"D{decision.number} {name}")
        record = records.get(decision.number)
        where = record.fields["Decision"].value if record and "Decision" in record.fields else None
        if where is None:
            where = next((line for line in design.split("\n") if decision.title in line), "")
        for token in (decision.value("Decision") or "").split():
            if token not in where.split():
                tokens.append(f"D{decision.number} {token!r}")
    return fields, tokens


def research_log_runs(tmp: Path, sets: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    """`designloop create` on each research log, as a user runs it (the offline engine)."""
    out = []
    for name in logs(sets):
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
        text = d.design.read_text(encoding="utf-8") if d.design.is_file() else ""
        design = text.split("\n") if text else []
        data["lost_fields"], data["lost_tokens"] = kept(
            (REAL / "logs" / name / "research-log.md").read_text(encoding="utf-8"), text
        )
        for role in ("absorption-check", "comprehension-review", "readability-auditor"):
            if design:
                data.setdefault("after", {})[role] = [
                    (f.severity, f.rule, f.line, f.quote) for f in _review(d, role) if f.severity in BLOCKING
                ]
        data["design_lines"] = len(design)
        out.append((name, data))
    return out


def load_labels(sets: tuple[str, ...]) -> dict[tuple[str, str, int | None, str | None], tuple[str, str]]:
    names = {LABEL_FILES.get(s, "labels.toml") for s in sets}
    out = {}
    for name in sorted(names):
        path = REAL / name
        if not path.is_file():
            continue
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for x in data.get("label", []):
            out[(x["doc"], x["rule"], x.get("line"), x.get("quote"))] = (x["judgement"], x["reason"])
    return out


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
    per = 1000 / max(total_lines, 1)
    out = [
        f"documents and logs: {len(texts)}, lines: {total_lines}, lines of prose: {prose_lines}",
        f"findings: {len(items)} ({len(items) * per:.1f} per 1,000 lines); "
        f"blocker+should-fix: {len(blocking)} ({len(blocking) * per:.1f} per 1,000 lines, "
        f"{len(blocking) * 100 / max(prose_lines, 1):.2f} per 100 lines of prose); "
        f"suggestions: {len(items) - len(blocking)} "
        f"({(len(items) - len(blocking)) * per:.1f} per 1,000 lines)",
        f"findings inside code, HTML comments, link definitions or front matter: {len(inside)}",
        f"findings with a line and an exact quote of that line: {len(located)} of {len(items)} "
        f"({len(located) / max(len(items), 1):.0%})",
    ]
    for item in inside[:10]:
        out.append(f"  inside non-prose: {item.doc}:{item.line} {item.rule} {item.quote!r}")
    return "\n".join(out), len(inside), len(located)


def big_design(lines: int) -> str:
    """A design of about ``lines`` lines, made of the original corpus documents end to end."""
    out: list[str] = []
    docs = [p.read_text(encoding="utf-8").split("\n") for p in documents(("original",))]
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


def export(items: list[Item], texts: dict[str, list[str]], path: Path, size: int, seed: int) -> int:
    """Every blocking finding and a seeded sample of ``size`` suggestions, for a reader."""
    blocking = [i for i in items if i.severity in BLOCKING]
    rest = [i for i in items if i.severity not in BLOCKING]
    sample = random.Random(seed).sample(rest, min(size, len(rest)))
    chosen = blocking + sorted(sample, key=lambda i: (i.doc, i.line or 0, i.rule))
    with path.open("w", encoding="utf-8") as out:
        for n, item in enumerate(chosen, start=1):
            lines = texts[item.doc]
            at = item.line or 1
            context = "\n".join(
                f"{k}: {lines[k - 1]}" for k in range(max(1, at - 3), min(len(lines), at + 3) + 1)
            )
            record = {
                "id": f"F{n:03d}",
                "role": item.role,
                "severity": item.severity,
                "rule": item.rule,
                "file": f"tests/corpus/real/{item.doc}",
                "line": item.line,
                "quote": item.quote,
                "message": item.message,
                "context": context,
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(chosen)


READER_LABELS = {"right": "useful", "not-worth-it": "noise", "wrong": "wrong"}
"""The independent reader's labels, in the judgements of labels.toml."""


def import_labels(findings: Path, labels: Path, out: Path) -> int:
    """Join an independent reader's labels (id, label, reason) with the exported findings
    they judge, and write them as a labels file keyed like the others (doc, rule, line,
    quote), each naming its labeller."""
    exported = {
        row["id"]: row
        for row in (json.loads(x) for x in findings.read_text(encoding="utf-8").splitlines() if x.strip())
    }
    judged = [json.loads(x) for x in labels.read_text(encoding="utf-8").splitlines() if x.strip()]
    name = out.stem.removeprefix("labels-")
    blocks = [
        f"# Labels for the offline reviewers' findings on the {name} set of tests/corpus/real\n"
        f"# (bench/real_quality.py --set {name}), made once, on the engine frozen before any of\n"
        "# its findings on this set were looked at, by an independent reader who had not seen the\n"
        "# engine's code. The sample is every should-fix and a seeded sample of the suggestions\n"
        "# (bench/real_quality.py --export). The reader's labels right / not-worth-it / wrong are kept\n"
        "# as useful / noise / wrong, the judgements of labels.toml, with the reader's reason.\n"
    ]
    for label in sorted(judged, key=lambda x: str(x["id"])):
        row = exported[label["id"]]
        fields = {
            "id": label["id"],
            "doc": row["file"].removeprefix("tests/corpus/real/"),
            "rule": row["rule"],
            "line": row["line"],
            "quote": row["quote"],
            "role": row["role"],
            "severity": row["severity"],
            "judgement": READER_LABELS[label["label"]],
            "reason": " ".join(str(label.get("reason", "")).split()),
            "labeller": "independent reader",
        }
        body = "\n".join(
            f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items() if v is not None
        )
        blocks.append(f"[[label]]\n{body}\n")
    out.write_text("\n".join(blocks), encoding="utf-8")
    return len(judged)


def useful_kept(sets: tuple[str, ...], items: list[Item]) -> list[str]:
    """Per set, the findings its reader judged useful that the engine still reports (the same
    document and rule, at the same line or with the same quote, at any severity), and those it
    no longer reports."""
    out = []
    for name in sets:
        path = REAL / LABEL_FILES.get(name, "labels.toml")
        if not path.is_file():
            continue
        docs = {doc.name for doc in documents((name,))} | {f"logs/{n}/research-log.md" for n in logs((name,))}
        rows = tomllib.loads(path.read_text(encoding="utf-8")).get("label", [])
        useful = [x for x in rows if x["judgement"] == "useful" and x["doc"] in docs]
        if not useful:
            continue
        missing = [
            x
            for x in useful
            if not any(
                i.doc == x["doc"]
                and i.rule == x["rule"]
                and (i.line == x.get("line") or i.quote == x.get("quote"))
                for i in items
            )
        ]
        out.append(f"{name}: {len(useful) - len(missing)} of {len(useful)} useful findings still reported")
        out += [f"  not reported: {x['doc']}:{x.get('line')} {x['rule']} {x.get('quote')!r}" for x in missing]
    return out


def worth_reading(items: list[Item], labels: dict[Any, tuple[str, str]]) -> str:
    """Suggestions per role: how many of the labelled ones were worth an author's time."""
    rows = defaultdict(list)
    for item in items:
        label = labels.get(item.key)
        if label is not None and item.severity not in BLOCKING:
            rows[item.role].append(label[0])
            rows["all"].append(label[0])
    return "; ".join(
        f"{role}: {judged.count('useful')} of {len(judged)} ({judged.count('useful') / len(judged):.2f})"
        for role, judged in sorted(rows.items())
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", action="append", choices=SETS, dest="sets")
    parser.add_argument("--labels-sample", type=int, default=0)
    parser.add_argument("--no-timings", action="store_true")
    parser.add_argument("--export", type=Path)
    parser.add_argument("--export-suggestions", type=int, default=30)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--import-labels", nargs=3, type=Path, metavar=("FINDINGS", "LABELS", "OUT"))
    parser.add_argument(
        "--useful-kept", action="store_true", help="per set, the findings judged useful still reported"
    )
    args = parser.parse_args()
    if args.import_labels:
        print(f"{import_labels(*args.import_labels)} labels written to {args.import_labels[2]}")
        return
    sets = tuple(args.sets or DEFAULT_SETS)
    labels = load_labels(sets)
    with tempfile.TemporaryDirectory() as tmp:
        items, texts = collect(Path(tmp), sets)
        if args.labels_sample:
            print_sample(items, labels, texts, args.labels_sample)
            return
        if args.useful_kept:
            print("\n".join(useful_kept(sets, items)))
            return
        if args.export:
            written = export(items, texts, args.export, args.export_suggestions, args.seed)
            print(f"{written} findings written to {args.export}")
            return
        table, unlabelled = precision_tables(items, labels)
        print(table)
        print(f"\nsuggestions worth an author's time (labelled): {worth_reading(items, labels) or '-'}")
        print(f"\nblocker+should-fix findings without a label: {len(unlabelled)}")
        for item in unlabelled:
            print(f"  {item.doc}:{item.line} {item.rule} {item.quote!r}")
        stale = [k for k in labels if k not in {i.key for i in items}]
        print(f"labels matching no current finding: {len(stale)}")
        print()
        print(placement(items, texts)[0])
        print("\nresearch-log runs (designloop create, offline engine):")
        for name, data in research_log_runs(Path(tmp), sets):
            after = {role: len(found) for role, found in data.get("after", {}).items()}
            print(
                f"  {name}: {data.get('outcome')} in {data.get('rounds')} round(s), "
                f"exit {data['exit_code']}, "
                f"{data['design_lines']}-line design; blocker+should-fix on a fresh review of it: {after}; "
                f"fields lost: {data['lost_fields'] or 'none'}; "
                f"Decision tokens lost: {data['lost_tokens'] or 'none'}"
            )
        if not args.no_timings:
            print("\nseconds per role (the prose view and every rule are linear in the document):")
            print(timings(Path(tmp)))


if __name__ == "__main__":
    main()
