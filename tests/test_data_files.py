"""Data files (agents/*.md frontmatter, params/*.toml tables, queue payloads) are validated by
models: a bad one is refused by name, at the line of the offending key where the format keeps
lines, with a ``what to do``."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from pipeline.agents import roles
from pipeline.checks import registry as registry_module
from pipeline.errors import InputError
from pipeline.formats import mutations
from pipeline.formats.job import JobPayload
from pipeline.settings import Limits, data_dir, load_limits, worker_settings

AUDITOR = (data_dir("agents") / "readability-auditor.md").read_text(encoding="utf-8")


def refused(call: object, *args: object) -> InputError:
    assert callable(call)
    with pytest.raises(InputError) as caught:
        call(*args)
    assert caught.value.hint
    return caught.value


@pytest.mark.parametrize(
    ("old", "new", "line", "words"),
    [
        ("output: review", "colour: red\noutput: review", 6, "colour: not a known key"),
        ("model_tier: fast", "model_tier: huge", 5, "model_tier: input should be 'strong' or 'fast'"),
        ("reads_research_log: false", "reads_research_log: 0", 7, "reads_research_log: input should be"),
        ("tools: Read, Grep", "tools: Read, Teleport", 4, "unknown tool(s) ['Teleport']"),
        ("tools: Read, Grep", "tools: Read, Grep, Edit", 4, "may not have write tools ['Edit']"),
        ("tools: Read, Grep", "tools: Read, Bash", 4, "a cold role may not have Bash"),
        ("prompts: [house-style.md, known-terms.md, output-review.md]", "prompts: house.md", 8, "prompts:"),
        ("description: Cold", "summary: Cold", 2, "description: missing"),
    ],
)
def test_agent_frontmatter_is_checked_field_by_field(
    tmp_path: Path, old: str, new: str, line: int, words: str
) -> None:
    assert old in AUDITOR
    path = write(tmp_path / "readability-auditor.md", AUDITOR.replace(old, new, 1))
    error = refused(roles.parse_role, path)
    assert words in error.message and error.file == str(path) and error.line == line, error.render()


def test_a_valid_frontmatter_reads_as_before(tmp_path: Path) -> None:
    path = write(
        tmp_path / "readability-auditor.md", AUDITOR.replace("tools: Read, Grep", "tools: [Read, Grep]")
    )
    role = roles.parse_role(path)
    assert role.tools == ("Read", "Grep") and role.cold and role.output == "review" and role.tier == "fast"
    assert role.prompts == ("house-style.md", "known-terms.md", "output-review.md")


@pytest.mark.parametrize(
    ("toml", "line", "words"),
    [
        ("[partition]\nwindow = 0\n", 3, "[partition] window: input should be greater than or equal to 1"),
        ("[partition]\ncap = 2\nwindow = true\n", 4, "[partition] window: input should be a valid integer"),
        ("[loop]\niteration_budget = '3'\n", 3, "[loop] iteration_budget: input should be a valid integer"),
        ("[limits]\nwindow = 100\n", 3, "[limits] window: not a known key"),
        ("partition = 5\n", 2, "partition: input should be a valid dictionary"),
        ("[worker]\nheartbeat = -1\n", 3, "[worker] heartbeat: input should be greater than 0"),
        ("[worker]\n\ndequeue = inf\n", 4, "[worker] dequeue: input should be a finite number"),
    ],
)
def test_params_tables_are_checked_at_the_line_of_the_key(
    tmp_path: Path, toml: str, line: int, words: str
) -> None:
    path = write(tmp_path / "designloop.toml", "# my settings\n" + toml)
    error = refused(load_limits, tmp_path)
    assert words in error.message and error.file == str(path) and error.line == line, error.render()


def test_an_unknown_key_names_the_known_ones(tmp_path: Path) -> None:
    write(tmp_path / "designloop.toml", "[worker]\npoll = 1\n")
    error = refused(worker_settings, tmp_path)
    assert error.hint is not None and "the known keys are heartbeat, dequeue" in error.hint


def test_settings_override_the_defaults(tmp_path: Path) -> None:
    assert worker_settings(tmp_path).heartbeat == 20 and worker_settings(tmp_path).dequeue == 10
    write(tmp_path / "designloop.toml", "[partition]\nwhole_doc_floor = 400\n[worker]\nheartbeat = 3\n")
    assert load_limits(tmp_path) == Limits(whole_doc_floor=400)
    assert worker_settings(tmp_path).heartbeat == 3 and worker_settings(tmp_path).dequeue == 10


def shipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: object, name: str, text: str) -> Path:
    """A copy of the shipped params directory whose ``name`` holds ``text``, in place of the real one."""
    params = tmp_path / "params"
    for source in data_dir("params").glob("*.toml"):
        write(params / source.name, source.read_text(encoding="utf-8"))
    write(params / name, text)
    monkeypatch.setattr(module, "data_dir", lambda kind: tmp_path / kind)
    return params / name


def test_the_rule_registry_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rules = (data_dir("params") / "rules.toml").read_text(encoding="utf-8")
    head = '[rules.dsc-reverse-ref]\nfamily = "mechanical"\nseverity = "should-fix"'
    assert head in rules
    bad = rules.replace(head, '[rules.dsc-reverse-ref]\nfamily = "mechanical"\nseverity = "fatal"')
    path = shipped(monkeypatch, tmp_path, registry_module, "rules.toml", bad)
    error = refused(registry_module.registry.__wrapped__)
    line = bad.splitlines().index('severity = "fatal"') + 1
    assert (
        "[rules.dsc-reverse-ref] severity: input should be 'blocker', 'should-fix' or 'suggestion'"
        in error.message
    )
    assert error.file == str(path) and error.line == line
    shipped(
        monkeypatch,
        tmp_path,
        registry_module,
        "rules.toml",
        rules.replace("auto_applicable = true", "auto = true", 1),
    )
    assert "auto: not a known key" in refused(registry_module.registry.__wrapped__).message
    orphan = rules.replace('family = "mechanical"', 'family = "mechanicals"', 1)
    shipped(monkeypatch, tmp_path, registry_module, "rules.toml", orphan)
    assert "has no [families] table" in refused(registry_module.registry.__wrapped__).message


def test_the_kind_table_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    kinds = (data_dir("params") / "mutations.toml").read_text(encoding="utf-8")
    bad = kinds.replace('cold_read = "bounded-roadmap"', 'cold_read = "skim"', 1)
    path = shipped(monkeypatch, tmp_path, mutations, "mutations.toml", bad)
    error = refused(mutations.kind_rules.__wrapped__)
    assert "[kinds.section-add] cold_read: input should be" in error.message and error.file == str(path)
    assert error.line == bad.splitlines().index('cold_read = "skim"') + 1
    start = kinds.index("[kinds.section-add]")
    missing = kinds[:start] + kinds[kinds.index("[kinds.", start + 1) :]
    shipped(monkeypatch, tmp_path, mutations, "mutations.toml", missing)
    assert "not exactly the interactive kinds" in refused(mutations.kind_rules.__wrapped__).message


def test_a_queue_payload_is_read_back_through_its_model() -> None:
    job = JobPayload(run_id="r-1", budget_tokens=500, max_cost="$2", fail_on="should-fix")
    assert JobPayload.decode(job.encode(), 7) == job
    old = b'{"run_id": "r-1", "budget_tokens": null, "max_cost": null, "fail_on": null}'
    assert JobPayload.decode(old, 7) == JobPayload(run_id="r-1")
    for payload, words in [
        (b'{"run_id": "r-1", "fail_on": "never"}', "fail_on: input should be 'blocker' or 'should-fix'"),
        (b'{"run": "r-1"}', "run_id: missing"),
        (b"not json", "not JSON"),
    ]:
        error = refused(JobPayload.decode, payload, 7)
        assert words in error.message and error.file == "queue job 7", error.render()


def test_the_claims_table_is_checked_at_the_line_of_the_key(tmp_path: Path) -> None:
    from pipeline.grounding.rules import load_claim_rules

    shipped_table = (data_dir("params") / "claims.toml").read_text(encoding="utf-8")
    assert load_claim_rules(data_dir("params") / "claims.toml").rules["clm-unresolved"][0] == "should-fix"
    for old, new, words in [
        ('[rules.drift-moved]\nseverity = "should-fix"', '[rules.drift-moved]\nseverity = "fatal"',
         "[rules.drift-moved] severity: input should be 'should-fix' or 'suggestion'"),
        ("max_file_bytes = 4194304", "max_file_bytes = 0", "max_file_bytes: input should be greater than 0"),
        ("max_file_bytes = 4194304", "max_file_bytes = 4194304\nmax_bytes = 1", "max_bytes: not a known key"),
    ]:  # fmt: skip
        assert old in shipped_table
        bad = shipped_table.replace(old, new, 1)
        path = write(tmp_path / "claims.toml", bad)
        error = refused(load_claim_rules, path)
        assert words in error.message and error.file == str(path), error.render()
        assert error.line == bad.splitlines().index(new.splitlines()[-1]) + 1
