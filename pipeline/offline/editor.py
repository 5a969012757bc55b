"""The offline inline editor: the user's instruction where a rule can carry it out, the
length-trigger split, the design-sync distillation, and the deterministic fixes for flagged
findings. What needs judgement is left as it was and said so in the summary."""

from __future__ import annotations

from typing import Any

from pipeline.offline import companion, fixer, instruction, sync
from pipeline.offline.edit_io import read, write_edits
from pipeline.offline.observe import Observations


def run(params: dict[str, Any], obs: Observations) -> dict[str, Any]:
    output = params["output_path"]
    flagged = params.get("flagged_passages") or []
    rules = {str(f.get("rule", "")) for f in flagged}
    if "split-section" in rules:
        return companion.split_run(params, obs)
    if any(rule.startswith("sync-") for rule in rules):
        return sync.run(params, obs)
    current = read(obs, output)
    text, fixed, left = fixer.apply(current, flagged, obs.instructions)
    notes = []
    if flagged:
        notes.append(f"Applied {fixed} fix(es); {left} flagged passage(s) need judgement.")
    if params.get("instruction"):
        outcome = instruction.apply(text, str(params["instruction"]), params.get("changed_section"))
        text = outcome.text
        if outcome.applied:
            notes.append("Carried out: " + "; ".join(outcome.applied) + ".")
        if outcome.failed:
            notes.append("Not carried out: " + "; ".join(outcome.failed) + ".")
    write_edits(obs, output, current, text)
    return {"summary": " ".join(notes) or "Nothing to change.", "output_path": output}
