"""Which engine plays which role, as a pydantic-ai model (imported only where a role runs offline)."""

from __future__ import annotations

from functools import partial

from pydantic_ai.models.function import FunctionModel

from pipeline.errors import InputError
from pipeline.offline import absorption, adversarial, auditor, author, comprehension, editor, fidelity
from pipeline.offline.driver import Engine, engine_model
from pipeline.settings import Limits

ENGINES: dict[str, Engine] = {
    "design-author": author.run,
    "readability-auditor": auditor.run,
    "absorption-check": absorption.run,
    "fidelity-check": fidelity.run,
    "comprehension-review": comprehension.run,
    "adversarial-review": adversarial.run,
    "inline-editor": editor.run,
}


def offline_model(role: str, limits: Limits) -> FunctionModel:
    """The engine of ``role`` as a model; ``limits`` are the run's settings (the auditor's
    whole-doc guard trips over ``[partition] whole_doc_floor``)."""
    engine = ENGINES.get(role)
    if role == "readability-auditor":
        engine = partial(auditor.run, floor=limits.whole_doc_floor)
    if engine is None:
        raise InputError(
            f"the offline engine has no implementation of role {role!r}",
            hint="configure a model for it with --role-model ROLE=MODEL",
        )
    return engine_model(role, engine, review=role not in ("design-author", "inline-editor"))
