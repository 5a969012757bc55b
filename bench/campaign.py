"""The hostile-input and fault campaign, measured in one run.

    python bench/campaign.py [--skip-disk] [--only FAMILY ...]

Every case of the test suite's campaign, counted rather than asserted:

- bad input: every case of tests/test_bad_input.py and tests/test_bad_input_campaign.py on a
  fresh repository each; counted: exit 2, a `what to do:` line, no traceback, and whether any
  file of the repository or the runs directory was created or changed (goal: all, all, all,
  none);
- links: `create`, `final`, `edit` and `check --fix` with each output a link to a file outside
  the repository, and with the design directory's `_workflow/reviews` linked out; counted: files
  outside the repository that changed (goal 0);
- full disk (root only, on a 4 MiB tmpfs): `create`, `final` and `edit` with the disk full
  before the run, and with the disk filling during the run at eight levels; counted: exit 70,
  debris (locks, partial runs, temporary files), runs that do not finish once space is freed
  (goal 0 each);
- confinement: every probe of tests/test_confinement_campaign.py by every role; counted:
  tool results holding research-log text (cold roles) or a runs directory's contents (any
  role) (goal 0);
- the hostile-input families (nesting depth, ledger paths, symlinks in PSI, deep JSON,
  duplicate keys, forged digests, kill debris, obfuscated copies, resume over later work, a
  cold CI cache, the one confinement guard): each trial of each family is one case of the test
  module that reproduces it, run whole; counted per family: trials and failures (goal 0
  failures). A property test counts as one trial (its generated documents are in its own
  figure).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import test_bad_input  # noqa: E402
import test_bad_input_campaign  # noqa: E402
import test_confinement_campaign as probes  # noqa: E402
import test_full_disk as disk  # noqa: E402
from agentkit import make_repo, runtime  # noqa: E402
from conftest import STAMP, run_cli  # noqa: E402
from test_confinement import context  # noqa: E402
from test_store import snapshot  # noqa: E402

from pipeline.agents.readable import store_dirs  # noqa: E402

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "DESIGNLOOP_MODEL", "OPENAI_BASE_URL")


@contextlib.contextmanager
def place(path: Path) -> Iterator[None]:
    here = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(here)


def bad_input() -> Counter[str]:
    cases = {**test_bad_input.CASES, **test_bad_input_campaign.CASES}
    tally: Counter[str] = Counter()
    for name, case in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            d = make_repo(Path(tmp))
            world = test_bad_input.World(Path(tmp), d)
            with place(d.repo_root):
                try:
                    args = case(world)
                    before = snapshot(Path(tmp))
                    result = run_cli(args)
                    after = snapshot(Path(tmp))
                finally:
                    while test_bad_input.HELD:
                        test_bad_input.HELD.pop().release()
        tally["cases"] += 1
        tally["exit 2"] += result.code == 2
        tally["exit 70"] += result.code == 70
        tally["what to do"] += "what to do:" in result.err
        tally["traceback"] += "Traceback" in result.err
        tally["wrote before exit 2"] += after != before
        if result.code != 2 or after != before:
            print(f"  case {name!r}: exit {result.code}; {result.err.strip()[:120]}")
    return tally


def links() -> Counter[str]:
    tally: Counter[str] = Counter()
    commands: dict[str, Callable[[object], list[str]]] = {
        "create design.md": lambda d: ["create", str(d.root)],  # type: ignore[attr-defined]
        "final design-final.md": lambda d: ["final", str(d.root)],  # type: ignore[attr-defined]
        "edit design.md": lambda d: disk.COMMANDS["edit"](d),  # type: ignore[arg-type]
    }
    targets = {"create design.md": "design", "final design-final.md": "final", "edit design.md": "design"}
    for name, args in commands.items():
        for what in ("file", "reviews", "review log"):
            with tempfile.TemporaryDirectory() as tmp:
                d = make_repo(Path(tmp))
                outside = Path(tmp) / "outside"
                outside.mkdir()
                precious = outside / "precious.txt"
                precious.write_text("the user's own\n")
                if what == "file":
                    link = getattr(d, targets[name])
                    link.unlink(missing_ok=True)
                    link.symlink_to(precious)
                elif what == "reviews":
                    shutil.rmtree(d.reviews, ignore_errors=True)
                    d.reviews.symlink_to(outside)
                else:
                    d.mutations.symlink_to(precious)
                before = snapshot(outside)
                with place(d.repo_root):
                    result = run_cli([*args(d), "--runs-dir", str(Path(tmp) / "runs")])
                tally["cases"] += 1
                tally["exit 2"] += result.code == 2
                tally["writes outside the repository"] += snapshot(outside) != before
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        (repo / ".git").mkdir(parents=True)
        precious = Path(tmp) / "precious.md"
        precious.write_text(f"{STAMP}\n# T\n\n## Overview\n\nIt works (per D27).\n")
        (repo / "design.md").symlink_to(precious)
        before = precious.read_bytes()
        result = run_cli(["check", "--design-path", str(repo / "design.md"), "--fix"])
        tally["cases"] += 1
        tally["exit 2"] += result.code == 2
        tally["writes outside the repository"] += precious.read_bytes() != before
    return tally


def full_disk() -> Counter[str] | str:
    tally: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        point = Path(tmp) / "disk"
        reason = disk._mount(point)
        if reason is not None:
            return reason
        try:
            for command in ("create", "final", "edit"):
                for leave in [None, *disk.LEVELS]:
                    _disk_case(point, command, leave, tally)
        finally:
            os.system(f"umount -l {point}")
    return tally


def _disk_case(point: Path, command: str, leave: int | None, tally: Counter[str]) -> None:
    """One case: ``leave`` None is a disk full before the run (the pre-flight's case)."""
    import pipeline.runs.setup as setup

    for child in point.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    d = make_repo(point)
    runs = point / "repo" / "runs"
    if command != "create":
        run_cli(["create", str(d.root), "--runs-dir", str(runs), "--json"])
    earlier = disk._debris(point)
    saved = setup.check_run_space
    if leave is not None:
        setup.check_run_space = lambda *a, **k: None  # type: ignore[assignment]
    filler = disk._fill(point, leave or 0)
    try:
        result = run_cli([*disk.COMMANDS[command](d), "--runs-dir", str(runs), "--json"])
    finally:
        setup.check_run_space = saved
    tally["cases"] += 1
    tally["exit 2"] += result.code == 2
    tally["exit 70"] += result.code == 70
    tally["debris"] += disk._debris(point) != earlier
    filler.unlink()
    if result.code == 2 and "designloop resume" in result.err:
        run_id = result.err.split("designloop resume ", 1)[1].split()[0]
        result = run_cli(["resume", run_id, "--runs-dir", str(runs), "--json"])
    elif result.code == 2:
        result = run_cli([*disk.COMMANDS[command](d), "--runs-dir", str(runs), "--json"])
    tally["did not finish once freed"] += result.code not in (0, 1)


def confinement() -> Counter[str]:
    tally: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        d = make_repo(Path(tmp))
        d.design.unlink()
        with place(d.repo_root):
            run_cli(["create", str(d.root), "--runs-dir", str(d.repo_root / "old-runs"), "--json"])
            run_cli(["final", str(d.root), "--json"])
        shutil.copytree(d.repo_root / "old-runs", d.repo_root / "backup" / "runs-copy")
        planted = probes._plant(d, Path(tmp))
        stores = store_dirs(d.repo_root)
        for role in probes.ALL:
            ctx = context(
                d, role, d.repo_root / "runs", runtime(d, private_dirs=(d.repo_root / "runs", *stores))
            )
            reviewed = "".join(p.read_text() for p in sorted(ctx.deps.reviewed) if p.is_file())
            detector = probes.Detector.of(d.research_log.read_text(), reviewed)
            for _, call in probes._calls(ctx, role, planted, d):
                result = call()
                tally["probes"] += 1
                tally["cold-role probes"] += role in probes.COLD
                tally["log leaks"] += role in probes.COLD and detector.leaks(result)
                tally["runs-directory leaks"] += bool(probes.RUN_RECORD.search(result))
    return tally


FAMILIES: dict[str, list[str]] = {
    "nesting depth": ["tests/test_markdown_limits.py"],
    "ledger paths": [
        "tests/test_confinement_guard.py::test_a_ledger_naming_a_file_outside_is_damaged",
        "tests/test_confinement_guard.py::test_drift_sarif_never_carries_a_line_from_outside",
        "tests/test_confinement_guard.py::test_a_recorded_path_is_relative_and_stays_inside",
    ],
    "symlinks in PSI": [
        "tests/test_confinement_guard.py::test_psi_neither_lists_nor_quotes_a_file_linked_out",
        "tests/test_confinement_guard.py::test_a_link_inside_the_repository_is_read",
        "tests/test_confinement_guard.py::test_the_read_refuses_a_fifo_and_a_file_past_its_limit",
    ],
    "the one guard": [
        "tests/test_confinement_guard.py::test_every_module_that_opens_a_file_goes_through_the_guard",
        "tests/test_confinement_guard.py::test_the_enumeration_sees_a_bypass",
    ],
    "deep JSON": ["tests/test_bounded_input.py", "-k", "depth or nested or 100000 or brackets"],
    "duplicate keys": ["tests/test_bounded_input.py", "-k", "twice or key"],
    "forged digests": ["tests/test_tamper.py"],
    "kill debris": ["tests/test_debris.py"],
    "obfuscated copies": ["tests/test_cold_read_folding.py"],
    "resume over later work": ["tests/test_later_work.py", "-k", "resume or batch_shows or who_started"],
    "a cold CI cache": ["tests/test_cold_cache.py"],
}
"""Each hostile-input family and the test cases that are its trials."""


class _Tally:
    """A pytest plugin that counts the cases run and the ones that failed."""

    def __init__(self) -> None:
        self.figures: Counter[str] = Counter()
        self.failed: list[str] = []

    def pytest_runtest_logreport(self, report: object) -> None:
        when, outcome = getattr(report, "when", ""), getattr(report, "outcome", "")
        if when == "call" or (when == "setup" and outcome != "passed"):
            self.figures["trials"] += 1
            if outcome == "failed":
                self.figures["failures"] += 1
                self.failed.append(str(getattr(report, "nodeid", "?")))


def family(args: list[str]) -> Callable[[], Counter[str] | str]:
    def run() -> Counter[str] | str:
        import pytest

        tally = _Tally()
        here = Path.cwd()
        os.chdir(ROOT)
        try:
            pytest.main(
                [*args, "-q", "-p", "no:cacheprovider", "-n", "0", "--no-header", "-o", "addopts="],
                plugins=[tally],
            )
        finally:
            os.chdir(here)
        for name in tally.failed:
            print(f"  failed: {name}")
        tally.figures.setdefault("failures", 0)
        return tally.figures

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-disk", action="store_true", help="leave out the tmpfs cases")
    parser.add_argument("--only", nargs="*", help="run only these sections or families")
    args = parser.parse_args()
    for key in KEYS:
        os.environ.pop(key, None)
    sections: dict[str, Callable[[], Counter[str] | str]] = {
        "bad input": bad_input,
        "links": links,
        "confinement": confinement,
    }
    if not args.skip_disk:
        sections["full disk"] = full_disk
    sections |= {name: family(cases) for name, cases in FAMILIES.items()}
    if args.only:
        sections = {name: run for name, run in sections.items() if name in args.only}
    for name, run in sections.items():
        figures = run()
        if isinstance(figures, str):
            print(f"{name}: skipped ({figures})")
            continue
        print(f"{name}: " + ", ".join(f"{key} {value}" for key, value in figures.items()))


if __name__ == "__main__":
    main()
