"""Copy each included file into the Markdown that shows it: python docs/include.py

A line ``<!-- include: PATH -->`` (PATH relative to the repository root) is followed by a
fenced block holding that file's text, exactly; this rewrites every such block from its file,
so the file stays the one source of truth (tests/test_ci_recipes.py fails while they differ).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r"^<!-- include: (?P<path>\S+) -->\n```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.M | re.S)


def includes(text: str) -> list[tuple[str, str]]:
    """Each (path, the block's text) the Markdown includes."""
    return [(m.group("path"), m.group("body")) for m in INCLUDE.finditer(text)]


def refreshed(text: str) -> str:
    def block(match: re.Match[str]) -> str:
        body = (ROOT / match.group("path")).read_text(encoding="utf-8")
        return f"<!-- include: {match.group('path')} -->\n```{match.group('lang')}\n{body}```"

    return INCLUDE.sub(block, text)


def main() -> None:
    for page in sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]):
        text = page.read_text(encoding="utf-8")
        new = refreshed(text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"updated {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
