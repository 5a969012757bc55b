"""A design directory's paths (docs/formats.md §1), resolved once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from pipeline.errors import InputError
from pipeline.formats.textio import enclosing_repository, sweep_debris
from pipeline.settings import load_toml
from pipeline.settings import repo_root as find_repo_root
from pipeline.validation import toml_locator, toml_name, validated

DIR_PARAMS = "designloop.toml"


class DirParams(BaseModel):
    """A design directory's own designloop.toml: these keys and nothing else."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    code_root: str | None = None
    """Where the code the design describes lives, relative to the design directory."""
    mechanics_companion: bool | None = None
    """Phase 1 writes the design-mechanics.md companion too."""


def dir_params(data: dict[str, Any], path: Path) -> DirParams:
    """The design directory's settings, an unknown key or a wrong type refused by name."""
    hint = 'e.g. code_root = "../../src" or mechanics_companion = true (docs/formats.md §1)'
    return validated(DirParams, data, path, hint, locate=toml_locator(path), name=toml_name)


@dataclass(frozen=True, slots=True)
class DesignDir:
    root: Path
    repo_root: Path
    code_root: Path

    @property
    def workflow(self) -> Path:
        return self.root / "_workflow"

    @property
    def research_log(self) -> Path:
        return self.workflow / "research-log.md"

    @property
    def design(self) -> Path:
        return self.workflow / "design.md"

    @property
    def mechanics(self) -> Path:
        return self.workflow / "design-mechanics.md"

    @property
    def plan(self) -> Path:
        return self.workflow / "implementation-plan.md"

    @property
    def plan_dir(self) -> Path:
        return self.workflow / "plan"

    @property
    def reviews(self) -> Path:
        return self.workflow / "reviews"

    @property
    def mutations(self) -> Path:
        return self.workflow / "design-mutations.md"

    @property
    def final(self) -> Path:
        return self.root / "design-final.md"

    @property
    def final_mechanics(self) -> Path:
        return self.root / "design-mechanics-final.md"

    def rel(self, path: Path) -> str:
        """``path`` as the run records and params files show it: relative to the repository root."""
        return str(path.relative_to(self.repo_root)) if path.is_relative_to(self.repo_root) else str(path)

    def abs(self, rel: str) -> Path:
        path = Path(rel)
        return path if path.is_absolute() else self.repo_root / path


def open_design_dir(path: Path, code_root: Path | None = None) -> DesignDir:
    """Open ``path`` as a design directory; its designloop.toml may name ``code_root``."""
    root = path.resolve()
    if not root.is_dir():
        raise InputError("not a design directory", file=path, hint="pass the directory that holds _workflow/")
    if not (root / "_workflow").is_dir():
        raise InputError(
            "no _workflow/ directory here",
            file=path,
            hint="a design directory holds _workflow/research-log.md (docs/formats.md §1)",
        )
    outer = enclosing_repository(path)
    if outer is not None and not root.is_relative_to(outer.resolve()):
        raise InputError(
            f"the design directory is a link that leads outside the repository (to {root})",
            file=path,
            hint="keep the design directory inside the repository; replace the link by the directory",
        )
    repo = find_repo_root(root)
    # What a write killed mid-way left is swept before anything reads the directory.
    sweep_debris(root, root / "_workflow")
    if code_root is None:
        code_root = configured_code_root(root)
    code = (code_root or repo).resolve()
    if not code.is_dir():
        raise InputError("code root is not a directory", file=code, hint="fix code_root in designloop.toml")
    if not code.is_relative_to(repo):
        raise InputError(
            "code root is outside the repository",
            file=code,
            hint="agent tools are confined to the repository root",
        )
    return DesignDir(root=root, repo_root=repo, code_root=code)


def configured_code_root(root: Path) -> Path | None:
    """The code root a design directory's designloop.toml names (``code_root``), if any."""
    if not (root / DIR_PARAMS).is_file():
        return None
    data = load_toml(root / DIR_PARAMS)
    value = dir_params(data, root / DIR_PARAMS).code_root
    if value is None:
        return None
    return (root / value).resolve()


def expand_directories(patterns: list[str], base: Path) -> list[Path]:
    """Design directories named by paths or glob patterns (relative to ``base`` when not
    absolute), in a stable order, each once; a pattern that names none is an input error."""
    import glob

    found: list[Path] = []
    for pattern in patterns:
        rooted = pattern if Path(pattern).is_absolute() else str(base / pattern)
        matches = sorted(Path(m) for m in glob.glob(rooted, recursive=True))
        dirs = [m.resolve() for m in matches if (m / "_workflow").is_dir()]
        if not dirs:
            raise InputError(
                f"{pattern!r} names no design directory",
                hint="pass directories that hold _workflow/, or a glob such as 'docs/adr/*'",
            )
        found += [d for d in dirs if d not in found]
    return found
