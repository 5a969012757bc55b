"""Redraw the diagram in docs/graph.md from the graph itself: python docs/regen_graph.py"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.graph.create.build import build_graph

DOC = Path(__file__).resolve().parent / "graph.md"


def main() -> None:
    text = DOC.read_text(encoding="utf-8")
    diagram = "```mermaid\n" + build_graph().get_graph().draw_mermaid().rstrip() + "\n```"
    new = re.sub(
        r"(<!-- graph:start -->\n).*?(\n<!-- graph:end -->)",
        lambda m: m.group(1) + diagram + m.group(2),
        text,
        flags=re.S,
    )
    DOC.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
