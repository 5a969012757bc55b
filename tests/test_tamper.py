"""Tamper evidence without the run store: in a clone or CI, a review-log digest rewritten to the
bytes of a hand edit no longer makes ``approve`` and ``ready`` pass. The chain catches an entry
edited in place; the repository's history catches a committed entry rewritten with its chain
recomputed. What neither can catch is stated in docs/lifecycle.md (the trust model)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from agentkit import make_repo
from conftest import run_cli

from pipeline.formats.review_chain import CHAIN_RE, chain_breaks, chain_line


def cli(args: list[str], runs: Path) -> tuple[int, dict[str, Any], str]:
    done = run_cli([*args, "--runs-dir", str(runs), "--json"])
    return done.code, json.loads(done.out) if done.out.strip() else {}, done.err


def _forge(d: Any) -> str:
    """Hand-edit design.md and rewrite every SHA-256 of it in the review log to the new bytes."""
    old = hashlib.sha256(d.design.read_bytes()).hexdigest()
    d.design.write_text(d.design.read_text() + "\nA sentence no run reviewed.\n")
    new = hashlib.sha256(d.design.read_bytes()).hexdigest()
    text = d.mutations.read_text()
    assert old in text
    d.mutations.write_text(text.replace(old, new))
    return new


def _rechain(path: Path) -> None:
    """What a careful forger does next: recompute every chain line."""
    out, previous = [], ""
    for block in re.split(r"(?m)^(?=## Mutation )", path.read_text()):
        lines = block.rstrip("\n").split("\n")
        if lines and CHAIN_RE.match(lines[-1]):
            body = "\n".join(lines[:-1]).rstrip() + "\n"
            line = chain_line(previous, body)
            previous = line.split()[2]
            block = body + "\n" + line + "\n\n"
        out.append(block)
    path.write_text("".join(out).rstrip("\n") + "\n")


def _created(tmp_path: Path) -> Any:
    d = make_repo(tmp_path)
    d.design.unlink()
    assert cli(["create", str(d.root)], tmp_path / "runs")[0] == 0
    return d


def test_a_forged_digest_is_refused_where_there_is_no_run_store(tmp_path: Path) -> None:
    d = _created(tmp_path)
    _forge(d)
    clone = tmp_path / "ci-runs"
    assert chain_breaks(d.mutations.read_text())
    code, out, err = cli(["approve", str(d.root)], clone)
    assert code == 6 and out["error"]["name"] == "review-log-tampered", err
    code, out, _ = cli(["ready", str(d.root)], clone)
    gaps = [g["gap"] for g in out["directories"][0]["gaps"]]
    assert code == 1 and "review-log-tampered" in gaps


def test_an_untouched_log_approves_and_a_recomputed_chain_is_caught_by_the_history(tmp_path: Path) -> None:
    d = _created(tmp_path)
    repo = d.repo_root
    (repo / ".git").rmdir()
    git = ["git", "-C", str(repo), "-c", "user.email=a@example.com", "-c", "user.name=A"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "the run"], check=True)
    clone = tmp_path / "ci-runs"
    assert cli(["ready", str(d.root)], clone)[0] == 1  # not accepted yet, but nothing tampered
    gaps = [g["gap"] for g in cli(["ready", str(d.root)], clone)[1]["directories"][0]["gaps"]]
    assert "review-log-tampered" not in gaps
    _forge(d)
    _rechain(d.mutations)
    assert chain_breaks(d.mutations.read_text()) == []  # the chain alone is fooled ...
    subprocess.run([*git, "commit", "-qam", "the forgery"], check=True)
    code, out, err = cli(["approve", str(d.root)], clone)
    assert code == 6 and out["error"]["name"] == "review-log-tampered", err  # ... the history is not
    assert "differs from the text commit" in out["error"]["message"]
