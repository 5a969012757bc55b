"""Role definitions, params files, the spawn contract and model resolution."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentkit import make_repo
from conftest import write

from pipeline.agents.resolve import ModelOptions, parse_role_models, redact, resolve_models
from pipeline.agents.roles import instructions_for, load_roles
from pipeline.agents.spawn import prefix_share, prepare
from pipeline.errors import InputError, WiringError
from pipeline.formats.spawn_params import SpawnParams

SEED_TOOLS = {
    "design-author": ("Read", "Write", "Edit", "Bash", "PSI"),
    "readability-auditor": ("Read", "Grep"),
    "absorption-check": ("Read", "Grep"),
    "fidelity-check": ("Read", "PSI"),
    "comprehension-review": ("Read", "Grep"),
}
READS_CODE = frozenset({"design-author", "fidelity-check", "inline-editor"})
"""Roles that read the code: beyond the seed's table, each has the built-in grep (no binary
needed), the fidelity check included (docs/agents.md)."""


def test_shipped_roles_match_the_seed_table() -> None:
    roles = load_roles()
    assert set(roles) == {*SEED_TOOLS, "adversarial-review", "inline-editor"}
    for name, tools in SEED_TOOLS.items():
        assert set(roles[name].tools) == set(tools) | ({"Grep"} if name in READS_CODE else set()), name
    assert all("Grep" in roles[name].tools for name in READS_CODE)
    cold = {n for n, r in roles.items() if r.cold}
    assert {"readability-auditor", "comprehension-review", "fidelity-check"} <= cold
    assert not roles["absorption-check"].cold and not roles["design-author"].cold
    assert all(not r.writes for r in roles.values() if r.output == "review")
    assert "## hs-ai-tell" in instructions_for(roles["readability-auditor"])


def test_user_override_and_bad_definitions(tmp_path: Path) -> None:
    override = tmp_path / ".designloop" / "agents" / "readability-auditor.md"
    text = (
        (load_roles()["readability-auditor"].source)
        .read_text()
        .replace("model_tier: fast", "model_tier: strong")
    )
    write(override, text)
    assert load_roles(tmp_path)["readability-auditor"].tier == "strong"
    write(override, text.replace("tools: Read, Grep", "tools: Read, Grep, Write"))
    with pytest.raises(InputError, match="may not have write tools"):
        load_roles(tmp_path)
    write(override, text.replace("tools: Read, Grep", "tools: Read, Teleport"))
    with pytest.raises(InputError, match="unknown tool"):
        load_roles(tmp_path)
    write(override, "no frontmatter\n")
    with pytest.raises(InputError, match="no YAML frontmatter"):
        load_roles(tmp_path)


def test_prompt_override(tmp_path: Path) -> None:
    write(tmp_path / ".designloop" / "prompts" / "house-style.md", "## hs-custom: Custom\nTerms: zorp\n")
    roles = load_roles(tmp_path)
    assert "hs-custom" in instructions_for(roles["readability-auditor"], tmp_path)


def test_cold_params_never_name_the_log(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    roles = load_roles()
    bad = SpawnParams(
        role="readability-auditor",
        kind="phase1-creation",
        target="design",
        target_path="x.md",
        slice=(1, 10),
        research_log_path="log.md",
    )
    with pytest.raises(WiringError, match="research_log_path"):
        prepare(roles["readability-auditor"], bad, d.reviews, d.repo_root)
    missing = SpawnParams(role="absorption-check", kind="phase1-creation", target="design")
    with pytest.raises(WiringError, match="missing"):
        prepare(roles["absorption-check"], missing, d.reviews, d.repo_root)


def test_fan_out_prompts_differ_only_in_the_params_path(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    role = load_roles()["readability-auditor"]
    spawns = [
        prepare(
            role,
            SpawnParams(
                role="readability-auditor",
                kind="phase1-creation",
                target="design",
                target_path="d.md",
                slice=s,
                slice_count=3,
                total_lines=600,
            ),
            d.reviews,
            d.repo_root,
            index=i,
        )
        for i, s in enumerate([(1, 200), (201, 400), (401, 600)])
    ]
    assert len({s.instructions for s in spawns}) == 1
    # The prompt names no run and no file of its own: every spawn's first request is the same.
    assert {s.prompt for s in spawns} == {spawns[0].prompt} and "Params file: @params" in spawns[0].prompt
    assert {p.params_path.name for p in spawns} == {f"r1-readability-auditor-s{i}.json" for i in range(3)}
    assert {p.params_path.parent for p in spawns} == {d.reviews}
    assert prefix_share([s.instructions + s.prompt for s in spawns]) == 1.0
    assert prefix_share(["same", "same"]) == 1.0


def test_model_resolution_order() -> None:
    roles = load_roles()
    settings = {
        "models": {"tiers": {"strong": "anthropic:claude-x"}, "roles": {"fidelity-check": "openai:f"}}
    }
    env = {"DESIGNLOOP_MODEL": "openai:env"}
    chosen = resolve_models(roles, ModelOptions(), settings, env={})
    assert chosen["design-author"] == "anthropic:claude-x"
    assert chosen["fidelity-check"] == "openai:f"
    assert chosen["readability-auditor"] == "offline"
    assert resolve_models(roles, ModelOptions(), settings, env)["readability-auditor"] == "openai:env"
    options = ModelOptions(model="openai:cli", role_models=parse_role_models(["design-author=test"], roles))
    chosen = resolve_models(roles, options, settings, env)
    assert chosen["design-author"] == "test" and chosen["fidelity-check"] == "openai:cli"
    with pytest.raises(InputError, match="unknown role"):
        parse_role_models(["nobody=test"], roles)
    with pytest.raises(InputError, match="ROLE=MODEL"):
        parse_role_models(["design-author"], roles)


def test_keys_are_redacted() -> None:
    env = {"OPENAI_API_KEY": "sk-live-1234567890abcdef"}
    text = redact("failed with key sk-live-1234567890abcdef and sk-ant-abcdefghijkl", env)
    assert "1234567890" not in text and "abcdefghijkl" not in text
    assert "opaque-token-123456" not in redact("Authorization: Bearer opaque-token-123456", {})


def test_run_settings_read_an_earlier_name() -> None:
    """An existing designloop.toml that sets the warm-up by its earlier name still runs."""
    from pipeline.settings import run_settings

    assert run_settings({"run": {"warmup_delay": 5}}, Path("designloop.toml")).warmup_cap == 5.0
