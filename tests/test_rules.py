"""The one rule registry (params/rules.toml) and the other families' own data agree: every rule
the code raises is registered, with the severity the family's data gives it."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

from pipeline.checks.context import CHECKS
from pipeline.checks.engine import _RULE_MODULES  # noqa: F401  (registers the mechanical rules)
from pipeline.checks.registry import PROFILES, registry
from pipeline.grounding.rules import claim_rules
from pipeline.offline.text import lexicon, parse_house_style

RULE_ID = re.compile(r"\"((?:cr|abs|fid|adv|hs|clm|drift|dsc|dl)-[a-z][a-z0-9-]*)\"")


def test_every_mechanical_rule_has_its_function_and_no_function_lacks_a_rule() -> None:
    assert set(registry().of_family("mechanical")) == set(CHECKS)


def test_the_house_style_rules_are_the_prompts_with_its_severities() -> None:
    house = parse_house_style((ROOT / "prompts" / "house-style.md").read_text(encoding="utf-8"))
    registered = registry().of_family("house-style")
    assert set(house) == set(registered)
    assert {r: h.severity for r, h in house.items()} == {r: x.severity for r, x in registered.items()}


def test_every_house_style_rule_the_offline_auditor_raises_holds_for_any_document() -> None:
    # Another project's document is told of the house style softened to suggestions, never
    # muted; hs-acronym is a model auditor's (the offline auditor leaves acronyms to the
    # comprehension reviewer, which reads the whole document).
    registered = registry().of_family("house-style")
    only_house = {r for r, x in registered.items() if x.profiles == ("house",)}
    assert only_house == {"hs-acronym"} and "hs-acronym" in lexicon().whole_document_rules


def test_the_claim_and_drift_rules_are_params_claims_toml_with_its_severities() -> None:
    claims = claim_rules().rules
    known = registry()
    registered = {**known.of_family("claims"), **known.of_family("drift")}
    assert set(claims) == set(registered)
    assert {r: severity for r, (severity, _) in claims.items()} == {
        r: x.severity for r, x in registered.items()
    }


def test_every_rule_id_the_code_raises_is_registered() -> None:
    known = registry()
    raised: dict[str, Path] = {}
    for path in (ROOT / "pipeline").rglob("*.py"):
        for rule_id in RULE_ID.findall(path.read_text(encoding="utf-8")):
            raised.setdefault(rule_id, path)
    missing = {r: str(p.relative_to(ROOT)) for r, p in raised.items() if known.find(r) is None}
    assert not missing
    assert known.find("proselint/lexical_illusions.misc") is known.rules["proselint"]


def test_every_rule_says_what_why_and_gives_an_example() -> None:
    for rule in registry().rules.values():
        assert rule.summary and rule.why and rule.example, rule.id
        assert set(rule.profiles) <= set(PROFILES), rule.id
