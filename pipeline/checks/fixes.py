"""Apply auto-applicable findings in place, atomically, keeping line 1 byte-for-byte."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pipeline.errors import InputError
from pipeline.formats.findings import Finding, Fix
from pipeline.formats.stamp import assert_line1_preserved
from pipeline.formats.textio import TextFile, atomic_write, check_write_target, encode, read_text, split_lines


def apply_fixes(findings: list[Finding]) -> dict[str, int]:
    """Apply every finding's exact replacement; return the number applied per file.

    A file is re-read and each replacement is verified against the text it expects
    before anything is written, so a file changed since the check is refused whole.
    """
    by_file: dict[str, list[Fix]] = defaultdict(list)
    for finding in findings:
        if finding.auto_applicable and finding.fix is not None and finding.file is not None:
            by_file[finding.file].append(finding.fix)
    pending = {name: _fixed(Path(name), fixes) for name, fixes in by_file.items()}
    for path, _, _ in pending.values():  # every target is checked before any is written
        check_write_target(path)
    for path, text, source in pending.values():
        atomic_write(path, text, newline=source.newline, bom=source.bom)
    return {name: len(by_file[name]) for name in pending}


def _fixed(path: Path, fixes: list[Fix]) -> tuple[Path, str, TextFile]:
    """``path``'s text with ``fixes`` applied, each verified against the text it expects."""
    source = read_text(path)
    lines = split_lines(source.text)
    # Right to left within a line keeps earlier columns valid.
    for fix in sorted(fixes, key=lambda f: (f.line, f.column), reverse=True):
        line = lines[fix.line - 1]
        at = fix.column - 1
        if line[at : at + len(fix.expect)] != fix.expect:
            raise InputError(
                "file changed since it was checked; no fix was applied to it",
                file=path,
                line=fix.line,
                hint="run designloop check --fix again",
            )
        lines[fix.line - 1] = line[:at] + fix.insert + line[at + len(fix.expect) :]
    text = "\n".join(lines) + ("\n" if source.text.endswith("\n") else "")
    before = encode(source.text, source.newline, source.bom)
    after = encode(text, source.newline, source.bom)
    assert_line1_preserved(before, after, path)
    return path, text, source
