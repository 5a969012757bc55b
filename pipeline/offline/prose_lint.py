"""proselint's catalogue (clichés, redundancy, jargon, weasel words) as suggestion-level findings.

The house-style rules decide what blocks a round; proselint adds a maintained, broad
catalogue on top, reported as suggestions only, so it never holds a round open.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pipeline.formats.design_doc import DesignDoc
from pipeline.offline.text import Paragraph


@cache
def _ready() -> bool:
    try:
        import proselint.checks
        from proselint.registry import CheckRegistry
    except ImportError:  # pragma: no cover - proselint ships with the agents extra
        return False
    registry = CheckRegistry()
    if not registry.checks:
        registry.register_many(proselint.checks.__register__)
    return True


def lint(doc: DesignDoc, paras: list[Paragraph]) -> list[dict[str, Any]]:
    if not _ready():
        return []
    from proselint.config import DEFAULT
    from proselint.tools import LintFile

    out: list[dict[str, Any]] = []
    for para in paras:
        text = para.text
        if not text.strip():
            continue
        for result in LintFile("<prose>", text).lint(DEFAULT):
            check = result.check_result
            start, end = check.span
            quote = ("\n" + text + "\n")[start:end].strip() or None
            fix = f"consider '{check.replacements}'" if check.replacements else check.message
            out.append(
                {
                    "severity": "suggestion",
                    "section": doc.section_name_at(para.start),
                    "quote": quote,
                    "rule": f"proselint/{check.check_path}",
                    "message": check.message,
                    "suggested_fix": fix,
                    "decision_shaped": False,
                }
            )
    return out
