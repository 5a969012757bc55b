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

from pipeline.errors import InputError
from pipeline.formats.textio import read_text
from pipeline.settings import USER_PARAMS, data_dir, load_toml

TOOLS = ("Read", "Grep", "Glob", "Write", "Edit", "Bash", "PSI")
WRITE_TOOLS = frozenset({"Write", "Edit"})
OVERRIDE_DIR = ".designloop"
Output = Literal["review", "author"]
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


def parse_role(path: Path) -> RoleDef:
    text = read_text(path, what="agent definition").text
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
    try:
        meta = yaml.safe_load(text[4:end]) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            f"invalid YAML frontmatter: {exc}",
            file=path,
            line=(mark.line + 2) if mark is not None else 1,
            hint="fix the YAML between the '---' lines",
        ) from None
    if not isinstance(meta, dict):
        raise InputError(
            "frontmatter must be a mapping of fields",
            file=path,
            line=2,
            hint="write the fields as YAML key: value lines between the '---' lines",
        )

    def field(name: str) -> object:
        if name not in meta:
            raise InputError(
                f"agent definition lacks the '{name}' field",
                file=path,
                line=2,
                hint="add the field to the frontmatter (see docs/agents.md)",
            )
        return meta[name]

    raw_tools = field("tools")
    if isinstance(raw_tools, str):
        tools = tuple(t.strip() for t in raw_tools.split(",") if t.strip())
    elif isinstance(raw_tools, list):
        tools = tuple(str(t).strip() for t in raw_tools)
    else:
        raise InputError(
            "tools must be a comma-separated string or a list",
            file=path,
            line=2,
            hint="e.g. tools: Read, Grep",
        )
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise InputError(
            f"unknown tool(s) {unknown}", file=path, line=2, hint=f"tools are {', '.join(TOOLS)}"
        )
    output, tier = field("output"), field("model_tier")
    if output not in ("review", "author"):
        raise InputError(
            f"output must be 'review' or 'author', not {output!r}",
            file=path,
            line=2,
            hint="set output: review or output: author",
        )
    if tier not in ("strong", "fast"):
        raise InputError(
            f"model_tier must be 'strong' or 'fast', not {tier!r}",
            file=path,
            line=2,
            hint="set model_tier: strong or model_tier: fast",
        )
    reads_log = field("reads_research_log")
    if not isinstance(reads_log, bool):
        raise InputError(
            "reads_research_log must be true or false",
            file=path,
            line=2,
            hint="set reads_research_log: true or reads_research_log: false",
        )
    if output == "review" and WRITE_TOOLS & set(tools):
        raise InputError(
            f"review role {meta.get('name')} may not have write tools {sorted(WRITE_TOOLS & set(tools))}",
            file=path,
            line=2,
            hint="read-only roles get Read, Grep, Glob or PSI only",
        )
    if not reads_log and "Bash" in tools:
        raise InputError(
            "a cold role may not have Bash: it could read the research log through a shell",
            file=path,
            line=2,
            hint="drop Bash from its tools, or set reads_research_log: true",
        )
    prompts = meta.get("prompts") or []
    if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
        raise InputError(
            "prompts must be a list of prompt file names",
            file=path,
            line=2,
            hint="e.g. prompts: [house-style.md]",
        )
    return RoleDef(
        name=str(field("name")),
        description=str(field("description")),
        tools=tools,
        tier="strong" if tier == "strong" else "fast",
        output="author" if output == "author" else "review",
        reads_research_log=reads_log,
        prompts=tuple(prompts),
        body=text[end + 5 :].strip() + "\n",
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
    """The role's full instructions: its body followed by the shared prompts it names."""
    parts = [role.body.rstrip()]
    parts += [load_prompt(name, repo_root).rstrip() for name in role.prompts]
    return "\n\n".join(parts) + "\n"


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
    loop settings (their designloop.toml without the model choice, which is not the workflow)."""
    found: dict[str, bytes] = {}
    for kind in ("agents", "prompts"):
        for directory in reversed(_dirs(kind, repo_root)):  # shipped first, overrides win
            for path in sorted(directory.glob("*.md")):
                found[f"{kind}/{path.name}"] = path.read_bytes()
    for path in sorted(data_dir("params").glob("*.toml")):
        found[f"params/{path.name}"] = path.read_bytes()
    if repo_root is not None and (repo_root / USER_PARAMS).is_file():
        user = {k: v for k, v in load_toml(repo_root / USER_PARAMS).items() if k != "models"}
        if user:
            found[f"user/{USER_PARAMS}"] = json.dumps(user, sort_keys=True, default=str).encode()
    return sorted(found.items())
