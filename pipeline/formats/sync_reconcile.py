"""Staleness reconciliation: an edit that quotes design.md text the companion has moved past.

During working mode design.md is frozen between syncs while design-mechanics.md moves on. An
edit whose ``--old`` quotes a passage that the companion held at the last sync but has since
changed is asked the seed's question rather than guessed at: (a) revert the companion to X,
then apply the request; (b) apply the request on top of the current Y; (c) sync first.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.errors import MalformedEdit
from pipeline.formats.design_dir import DesignDir
from pipeline.formats.edit_plan import Reader
from pipeline.formats.edit_request import Choice, EditRequest, Stale
from pipeline.formats.review_log import parse_entries, working_mode_count
from pipeline.formats.sync_delta import baseline_path, counterpart, merge_on_top, without_stamp
from pipeline.formats.textio import decode

STALE_KINDS = frozenset({"content-edit", "mechanics-edit"})


@dataclass(frozen=True, slots=True)
class StaleQuestion:
    section: str
    x: str
    y: str
    edits: int
    """mechanics-edit entries since the last sync."""
    merged: str | None
    """The request applied on top of Y, when the two changes do not overlap."""

    @property
    def default(self) -> Choice:
        """(b) when the request applies cleanly on top of Y; (c) when the delta is in the way."""
        return "b" if self.merged is not None else "c"

    def text(self) -> str:
        y = f'"{self.y}"' if self.y else "removed"
        return (
            f'Your request references design.md saying "{self.x}". Mechanics has accumulated '
            f"{self.edits} edit(s) since the last sync, and that text has been updated to {y}. "
            f"Should I (a) revert mechanics to the design.md text, then apply your new request, "
            f"(b) apply your request on top of the current state, or (c) sync design.md first so "
            f"you can see the current state, then issue the request?"
        )


def _text(reader: Reader, d: DesignDir, which: str) -> str | None:
    path = {"design": d.design, "mechanics": d.mechanics, "baseline": baseline_path(d.workflow)}[which]
    data = reader(path)
    return decode(data, path).text if data is not None else None


def detect(req: EditRequest, d: DesignDir, reader: Reader) -> StaleQuestion | None:
    """The staleness question this edit raises, if its quote is stale."""
    if req.kind not in STALE_KINDS or req.old is None or req.new is None:
        return None
    design, mechanics, baseline = (_text(reader, d, w) for w in ("design", "mechanics", "baseline"))
    if design is None or mechanics is None or baseline is None:
        return None
    quote = req.old
    if quote in mechanics or quote not in without_stamp(baseline):
        return None
    if req.kind == "content-edit" and quote not in design:
        return None
    found = counterpart(quote, without_stamp(baseline), without_stamp(mechanics), d.mechanics)
    if found is None:
        return None
    edits = working_mode_count(parse_entries(d.mutations))
    merged = merge_on_top(found.x, found.y, req.new) if found.y else None
    return StaleQuestion(found.section, found.x, found.y, edits, merged)


def resolve(req: EditRequest, question: StaleQuestion, choice: Choice) -> EditRequest:
    """The request as the choice makes it: (c) turns it into a design-sync."""
    if choice == "c":
        return EditRequest(kind="design-sync", requested_kind=req.kind, fail_on=req.fail_on)
    if choice == "b" and question.merged is None:
        raise MalformedEdit(
            "your change and the companion's newer text change the same words; (b) cannot apply it "
            "on top automatically",
            hint="choose (a) to revert the companion first, or (c) to sync design.md first",
        )
    stale = Stale(
        choice=choice,
        section=question.section,
        x=question.x,
        y=question.y,
        merged=question.merged if choice == "b" else None,
    )
    return req.model_copy(update={"stale": stale})
