"""Role definitions: agents/*.md (YAML frontmatter + instructions) and prompts/*.md, as data.

A user overrides any definition or prompt by placing a file of the same name under
``.designloop/agents/`` or ``.designloop/prompts/`` at their repository root.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr, ValidationInfo, field_validator

from pipeline import confinement
from pipeline.agents.shell import describe, installed
from pipeline.errors import InputError
from pipeline.formats.textio import read_text
from pipeline.settings import USER_PARAMS, data_dir, load_limits, load_toml
from pipeline.validation import validated, yaml_locator

TOOLS = ("Read", "Grep", "Glob", "Write", "Edit", "Bash", "PSI")
WRITE_TOOLS = frozenset({"Write", "Edit"})
OVERRIDE_DIR = ".designloop"
SETTING_FLOOR = "{whole_doc_floor}"
"""Where an agent's instructions quote ``[partition] whole_doc_floor``."""
BASH_COMMANDS = "{bash_commands}"
"""Where an agent's instructions list the commands the Bash tool runs on this machine."""
NOT_WORKFLOW = frozenset({"models", "worker"})
"""Tables of a user's designloop.toml that do not change what a run does to a design."""
Output = Literal["review", "author", "editor"]
Tier = Literal["strong", "fast"]


@dataclass(frozen=True, slots=True)
class RoleDef:
    name: str
    description: str
    tools: tuple[str, ...]
    tier: Tier
    output: Output
    reads_research_log: bool
    prompts: tuple[str, ...]
    body: str
    source: Path

    @property
    def cold(self) -> bool:
        """A cold role never reads the research log, whatever path reaches it."""
        return not self.reads_research_log

    @property
    def writes(self) -> bool:
        return bool(WRITE_TOOLS & set(self.tools))


def _dirs(kind: str, repo_root: Path | None) -> list[Path]:
    dirs = []
    if repo_root is not None and (repo_root / OVERRIDE_DIR / kind).is_dir():
        dirs.append(repo_root / OVERRIDE_DIR / kind)
    dirs.append(data_dir(kind))
    return dirs


def find_file(kind: str, name: str, repo_root: Path | None) -> Path:
    for directory in _dirs(kind, repo_root):
        candidate = directory / name
        if candidate.is_file():
            return candidate
    raise InputError(f"no {kind[:-1]} named {name}", hint=f"expected {data_dir(kind) / name}")


class Frontmatter(BaseModel):
    """The fields of an agent definition's YAML frontmatter (docs/agents.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr
    description: StrictStr
    model_tier: Tier
    output: Output
    reads_research_log: StrictBool
    tools: tuple[str, ...]
    """The allow-list: a comma-separated string or a list (checked against the fields above)."""
    prompts: tuple[StrictStr, ...] = ()

    @field_validator("tools", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(t.strip() for t in value.split(",") if t.strip())
        if isinstance(value, list):
            return tuple(str(t).strip() for t in value)
        raise ValueError("tools must be a comma-separated string or a list, e.g. tools: Read, Grep")

    @field_validator("tools")
    @classmethod
    def _allowed(cls, tools: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        unknown = [t for t in tools if t not in TOOLS]
        if unknown:
            raise ValueError(f"unknown tool(s) {unknown}: tools are {', '.join(TOOLS)}")
        writing = sorted(WRITE_TOOLS & set(tools))
        if info.data.get("output") == "review" and writing:
            raise ValueError(
                f"review role {info.data.get('name')} may not have write tools {writing}:"
                " read-only roles get Read, Grep, Glob or PSI only"
            )
        if info.data.get("reads_research_log") is False and "Bash" in tools:
            raise ValueError(
                "a cold role may not have Bash: it could read the research log through a shell"
                " (drop Bash from its tools, or set reads_research_log: true)"
            )
        return tools

    @field_validator("prompts", mode="before")
    @classmethod
    def _none_is_empty(cls, value: object) -> object:
        return () if value is None else value


def _frontmatter(path: Path, text: str) -> tuple[str, str]:
    """The frontmatter's YAML and the body after it."""
    if not text.startswith("---\n"):
        raise InputError(
            "agent definition has no YAML frontmatter",
            file=path,
            line=1,
            hint="start the file with a '---' line, the fields, and a closing '---'",
        )
    end = text.find("\n---\n", 4)
    if end < 0:
        raise InputError(
            "agent frontmatter is not closed", file=path, line=1, hint="add a closing '---' line"
        )
    return text[4:end], text[end + 5 :]


def parse_role(path: Path) -> RoleDef:
    text = read_text(path, what="agent definition").text
    yaml_text, body = _frontmatter(path, text)
    try:
        meta = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            f"invalid YAML frontmatter: {exc}",
            file=path,
            line=(mark.line + 2) if mark is not None else 1,
            hint="fix the YAML between the '---' lines",
        ) from None
    hint = "fix the field in the frontmatter (docs/agents.md lists the fields and their values)"
    front = validated(
        Frontmatter, meta if meta is not None else {}, path, hint, locate=yaml_locator(yaml_text, 2)
    )
    return RoleDef(
        name=front.name,
        description=front.description,
        tools=front.tools,
        tier=front.model_tier,
        output=front.output,
        reads_research_log=front.reads_research_log,
        prompts=front.prompts,
        body=body.strip() + "\n",
        source=path,
    )


def load_roles(repo_root: Path | None = None) -> dict[str, RoleDef]:
    roles: dict[str, RoleDef] = {}
    for directory in reversed(_dirs("agents", repo_root)):  # shipped first, overrides last
        for path in sorted(directory.glob("*.md")):
            role = parse_role(path)
            if role.name != path.stem:
                raise InputError(
                    f"agent name {role.name!r} does not match its file name",
                    file=path,
                    line=2,
                    hint="rename the file or its name: field so they match",
                )
            roles[role.name] = role
    return roles


def load_prompt(name: str, repo_root: Path | None = None) -> str:
    return read_text(find_file("prompts", name, repo_root), what="prompt").text


def instructions_for(role: RoleDef, repo_root: Path | None = None) -> str:
    """The role's full instructions: its body followed by the shared prompts it names, with the
    settings they quote (``{whole_doc_floor}``) filled in from the run's params and the
    commands the Bash tool runs (``{bash_commands}``) as found on this machine at start-up."""
    parts = [role.body.rstrip()]
    parts += [load_prompt(name, repo_root).rstrip() for name in role.prompts]
    text = "\n\n".join(parts) + "\n"
    if SETTING_FLOOR in text:
        text = text.replace(SETTING_FLOOR, str(load_limits(repo_root).whole_doc_floor))
    if BASH_COMMANDS in text:
        text = text.replace(BASH_COMMANDS, describe(installed()) or "none is installed on this machine")
    return text


def workflow_overrides(repo_root: Path) -> list[Path]:
    """The user's own workflow overrides that exist (.designloop/agents, .designloop/prompts)."""
    return [
        d.relative_to(repo_root)
        for d in (repo_root / OVERRIDE_DIR / "agents", repo_root / OVERRIDE_DIR / "prompts")
        if d.is_dir() and any(p.is_file() for p in d.glob("*.md"))
    ]


def workflow_definitions(repo_root: Path | None = None) -> list[tuple[str, bytes]]:
    """The effective definitions a run uses, for the stamp's digest (docs/formats.md §2):
    every agent and prompt file after overrides, the shipped params files, and the user's
    loop settings (their designloop.toml without the model choice and the queue workers'
    intervals, which are not the workflow)."""
    found: dict[str, bytes] = {}
    for kind in ("agents", "prompts"):
        for directory in reversed(_dirs(kind, repo_root)):  # shipped first, overrides win
            for path in sorted(directory.glob("*.md")):
                found[f"{kind}/{path.name}"] = confinement.read_bytes(path)
    for path in sorted(data_dir("params").glob("*.toml")):
        found[f"params/{path.name}"] = confinement.read_bytes(path)
    if repo_root is not None and (repo_root / USER_PARAMS).is_file():
        user = {k: v for k, v in load_toml(repo_root / USER_PARAMS).items() if k not in NOT_WORKFLOW}
        if user:
            found[f"user/{USER_PARAMS}"] = json.dumps(user, sort_keys=True, default=str).encode()
    return sorted(found.items())
