"""The offline inline editor: the user's instruction where a rule can carry it out, the
length-trigger split, the design-sync distillation, and the deterministic fixes for flagged
findings. What needs judgement is left as it was and said so in the summary."""

from __future__ import annotations

from pipeline.formats.contracts import MAX_DECLINED, AuthorOutput, EditorOutput
from pipeline.formats.spawn_params import SpawnParams
from pipeline.offline import companion, fixer, instruction, sync
from pipeline.offline.edit_io import read, write_edits
from pipeline.offline.observe import Observations, required


def run(params: SpawnParams, obs: Observations) -> AuthorOutput:
    """The edit, and what of the instruction no rule could carry out (declined)."""
    output = required(params.output_path, "output_path")
    flagged = params.flagged_passages or []
    rules = {f.rule for f in flagged}
    if "split-section" in rules:
        return companion.split_run(params, obs)
    if any(rule.startswith("sync-") for rule in rules):
        return sync.run(params, obs)
    current = read(obs, output)
    text, fixed, left = fixer.apply(current, flagged, obs.instructions)
    notes = []
    declined: list[str] = []
    if flagged:
        notes.append(f"Applied {fixed} fix(es); {left} flagged passage(s) need judgement.")
    if params.instruction:
        outcome = instruction.apply(text, params.instruction, params.changed_section)
        text = outcome.text
        if outcome.applied:
            notes.append("Carried out: " + "; ".join(outcome.applied) + ".")
        if outcome.failed:
            notes.append("Not carried out: " + "; ".join(outcome.failed) + ".")
            declined = [part[:600] for part in outcome.failed[:MAX_DECLINED]]
    write_edits(obs, output, current, text)
    return EditorOutput(
        summary=" ".join(notes) or "Nothing to change.", output_path=output, declined=declined
    )
