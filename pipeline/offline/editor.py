"""The offline inline editor: applies the deterministic fixes for its flagged passages."""

from __future__ import annotations

from typing import Any

from pipeline.offline import fixer
from pipeline.offline.driver import Observations
from pipeline.offline.pages import read_whole


def run(params: dict[str, Any], obs: Observations) -> dict[str, Any]:
    output = params["output_path"]
    current = read_whole(obs, output)
    flagged = params.get("flagged_passages") or []
    text, fixed, left = fixer.apply(current, flagged, obs.instructions)
    if text != current:
        first_old, _, _rest_old = current.partition("\n")
        first_new, _, rest_new = text.partition("\n")
        text = first_old + "\n" + rest_new if first_old != first_new else text
        for old, new in fixer.edits(current, text):
            result = obs.call("edit", path=output, old_string=old, new_string=new)
            if result.startswith(("refused:", "error:")):
                raise RuntimeError(result)
    return {
        "summary": f"Applied {fixed} fix(es); {left} flagged passage(s) need judgement.",
        "output_path": output,
    }
