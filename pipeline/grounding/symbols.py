"""What the code index holds: a symbol's definition and a name's use, each at a file and line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    qualified: str
    kind: str
    file: str
    line: int
    signature: str
    exact: bool = True
    """False for a text match (a file no grammar reads)."""
    end: int = 0
    """The definition's last line (0: not known, a text match)."""


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    file: str
    line: int
    text: str
    exact: bool = True
