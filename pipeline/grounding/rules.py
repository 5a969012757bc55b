"""The claims table (params/claims.toml, docs/formats.md §11): which words of a design are
claims about the code, which values a claim quotes, what counts as source, and the rules of the
claim check and of drift. The table is validated by models; a bad one is an InputError at the
offending key.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.settings import data_dir, load_toml
from pipeline.validation import toml_locator, toml_name, validated


@dataclass(frozen=True, slots=True)
class Sources:
    """What is not source: generated and vendored trees and files, and what is a test."""

    generated_dirs: frozenset[str]
    generated_names: tuple[str, ...]
    """Glob patterns on a file's name (``*.min.js``)."""
    generated_markers: tuple[str, ...]
    """Words in a file's first or last lines that say a tool wrote it (``@generated``)."""
    marker_lines: int
    long_line: int
    """A line longer than this in a file's first lines: minified, not source."""
    compiled: dict[str, tuple[str, ...]]
    """A file with this suffix beside a file of the same stem with one of these is compiled
    output (``.js`` beside ``.ts``)."""
    test_dirs: frozenset[str]
    test_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClaimRules:
    units: frozenset[str]
    documents: tuple[str, ...]
    examples: tuple[str, ...]
    replaced: tuple[str, ...]
    """Words that make the name after them an alternative the design rejected or replaced
    (``instead of``): no claim that it exists."""
    rejected_fields: frozenset[str]
    """Decision-record fields whose names are alternatives, not claims (lower case)."""
    max_file_bytes: int
    max_config_bytes: int
    max_candidates: int
    sources: Sources
    rules: dict[str, tuple[str, str]]
    """rule id -> (severity, summary)"""
    docstrings: dict[str, frozenset[str]]
    """Per language: statement types that hold only a string are documentation."""
    wrappers: dict[str, frozenset[str]]
    """Per language: a parent of these types is part of the definition (a decorator)."""

    def severity(self, rule: str) -> Literal["should-fix", "suggestion"]:
        return "should-fix" if self.rules[rule][0] == "should-fix" else "suggestion"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ClaimRuleSpec(_Spec):
    """One ``[rules.<id>]`` table: a claim or drift rule."""

    severity: Literal["should-fix", "suggestion"]
    summary: str = Field(min_length=1)


class FingerprintSpec(_Spec):
    """``[fingerprint]``: per language, the node types a span's fingerprint reads differently."""

    docstrings: dict[str, list[str]] = {}
    wrappers: dict[str, list[str]] = {}


class SourcesSpec(_Spec):
    """``[sources]``: what a claim never rests on, and what is a test."""

    generated_dirs: list[str]
    generated_names: list[str]
    generated_markers: list[str]
    marker_lines: int = Field(gt=0)
    long_line: int = Field(gt=0)
    compiled: dict[str, list[str]] = {}
    test_dirs: list[str]
    test_names: list[str]


class ClaimsFile(_Spec):
    """params/claims.toml."""

    units: list[str]
    documents: list[str]
    examples: list[str] = []
    replaced: list[str] = []
    rejected_fields: list[str] = []
    max_file_bytes: int = Field(gt=0)
    max_config_bytes: int = Field(gt=0)
    max_candidates: int = Field(gt=1)
    sources: SourcesSpec
    rules: dict[str, ClaimRuleSpec]
    fingerprint: FingerprintSpec = FingerprintSpec()


def load_claim_rules(path: Path) -> ClaimRules:
    """The claims table at ``path``, validated (a bad one: InputError at the offending key)."""
    hint = "reinstall designloop, or restore the file (docs/formats.md §11 says what each key means)"
    spec = validated(ClaimsFile, load_toml(path), path, hint, locate=toml_locator(path), name=toml_name)
    src = spec.sources
    return ClaimRules(
        units=frozenset(u.lower() for u in spec.units),
        documents=tuple(spec.documents),
        examples=tuple(e.lower() for e in spec.examples),
        replaced=tuple(r.lower() for r in spec.replaced),
        rejected_fields=frozenset(f.lower() for f in spec.rejected_fields),
        max_file_bytes=spec.max_file_bytes,
        max_config_bytes=spec.max_config_bytes,
        max_candidates=spec.max_candidates,
        sources=Sources(
            generated_dirs=frozenset(src.generated_dirs),
            generated_names=tuple(src.generated_names),
            generated_markers=tuple(src.generated_markers),
            marker_lines=src.marker_lines,
            long_line=src.long_line,
            compiled={k: tuple(v) for k, v in src.compiled.items()},
            test_dirs=frozenset(src.test_dirs),
            test_names=tuple(src.test_names),
        ),
        rules={k: (v.severity, v.summary) for k, v in spec.rules.items()},
        docstrings={k: frozenset(v) for k, v in spec.fingerprint.docstrings.items()},
        wrappers={k: frozenset(v) for k, v in spec.fingerprint.wrappers.items()},
    )


@cache
def claim_rules() -> ClaimRules:
    return load_claim_rules(data_dir("params") / "claims.toml")
