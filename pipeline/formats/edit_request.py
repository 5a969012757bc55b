"""An interactive edit's inputs, as the run record keeps them, and what each kind accepts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from pipeline.errors import MalformedEdit
from pipeline.formats.kinds import EditKind
from pipeline.formats.mutations import kind_rule

Choice = Literal["a", "b", "c"]
FailOn = Literal["blocker", "should-fix"]
FLAGS = {
    "section": "--section",
    "old": "--old",
    "new": "--new",
    "content": "--content",
    "to": "--to",
    "after": "--after",
    "instruction": "--instruction",
}
# Per kind: the payload forms it accepts (each a set of flags given together) and the
# flags it may take besides.
FORMS: dict[EditKind, tuple[list[frozenset[str]], frozenset[str]]] = {
    "content-edit": (
        [frozenset({"old", "new"}), frozenset({"section", "content"}), frozenset({"section", "instruction"})],
        frozenset({"section"}),
    ),
    "section-add": ([frozenset({"section", "content"})], frozenset({"after"})),
    "section-remove": ([frozenset({"section"})], frozenset({"to"})),
    "section-rename": ([frozenset({"section", "to"})], frozenset()),
    "section-move": ([frozenset({"section", "after"})], frozenset()),
    "structural-rewrite": ([frozenset({"content"}), frozenset({"instruction"})], frozenset()),
    "length-trigger-crossing": ([frozenset()], frozenset()),
    "mechanics-edit": (
        [frozenset({"old", "new"}), frozenset({"section", "content"}), frozenset({"instruction"})],
        frozenset({"section", "after"}),
    ),
    "design-sync": ([frozenset()], frozenset()),
}


class Stale(BaseModel):
    """How a stale quote was settled: the seed's (a), (b) or (c)."""

    model_config = ConfigDict(extra="forbid")

    choice: Choice
    section: str
    x: str
    y: str
    merged: str | None = None


class EditRequest(BaseModel):
    """The change an edit makes, kept in run.json so a resumed run applies the same edit."""

    model_config = ConfigDict(extra="forbid")

    kind: EditKind
    section: str | None = None
    old: str | None = None
    new: str | None = None
    content: str | None = None
    """The text of --content FILE, read when the run starts."""
    content_file: str | None = None
    to: str | None = None
    after: str | None = None
    instruction: str | None = None
    stale: Stale | None = None
    requested_kind: EditKind | None = None
    """The kind asked for, when a staleness choice (c) turned the edit into a design-sync."""
    fail_on: FailOn = "blocker"

    def given(self) -> frozenset[str]:
        return frozenset(k for k in FLAGS if getattr(self, k) is not None)

    def validate_form(self) -> None:
        """Refuse a payload the kind does not take: a missing flag, or one it would ignore."""
        kind_rule(self.kind)
        forms, optional = FORMS[self.kind]
        given = self.given()
        if self.content is not None and not self.content.strip():
            raise MalformedEdit(
                f"--content {self.content_file or 'FILE'} is empty"
                + (" (only whitespace)" if self.content else ""),
                file=self.content_file,
                hint="put the new text in the file; to take a section out, use --kind section-remove",
            )
        if "new" in given and "old" not in given:
            raise MalformedEdit(
                "--new needs --old: the exact text it replaces", hint="add --old with the text to replace"
            )
        for form in forms:
            if form <= given and not (given - form - optional):
                if self.instruction is not None and not self.instruction.strip():
                    raise MalformedEdit(
                        "--instruction is empty", hint="say what to change, e.g. --instruction 'shorten it'"
                    )
                return
        shown = " | ".join(" ".join(FLAGS[f] for f in sorted(form)) or "(no payload)" for form in forms)
        extra = sorted(given - frozenset().union(*forms) - optional)
        if extra:
            raise MalformedEdit(
                f"{self.kind} does not take {', '.join(FLAGS[f] for f in extra)}",
                hint=f"{self.kind} takes: {shown}"
                + (f"; optionally {', '.join(FLAGS[f] for f in sorted(optional))}" if optional else ""),
            )
        raise MalformedEdit(
            f"{self.kind} needs one of: {shown}",
            hint="give exactly one form of the change"
            + (f"; optionally {', '.join(FLAGS[f] for f in sorted(optional))}" if optional else ""),
        )
