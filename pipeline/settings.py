"""Defaults from params/ and the user's overrides: the TOML files and the tables they hold."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline import confinement
from pipeline.bounded import MAX_BYTES
from pipeline.bounded import load_toml as bounded_toml
from pipeline.errors import InputError
from pipeline.validation import toml_locator, toml_name, validated

PACKAGE_DIR = Path(__file__).resolve().parent
USER_PARAMS = "designloop.toml"


def data_dir(name: str) -> Path:
    """A shipped data directory (params, agents, prompts), installed or in a checkout."""
    installed = PACKAGE_DIR / "_data" / name
    if installed.is_dir():
        return installed
    return PACKAGE_DIR.parent / name


def load_toml(path: Path) -> dict[str, Any]:
    """A params file (shipped, or the user's designloop.toml), read through the confinement
    guard and parsed within bounds (pipeline.bounded)."""
    try:
        data = confinement.read_bytes(path, what="params file", limit=MAX_BYTES)
    except FileNotFoundError:
        raise InputError(
            "params file not found", file=path, hint="reinstall designloop, or restore the file"
        ) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", file=path, hint="pass the file's path") from None
    except OSError as exc:
        raise InputError(
            f"params file could not be read: {exc.strerror or exc}",
            file=path,
            hint="pass a readable TOML file",
        ) from None
    return bounded_toml(data, file=path, what="params file", hint="fix the TOML syntax")


@dataclass(frozen=True, slots=True)
class Limits:
    window: int = 200
    cap: int = 6
    single_slice_max: int = 250
    whole_doc_floor: int = 300
    iteration_budget: int = 3
    periodic_whole_doc_every: int = 5
    sync_suggestion_at: int = 5
    section_length_cap: int = 150
    top_level_line_cap: int = 2000
    top_level_token_cap: int = 50000
    chars_per_token: int = 4


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


_DEFAULT = Limits()
Positive = Annotated[int, Field(ge=1)]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Table(BaseModel):
    """One table of a params file: its keys and nothing else, of their exact types (no "3"
    read as 3, no true read as 1)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class PartitionTable(_Table):
    window: Positive = _DEFAULT.window
    cap: Positive = _DEFAULT.cap
    single_slice_max: Positive = _DEFAULT.single_slice_max
    whole_doc_floor: Positive = _DEFAULT.whole_doc_floor


class LoopTable(_Table):
    iteration_budget: Positive = _DEFAULT.iteration_budget
    periodic_whole_doc_every: Positive = _DEFAULT.periodic_whole_doc_every
    sync_suggestion_at: Positive = _DEFAULT.sync_suggestion_at


class LimitsTable(_Table):
    section_length_cap: Positive = _DEFAULT.section_length_cap
    top_level_line_cap: Positive = _DEFAULT.top_level_line_cap
    top_level_token_cap: Positive = _DEFAULT.top_level_token_cap
    chars_per_token: Positive = _DEFAULT.chars_per_token


class WorkerSettings(_Table):
    """``[worker]``: how a queue worker keeps its jobs (docs/scale.md)."""

    heartbeat: Seconds = 20.0
    """A picked job whose heartbeat is older than this many seconds is taken by another worker
    (a live worker beats at half this interval)."""
    dequeue: Seconds = 10.0
    """An idle worker looks for stale jobs at least this often, in seconds (new jobs arrive at
    once); a draining worker looks this often whether any job is left."""


class ParamsFile(BaseModel):
    """The tables of a params file (params/defaults.toml, a user's designloop.toml) read here;
    the file's other tables ([run], [models], ...) are read by their own readers."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    partition: PartitionTable = PartitionTable()
    loop: LoopTable = LoopTable()
    limits: LimitsTable = LimitsTable()
    worker: WorkerSettings = WorkerSettings()


def params_file(data: dict[str, Any], source: Path) -> ParamsFile:
    hint = "write a positive number under its table (see params/defaults.toml)"
    return validated(ParamsFile, data, source, hint, locate=toml_locator(source), name=toml_name)


class _Names(BaseModel):
    """A table whose keys are checked here and whose values its own reader checks."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RunTable(_Names):
    """``[run]``'s keys (their values: ``run_settings``)."""

    spawn_timeout: object = None
    first_turn_timeout: object = None
    warmup_cap: object = None
    warmup_delay: object = None
    bash_timeout: object = None
    spawn_requests: object = None


class TiersTable(_Names):
    """``[models.tiers]``: a model string per tier (checked by agents.resolve)."""

    strong: object = None
    fast: object = None


class ModelsTable(_Names):
    """``[models]``: ``[models.tiers]`` and ``[models.roles]`` (a role name per key, checked
    against the roles by agents.resolve)."""

    tiers: TiersTable = TiersTable()
    roles: dict[str, object] = Field(default_factory=dict)


class SettingsFile(_Names):
    """Every table and key a params file (params/defaults.toml, a user's designloop.toml) may
    hold: anything else is a typo, refused by name before it silently changes nothing."""

    partition: dict[str, object] = Field(default_factory=dict)
    loop: dict[str, object] = Field(default_factory=dict)
    limits: dict[str, object] = Field(default_factory=dict)
    worker: dict[str, object] = Field(default_factory=dict)
    run: RunTable = RunTable()
    models: ModelsTable = ModelsTable()
    check: dict[str, object] = Field(default_factory=dict)
    """``[check]``: rule selection (read by checks.selection)."""
    rules: dict[str, object] = Field(default_factory=dict)
    """``[rules.ID]``: a rule's severity for this repository (read by checks.selection)."""


def check_settings_file(data: dict[str, Any], source: Path) -> None:
    """Refuse an unknown table or key (naming it, with the likeliest one meant), and a value of
    the wrong type in the tables read here."""
    hint = "see params/defaults.toml for every setting (designloop config prints them)"
    validated(SettingsFile, data, source, hint, locate=toml_locator(source), name=toml_name)
    params_file(data, source)


def limits_from(data: dict[str, Any], source: Path) -> Limits:
    tables = params_file(data, source)
    return Limits(**tables.partition.model_dump(), **tables.loop.model_dump(), **tables.limits.model_dump())


def worker_settings(repo_root: Path | None = None) -> WorkerSettings:
    """``[worker]`` from the defaults and the user's designloop.toml."""
    data, source = merged_params(repo_root)
    return params_file(data, source).worker


@cache
def default_params() -> dict[str, Any]:
    return user_params(data_dir("params") / "defaults.toml")


def merged_params(repo_root: Path | None = None) -> tuple[dict[str, Any], Path]:
    """The defaults merged with the user's designloop.toml, and the file that had the last word."""
    data = default_params()
    source = data_dir("params") / "defaults.toml"
    if repo_root is not None and (repo_root / USER_PARAMS).is_file():
        source = repo_root / USER_PARAMS
        data = _merge(data, user_params(source))
    return data, source


def user_params(path: Path) -> dict[str, Any]:
    """A user's designloop.toml, its tables and keys checked against the schema."""
    data = load_toml(path)
    check_settings_file(data, path)
    return data


def load_limits(repo_root: Path | None = None) -> Limits:
    data, source = merged_params(repo_root)
    return limits_from(data, source)


CHECKPOINTS = "checkpoints.sqlite"
"""The checkpoint store, one SQLite file in the runs directory."""
CACHE_DIR = "cache"
"""The model-call cache, a diskcache directory in the runs directory."""
CACHE_DB = "cache.db"
REVISIONS = "revisions.sqlite"
"""The local store's revisions of design documents (their bytes), one SQLite file in the runs
directory."""


LOCKS_DIR = "locks"
"""Short-lived lock files (the review log's append lock), in the runs directory: never in a
design directory."""
GITIGNORE = "# designloop's run records, checkpoints and model-call cache: not for version control.\n*\n"


def make_runs_dir(runs_dir: Path) -> Path:
    """Create the runs directory (when missing) with its own ``.gitignore`` ("*"), as
    ``.pytest_cache`` and ``.ruff_cache`` carry theirs, so ``git status`` never lists it."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    try:
        with open(runs_dir / ".gitignore", "x", encoding="utf-8") as handle:
            handle.write(GITIGNORE)
    except FileExistsError:
        pass
    return runs_dir


def default_runs_dir(root: Path) -> Path:
    """Where run records, checkpoints and the model-call cache live unless --runs-dir says otherwise."""
    return root / "runs"


def repo_root(start: Path | None = None) -> Path:
    """The nearest ancestor holding ``.git``, else the current directory (docs/formats.md §1)."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return Path.cwd().resolve()


@dataclass(frozen=True, slots=True)
class RunSettings:
    spawn_timeout: float = 600.0
    """The longest one role's spawn may take, all its turns together."""
    first_turn_timeout: float = 30.0
    """The longest a spawn waits for its first answer (a hung provider ends here, not at
    ``spawn_timeout``)."""
    warmup_cap: float = 60.0
    """The longest the rest of a fan-out waits for the first spawn's first answer."""
    bash_timeout: float = 10.0
    spawn_requests: int = 100
    """The most model requests one spawn may make (a role that loops stops here)."""


RENAMED = {"warmup_delay": "warmup_cap"}
"""Earlier names of [run] settings, still read: the fixed warm-up delay became its cap."""
POSITIVE = frozenset({"spawn_timeout", "first_turn_timeout", "bash_timeout", "spawn_requests"})
"""Settings that must be above zero (a zero ``warmup_cap`` means no wait)."""


def _run_value(key: str, value: object, source: Path) -> float:
    """One [run] setting, checked: a finite number (a whole one for a count), at least 0 or above it."""
    whole = key == "spawn_requests"
    kind = "a whole number" if whole else "a number of seconds"
    floor = "above 0" if key in POSITIVE else "0 or more"
    number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan
    ok = math.isfinite(number) and (isinstance(value, int) or not whole)
    ok = ok and (number > 0 if key in POSITIVE else number >= 0)
    if not ok:
        default = getattr(RunSettings(), key)
        raise InputError(
            f"[run] {key} must be {kind}, {floor} (not {value!r})",
            file=source,
            hint=f"e.g. {key} = {default:g} (see params/defaults.toml)",
        )
    return number


def run_settings(data: dict[str, Any], source: Path) -> RunSettings:
    raw = data.get("run", {})
    if not isinstance(raw, dict):
        raise InputError("[run] must be a table", file=source, hint="write the settings under a [run] table")
    values: dict[str, Any] = {}
    for given, value in raw.items():
        key = RENAMED.get(given, given)
        if key in values:
            earlier = ", ".join(k for k, v in RENAMED.items() if v == key)
            raise InputError(
                f"[run] sets {key} twice ({earlier} is its earlier name)",
                file=source,
                hint=f"keep only {key}",
            )
        if key not in RunSettings.__dataclass_fields__:
            raise InputError(
                f"unknown setting [run] {key}",
                file=source,
                hint=f"known: {', '.join(RunSettings.__dataclass_fields__)} (see params/defaults.toml)",
            )
        number = _run_value(key, value, source)
        values[key] = int(number) if key == "spawn_requests" else number
    return RunSettings(**values)
