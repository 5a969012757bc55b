"""batch --stale-only: a directory runs again only when one of its design inputs changed or a
claim of what its last run wrote went stale; a code change no claim rests on runs nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from batchkit import batch_repo
from conftest import run_cli


def batch(repo: Path, *extra: str) -> dict[str, Any]:
    cwd = Path.cwd()
    os.chdir(repo)
    try:
        result = run_cli(
            ["batch", "final", "docs/adr/*", "--runs-dir", "runs", "--jobs", "3", "--json", *extra]
        )
    finally:
        os.chdir(cwd)
    assert result.code == 0, result.err
    data: dict[str, Any] = json.loads(result.out)
    return data


def actions(data: dict[str, Any]) -> dict[str, str]:
    return {Path(r["directory"]).name: r["action"] for r in data["directories"]}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_stale_only_runs_exactly_the_directories_whose_claims_went_stale(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b", "c"])
    adr = repo / "docs" / "adr"
    (adr / "a" / "_workflow" / "plan" / "track-2.md").unlink()  # a: the bucket and its stores
    (adr / "b" / "_workflow" / "plan" / "track-1.md").unlink()  # b: the middleware and the outage path
    assert actions(batch(repo, "--stale-only")) == {"a": "new", "b": "new", "c": "new"}
    cited = {d: (adr / d / "design-final.claims.json").read_text(encoding="utf-8") for d in "abc"}
    assert "TokenBucket.take" in cited["a"] and "TokenBucket.take" in cited["c"]
    assert "TokenBucket.take" not in cited["b"]

    # A code change no claim rests on: nothing runs with --stale-only.
    (repo / "code" / "ratelimit" / "extra.py").write_text(
        "def unrelated():\n    return 1\n", encoding="utf-8"
    )
    again = batch(repo, "--stale-only")
    assert actions(again) == {"a": "skipped", "b": "skipped", "c": "skipped"}
    assert all("every claim current" in r["message"] for r in again["directories"])

    # A method's body the designs name only through its class (FallbackStore): no claim moved.
    store = repo / "code" / "ratelimit" / "store.py"
    edit(store, "        except ConnectionError:", "        except (ConnectionError, TimeoutError):")
    assert actions(batch(repo, "--stale-only")) == {"a": "skipped", "b": "skipped", "c": "skipped"}

    # The body of a method a and c name (b does not): exactly a and c run.
    bucket = repo / "code" / "ratelimit" / "bucket.py"
    edit(bucket, "        if current.tokens >= cost:", "        if current.tokens > cost:")
    stale = batch(repo, "--stale-only")
    assert actions(stale) == {"a": "new", "b": "skipped", "c": "new"}
    by_name = {Path(r["directory"]).name: r for r in stale["directories"]}
    assert any("TokenBucket.take" in reason for reason in by_name["a"]["stale_claims"])
    assert by_name["b"]["stale_claims"] == []
    # the runs wrote the ledgers afresh: nothing is stale any more
    assert actions(batch(repo, "--stale-only")) == {"a": "skipped", "b": "skipped", "c": "skipped"}

    # A design input (the research log) changed: that directory runs.
    log = adr / "a" / "_workflow" / "research-log.md"
    log.write_text(log.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert actions(batch(repo, "--stale-only")) == {"a": "new", "b": "skipped", "c": "skipped"}


def test_the_default_still_runs_on_any_code_change(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    assert actions(batch(repo)) == {"a": "new", "b": "new"}
    assert actions(batch(repo, "--stale-only")) == {"a": "skipped", "b": "skipped"}
    (repo / "code" / "ratelimit" / "extra.py").write_text(
        "def unrelated():\n    return 1\n", encoding="utf-8"
    )
    assert actions(batch(repo)) == {"a": "new", "b": "new"}  # the whole code is an input


def test_a_missing_ledger_runs_the_directory_again(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a", "b"])
    batch(repo, "--stale-only")
    (repo / "docs" / "adr" / "a" / "design-final.claims.json").unlink()
    data = batch(repo, "--stale-only")
    assert actions(data) == {"a": "new", "b": "skipped"}
    assert data["directories"][0]["stale_claims"] == ["docs/adr/a/design-final.md has no claims ledger"]
