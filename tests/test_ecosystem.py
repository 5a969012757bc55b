"""designloop among the tools its users already run: output that survives a pipe and a CI
log, the engine named, a configuration that refuses typos, the command-line conventions
(--version, -h, completion, -q, -v, --no-diff, many paths), no vendor's banner or hints."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from agentkit import make_repo
from conftest import ROOT, cli_done, run_cli

ANSI = re.compile(r"\x1b\[")


def designloop(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """designloop as a process whose stdout and stderr are pipes (never a terminal)."""
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE")}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=base | env,
    )


def in_process(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """designloop in this process, its output captured (never a terminal), with no colour
    setting from the environment: where the output's content is tested, not the pipe."""
    return cli_done(args, cwd, {"FORCE_COLOR": None, "NO_COLOR": None, "TTY_COMPATIBLE": None})


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


EDIT = [
    "edit",
    "docs/adr/0001",
    "--kind",
    "content-edit",
    "--section",
    "Buckets per tenant and route",
    "--old",
    "An allowed request goes",
    "--new",
    "An allowed request, whatever the length of this line, which a terminal of eighty columns "
    "would have to wrap twice over before it ended, goes",
]


@pytest.mark.slow
def test_piped_output_is_a_valid_diff_with_no_ansi_and_names_the_engine(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    repo = d.repo_root
    assert git(repo, "init", "-q").returncode == 0
    assert "An allowed request goes" in d.design.read_text()
    edited = designloop(EDIT, repo)
    assert edited.returncode == 0, edited.stderr
    out = edited.stdout
    assert not ANSI.search(out) and not ANSI.search(edited.stderr)
    # The diff is printed as it is: the long + line whole, and the patch applies (backwards,
    # onto the file as the edit left it).
    long_line = next(line for line in out.splitlines() if line.startswith("+") and "eighty columns" in line)
    assert "wrap twice over before it ended" in long_line  # one line, never hard-wrapped
    patch = tmp_path / "out.patch"
    patch.write_text(out)
    check = git(repo, "apply", "-R", "--check", str(patch))
    assert check.returncode == 0, check.stderr
    # Who reviewed: the outcome line and the review-log entry say it (and the revision it left).
    outcome, step = out.rstrip().splitlines()[-2:]
    assert "reviewed by the offline engine for every role (rule-based, no model)" in outcome
    assert outcome.endswith("; design.md r1 candidate")
    assert step.startswith("next: designloop approve docs/adr/0001 accepts design.md r1 (a candidate")
    assert "**Models**: the offline engine for every role" in d.mutations.read_text()


def test_a_created_file_diffs_from_dev_null_and_a_missing_last_newline_is_said() -> None:
    from pipeline.graph.diff import NO_NEWLINE

    assert NO_NEWLINE == "\\ No newline at end of file"


@pytest.mark.slow
def test_json_names_each_roles_model_and_carries_a_schema_version(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    result = in_process([*EDIT, "--json"], d.repo_root)
    data = json.loads(result.stdout)
    assert data["schema_version"] == 1
    assert data["models"] and set(data["models"].values()) == {"offline"}
    assert "comprehension-review" in data["models"] or "readability-auditor" in data["models"]
    assert isinstance(data["usage"]["cost_usd"], str)


@pytest.mark.slow
def test_quiet_prints_the_outcome_alone_and_no_diff_leaves_the_diff_out(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    quiet = in_process([*EDIT, "-q"], d.repo_root)
    assert quiet.returncode == 0, quiet.stderr
    # The outcome line, then the next step: nothing else.
    assert quiet.stdout.count("\n") == 2 and quiet.stdout.startswith("run ") and ": PASS" in quiet.stdout
    assert quiet.stdout.splitlines()[1].startswith("next: designloop approve ")
    assert quiet.stderr == ""
    again = [*EDIT[:-4], "--old", "An allowed request,", "--new", "A request let through,", "--no-diff", "-v"]
    shown = in_process(again, d.repo_root)
    assert shown.returncode == 0, shown.stderr
    assert "## Review log" in shown.stdout and "## Diff" not in shown.stdout and "@@" not in shown.stdout
    # --verbose: each step a line on stderr as it happened, in plain words.
    assert (
        "comprehension-review: started (offline engine)" in shown.stderr
        or "started (offline engine)" in shown.stderr
    )
    assert "=[]" not in shown.stderr and "inconclusive=" not in shown.stderr


def test_tables_off_a_terminal_are_tab_separated_and_never_cut(tmp_path: Path, monkeypatch: Any) -> None:
    d = make_repo(tmp_path)
    monkeypatch.chdir(d.repo_root)
    runs = tmp_path / "a-runs-directory-with-a-long-name"
    done = run_cli([*EDIT, "--runs-dir", str(runs), "--json"])
    run_id = json.loads(done.out)["run_id"]
    listed = run_cli(["runs", "--runs-dir", str(runs)])
    lines = listed.out.splitlines()
    header = ["run", "kind", "state", "round", "outcome", "revision", "tokens", "cost", "directory"]
    assert lines[0].split("\t") == header
    row = lines[1].split("\t")
    assert row[0] == run_id and row[-1] == "docs/adr/0001" and row[7] == "$0.0000"
    assert row[5] == "design.md r1 candidate"
    status = run_cli(["status", run_id, "--runs-dir", str(runs)])
    assert status.out.startswith(f"{run_id} content-edit docs/adr/0001")
    assert all("…" not in line for line in listed.out.splitlines() + status.out.splitlines())


def test_on_a_terminal_tables_fold_and_force_color_colours(monkeypatch: Any) -> None:
    from rich.console import Console

    from pipeline.cli.output import rich_table

    long_id = "20261201-120000-content-edit-abcdef"
    console = Console(width=40, record=True, force_terminal=True)
    console.print(rich_table(("run", "directory"), [[long_id, "docs/adr/0001-a-very-long-directory-name"]]))
    text = console.export_text()
    assert "…" not in text
    assert "".join(line.strip("│ ┃") for line in text.splitlines() if "2026" in line or "abcdef" in line)
    monkeypatch.setenv("FORCE_COLOR", "1")
    from pipeline.cli.output import is_terminal

    assert is_terminal()
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("NO_COLOR", "1")
    from pipeline.cli.output import console as out

    assert out().no_color


def test_an_unpriced_model_is_never_shown_as_free() -> None:
    from decimal import Decimal

    from pipeline.cli.output import cost_text
    from pipeline.runs.events import Spawned
    from pipeline.runs.replay import apply
    from pipeline.runs.run_view import RunView

    view = RunView("r")
    apply(view, Spawned(round=1, role="design-author", status="ok", model="openai:local", calls=3, tokens=9))
    apply(view, Spawned(round=1, role="readability-auditor", status="ok", model="offline", calls=1))
    assert view.unpriced == ["openai:local"]
    assert cost_text(view.cost, view.unpriced) == "unpriced (openai:local)"
    assert cost_text(Decimal("0.5"), ["x:y"]) == "$0.5000 + unpriced (x:y)"
    assert cost_text(Decimal(0)) == "$0.0000"


# --- the configuration --------------------------------------------------------------------

TYPOS = [
    ('[models.roles]\ndesign-autor = "openai:gpt-5"\n', 2, "'design-autor'", "did you mean 'design-author'?"),
    ('[models]\ndefault = "openai:gpt-5"\n', 2, "[models] default: not a known key", "tiers, roles"),
    ("[loop]\nbudgett = 5\n", 2, "[loop] budgett: not a known key", "did you mean [loop] iteration_budget?"),
    ("[modles.tiers]\nfast = 'x:y'\n", 1, "modles: not a known key", "did you mean models?"),
    (
        "[run]\nspawn_timout = 5\n",
        2,
        "[run] spawn_timout: not a known key",
        "did you mean [run] spawn_timeout?",
    ),
]


@pytest.mark.parametrize(("toml", "line", "named", "hint"), TYPOS)
def test_a_typo_in_designloop_toml_exits_2_naming_the_key(
    tmp_path: Path, monkeypatch: Any, toml: str, line: int, named: str, hint: str
) -> None:
    d = make_repo(tmp_path)
    (d.repo_root / "designloop.toml").write_text(toml)
    monkeypatch.chdir(d.repo_root)
    before = d.design.read_bytes()
    for args in (
        ["roles"],
        ["config"],
        ["estimate", "docs/adr/0001"],
        ["create", "docs/adr/0001", "--force"],
    ):
        result = run_cli(args)
        assert result.code == 2, (args, result.err)
        assert f"designloop.toml:{line}: " in result.err and named in result.err and hint in result.err
    assert d.design.read_bytes() == before


def test_a_design_directorys_own_settings_are_checked_too(tmp_path: Path, monkeypatch: Any) -> None:
    d = make_repo(tmp_path)
    (d.root / "designloop.toml").write_text('code_root = "../../../code"\nmechanics_companon = true\n')
    monkeypatch.chdir(d.repo_root)
    result = run_cli(["estimate", "docs/adr/0001"])
    assert result.code == 2 and "designloop.toml:2: mechanics_companon: not a known key" in result.err
    assert "did you mean mechanics_companion?" in result.err


def test_config_prints_each_value_and_where_it_came_from(tmp_path: Path, monkeypatch: Any) -> None:
    d = make_repo(tmp_path)
    (d.repo_root / "designloop.toml").write_text(
        '[loop]\niteration_budget = 5\n\n[models.tiers]\nfast = "openai:gpt-5-mini"\n'
    )
    monkeypatch.chdir(d.repo_root)
    monkeypatch.delenv("DESIGNLOOP_MODEL", raising=False)
    data = json.loads(run_cli(["config", "--json", "--role-model", "design-author=anthropic:claude-x"]).out)
    assert data["schema_version"] == 1
    settings = {s["setting"]: s for s in data["settings"]}
    user = "designloop.toml"  # relative to the repository: no machine's folders in what is printed
    assert settings["[loop] iteration_budget"] == {
        "setting": "[loop] iteration_budget",
        "value": 5,
        "from": f"{user}:2",
    }
    assert settings["[loop] sync_suggestion_at"]["from"].endswith("defaults.toml")
    models = {m["role"]: m for m in data["models"]}
    assert models["design-author"] == {
        "role": "design-author",
        "model": "anthropic:claude-x",
        "from": "--role-model design-author=...",
    }
    assert models["readability-auditor"]["from"] == "designloop.toml [models.tiers] fast"
    assert models["comprehension-review"] == {
        "role": "comprehension-review",
        "model": "offline",
        "from": "no model configured",
    }
    text = run_cli(["config"]).out
    assert text.splitlines()[0] == "setting\tvalue\tfrom"  # pure TSV: the header on line 1
    assert f"[loop] iteration_budget\t5\t{user}:2" in text and str(d.repo_root) not in text


# --- vendor banners and hints -----------------------------------------------------------


def test_no_vendor_banner_and_no_vendor_hints(monkeypatch: Any) -> None:
    import pydantic_ai
    from pydantic_ai import _display
    from pydantic_ai.providers import missing_api_key_error

    import pipeline.agents.runtime  # noqa: F401  (where designloop runs its agents)
    from pipeline.agents.models import without_vendor_hints

    for name in ("CI", "PYTEST_VERSION", "PYDANTIC_AI_NO_BANNER"):
        monkeypatch.delenv(name, raising=False)
    assert pydantic_ai.BANNER_ENABLED is False and _display._banner_suppressed()
    error = str(missing_api_key_error("Set the `OPENAI_API_KEY` environment variable."))
    assert "Agent('test')" in error  # what the vendor says to its own users
    assert without_vendor_hints(error) == "Set the `OPENAI_API_KEY` environment variable."


def test_a_missing_key_error_names_no_vendor_test_model(tmp_path: Path, monkeypatch: Any) -> None:
    d = make_repo(tmp_path)
    monkeypatch.chdir(d.repo_root)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = run_cli(["create", "docs/adr/0001", "--model", "openai:gpt-5", "--force"])
    assert result.code == 2 and "OPENAI_API_KEY" in result.err
    assert "Agent(" not in result.err and "pydantic.dev" not in result.err


# --- command-line conventions -------------------------------------------------------------


def _commands() -> list[list[str]]:
    from pipeline.cli import batch, config, discard, edit, records, reports, runs, workers  # noqa: F401
    from pipeline.cli.app import command_tree

    out: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        children = getattr(command, "commands", {})
        for name, child in children.items():
            walk(child, [*path, name])
        if not children:
            out.append(path)

    walk(command_tree(), [])
    return out


def test_version_and_help_everywhere_with_no_python_types() -> None:
    from pipeline import __version__

    assert run_cli(["--version"]).out == f"designloop {__version__}\n"
    assert run_cli(["-V"]).code == 0
    commands = _commands()
    assert ["batch", "final"] in commands and ["config"] in commands and ["check"] in commands
    for command in commands:
        for flag in ("-h", "--help"):
            shown = run_cli([*command, flag])
            assert shown.code == 0, (command, shown.err)
            assert "usage" in shown.out.lower(), command
            assert not re.search(r"<(str|int|path|bool|list\[str\]|float)>", shown.out), (command, shown.out)


def test_a_usage_error_names_the_program_once() -> None:
    for args in (["create", "--bogus"], ["check", "--bogus"]):
        result = run_cli(args)
        assert result.code == 2
        assert result.err.startswith(f"designloop: {args[0]}: ") and result.err.count("designloop") == 2
        assert f"see 'designloop {args[0]} --help'" in result.err


def test_shell_completion_completes_commands_and_options(tmp_path: Path) -> None:
    env = {"COMP_WORDS": "designloop cr", "COMP_CWORD": "1", "_DESIGNLOOP_COMPLETE": "complete_bash"}
    done = designloop([], tmp_path, **env)
    assert done.stdout.split() == ["create"], done.stderr
    env = {
        "COMP_WORDS": "designloop create --no-",
        "COMP_CWORD": "2",
        "_DESIGNLOOP_COMPLETE": "complete_bash",
    }
    assert set(designloop([], tmp_path, **env).stdout.split()) == {"--no-warmup", "--no-diff"}
    # The shell named, not detected from the processes above (under a test runner there may be
    # no shell among them): typer's own switch for that makes --show-completion take a value.
    shown = designloop(
        ["--show-completion", "bash"], tmp_path, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1"
    )
    assert "_DESIGNLOOP_COMPLETE" in shown.stdout


def test_check_takes_many_paths_and_globs(tmp_path: Path, monkeypatch: Any) -> None:
    import shutil

    d = make_repo(tmp_path)
    twin = d.root.parent / "0002"
    shutil.copytree(d.root, twin)
    broken = twin / "_workflow" / "design.md"
    broken.write_text(broken.read_text().replace("## Overview", "## Overveiw", 1))
    monkeypatch.chdir(d.repo_root)
    both = run_cli(["check", "docs/adr/*"])
    assert both.code == 1
    files = {f["file"] for f in json.loads(both.out)["findings"]}
    assert files == {"docs/adr/0002/_workflow/design.md"}
    one = run_cli(["check", "docs/adr/0001", "docs/adr/0001/_workflow/design.md"])
    assert one.code == 0 and json.loads(one.out)["findings"] == []  # one design, named twice, checked once
    assert len(json.loads(one.out)["files"]) == 1
    by_file = run_cli(["check", str(broken), "--format", "text"])
    assert by_file.code == 1 and "dsc-section-shape" in by_file.out
    assert run_cli(["check", "docs/nowhere/*"]).code == 2


def test_the_pre_commit_hook_runs_check_on_design_documents() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert hook["id"] == "designloop-check" and hook["language"] == "python"
    assert hook["entry"].split()[:2] == ["designloop", "check"]
    files = re.compile(hook["files"])
    for name in (
        "docs/adr/1/_workflow/design.md",
        "a/_workflow/design-mechanics.md",
        "docs/x/design-final.md",
    ):
        assert files.search(name), name
    for name in ("docs/adr/1/_workflow/research-log.md", "README.md", "docs/design.md"):
        assert not files.search(name), name


def test_printed_hints_carry_the_flags_needed_to_paste_them(tmp_path: Path) -> None:
    runs = tmp_path / "elsewhere"
    empty = run_cli(["status", "--runs-dir", str(runs)])
    assert empty.code == 2 and f"designloop create DIR --runs-dir {runs}" in empty.err
    missing = run_cli(["resume", "20261201-000000-p1-abcdef", "--runs-dir", str(runs)])
    assert missing.code == 2


def test_pasteable_adds_the_runs_flags_to_each_suggested_command() -> None:
    from pipeline.cli import output

    output._FLAGS.clear()
    assert (
        output.pasteable("designloop resume 20261201-000000-p1-abcdef")
        == "designloop resume 20261201-000000-p1-abcdef"
    )
    output.remember_flag("--runs-dir", "/tmp/my runs")
    text = "no process is running it; designloop resume 20261201-000000-p1-abcdef continues it (designloop status shows who)"
    assert output.pasteable(text) == (
        "no process is running it; designloop resume 20261201-000000-p1-abcdef --runs-dir '/tmp/my runs' "
        "continues it (designloop status --runs-dir '/tmp/my runs' shows who)"
    )
    output._FLAGS.clear()


# --- the live view ------------------------------------------------------------------------


def test_the_live_view_shows_spawns_in_flight_and_fits_the_terminal() -> None:
    from rich.console import Console

    from pipeline.cli.live import LiveState, step_line
    from pipeline.runs.check_events import DualCleanCheck, MechanicalCheck
    from pipeline.runs.events import RoundStarted, SpawnBegun, Spawned

    state = LiveState("phase1-creation")
    state.apply(RoundStarted(round=1, budget=3))
    for start in range(1, 3000, 100):
        state.apply(Spawned(round=1, role="readability-auditor", slice=(start, start + 99), status="ok"))
    state.apply(SpawnBegun(round=1, role="absorption-check", model="anthropic:claude-x"))
    for _ in range(30):
        state.apply(MechanicalCheck(round=1))
    state.apply(DualCleanCheck(round=1, clean=False, inconclusive=[]))
    console = Console(width=100, height=24, record=True)
    console.print(state.render(24))
    text = console.export_text()
    assert len(text.splitlines()) <= 24
    assert "r1 absorption-check" in text and "running" in text and "anthropic:claude-x" in text
    assert "earlier" in text  # the spawns that did not fit are counted, not dropped silently
    assert "inconclusive=[]" not in text and "mechanical checks: clean" in text
    assert step_line(SpawnBegun(round=2, role="design-author", model="offline")) == (
        "  design-author: started (offline engine)"
    )
    wide = Console(width=100, height=24, record=True)
    wide.print(LiveState("phase1-creation").render(24))
    widths = {len(line) for line in wide.export_text().splitlines() if line.startswith("┏")}
    assert widths == {len(line) for line in text.splitlines() if line.startswith("┏")}  # fixed widths


# --- the CI recipe -------------------------------------------------------------------------

WORKFLOW = ROOT / "examples" / "ci" / "designloop.yml"
SHA = re.compile(r"^[\w./-]+@[0-9a-f]{40}$")


def _steps() -> list[dict[str, Any]]:
    flow = yaml.safe_load(WORKFLOW.read_text())
    steps: list[dict[str, Any]] = flow["jobs"]["design-final"]["steps"]
    return steps


def test_the_workflow_pins_every_action_to_a_commit() -> None:
    uses = [step["uses"] for step in _steps() if "uses" in step]
    assert len(uses) == 5 and all(SHA.match(u) for u in uses), uses
    text = WORKFLOW.read_text()
    for action in ("checkout", "setup-python", "cache", "upload-artifact", "upload-sarif"):
        comment = re.search(rf"{action}@[0-9a-f]{{40}} # v(\d+)", text)
        assert comment is not None, action
    assert "pip install designloop" not in text and "@ ${DESIGNLOOP_SOURCE}" in text


WORKFLOW_SCHEMA = ROOT / "tests" / "schemas" / "github-workflow.json"


def _workflow_errors(text: str) -> list[str]:
    """What SchemaStore's GitHub workflow schema (tests/schemas, Apache-2.0) finds in a workflow."""
    import jsonschema

    flow = yaml.safe_load(text)
    if True in flow:  # YAML 1.1 reads the key `on` as a boolean
        flow["on"] = flow.pop(True)
    validator = jsonschema.Draft7Validator(json.loads(WORKFLOW_SCHEMA.read_text()))
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(flow)]


def test_the_workflow_is_valid_against_the_workflow_schema() -> None:
    assert _workflow_errors(WORKFLOW.read_text()) == []
    mistyped = WORKFLOW.read_text().replace("runs-on:", "runs_on:", 1)
    assert _workflow_errors(mistyped), "a mistyped key is found"


def test_actionlint_finds_nothing_in_the_workflow(tmp_path: Path) -> None:
    """actionlint also checks expressions and the steps' outputs; it installs with the lint
    extra where GitHub is reachable (its wheel downloads the binary), so it is skipped elsewhere."""
    import shutil

    actionlint = shutil.which(
        "actionlint", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if actionlint is None:
        pytest.skip("actionlint is not installed (pip install -e '.[lint]')")
    checked = subprocess.run(
        [actionlint, "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    broken = tmp_path / "designloop.yml"
    broken.write_text(WORKFLOW.read_text().replace("steps.batch.outputs.exit", "steps.batch.output.exit"))
    assert subprocess.run([actionlint, str(broken)], capture_output=True, timeout=120).returncode == 1


@pytest.mark.slow
def test_the_workflows_batch_step_runs_offline_with_no_key(tmp_path: Path) -> None:
    from batchkit import batch_repo

    repo = batch_repo(tmp_path, ["a", "b"])
    (step,) = [s for s in _steps() if s.get("id") == "batch"]
    outputs = tmp_path / "github-output"
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env |= {
        "GITHUB_OUTPUT": str(outputs),
        "ANTHROPIC_API_KEY": "",
        "PATH": f"{Path(sys.executable).parent}:{env['PATH']}",
    }
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=repo, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert outputs.read_text() == "exit=0\n", done.stdout + done.stderr
    sarif = json.loads((repo / "designloop.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    assert "2 directories: 2 PASS" in done.stderr  # the summary: stdout holds the table alone
    assert "started (offline engine)" in done.stderr  # --verbose: the CI log says who reviewed


# --- reports and SARIF --------------------------------------------------------------------

SARIF_SCHEMA = ROOT / "tests" / "schemas" / "sarif-schema-2.1.0.json"


def valid_sarif(text: str) -> dict[str, Any]:
    """The SARIF document, checked against the OASIS SARIF 2.1.0 schema."""
    import jsonschema

    document: dict[str, Any] = json.loads(text)
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.Draft4Validator(schema).validate(document)
    return document


def test_the_vendored_schema_refuses_what_is_not_sarif() -> None:
    import jsonschema

    with pytest.raises(jsonschema.ValidationError):
        valid_sarif(json.dumps({"version": "2.1.0", "runs": [{"tool": {"driver": {}}, "results": []}]}))


def test_check_sarif_is_valid_relative_and_fingerprinted_whatever_line_a_finding_moves_to(
    tmp_path: Path, monkeypatch: Any
) -> None:
    d = make_repo(tmp_path)
    monkeypatch.chdir(tmp_path)  # not the repository root: paths are still relative to it
    text = d.design.read_text().replace(
        "## Bucket state in Redis\n\n**TL;DR:**", "## Bucket state in Redis\n\nNo"
    )
    d.design.write_text(text)
    first = valid_sarif(run_cli(["check", str(d.root), "--format", "sarif"]).out)
    (result,) = [r for r in first["runs"][0]["results"] if r["ruleId"] == "dsc-section-shape"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "docs/adr/0001/_workflow/design.md", "uriBaseId": "%SRCROOT%"}
    assert str(tmp_path) not in json.dumps(first)  # no absolute path anywhere, messages included
    rules = {r["id"]: r for r in first["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["dsc-section-shape"]["help"]["text"]
    lines = text.splitlines(keepends=True)
    d.design.write_text("".join([lines[0], "\n\n\n", *lines[1:]]))  # the finding moves three lines down
    moved = valid_sarif(run_cli(["check", str(d.root), "--format", "sarif"]).out)
    (again,) = [r for r in moved["runs"][0]["results"] if r["ruleId"] == "dsc-section-shape"]
    region = again["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert region == result["locations"][0]["physicalLocation"]["region"]["startLine"] + 3
    assert again["partialFingerprints"] == result["partialFingerprints"]


def test_batch_sarif_points_at_the_file_really_at_fault(tmp_path: Path) -> None:
    from pipeline.cli.batch_sarif import batch_sarif
    from pipeline.fleet.rows import Batch, Row
    from pipeline.formats.kinds import PHASE4

    repo = tmp_path / "repo"
    (repo / "docs" / "adr" / "c" / "_workflow").mkdir(parents=True)
    missing = repo / "docs" / "adr" / "c" / "_workflow" / "research-log.md"
    paused = Row(
        directory="docs/adr/p", action="resumed", outcome="PAUSED", exit_code=3, message="the gate is open"
    )
    bad = Row(directory="docs/adr/c", action="bad", exit_code=2, message=f"{missing}: research log not found")
    held = Row(directory="docs/adr/h", action="busy", exit_code=2, message="another run holds it")
    batch = Batch(batch_id="b1", kind=PHASE4, rows=[paused, bad, held])
    document = valid_sarif(batch_sarif(batch, repo))
    where = {
        r["ruleId"] + " " + r["message"]["text"].split(":")[0]: r["locations"][0]["physicalLocation"][
            "artifactLocation"
        ]["uri"]
        for r in document["runs"][0]["results"]
    }
    assert where == {
        "designloop-paused docs/adr/p": "docs/adr/p/_workflow/research-log.md",
        "designloop-bad-input docs/adr/c": "docs/adr/c/_workflow",  # the missing file's parent
        "designloop-bad-input docs/adr/h": "docs/adr/h/design-final.md",
    }
    assert str(repo) not in json.dumps(document)
    rules = {r["id"]: r for r in document["runs"][0]["tool"]["driver"]["rules"]}
    assert "adversarial gate" in rules["designloop-paused"]["help"]["text"]


@pytest.mark.slow
def test_the_html_report_leads_with_the_findings_and_colours_the_diff(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    runs = tmp_path / "runs"
    edited = in_process([*EDIT, "--runs-dir", str(runs), "--json"], d.repo_root)
    run_id = json.loads(edited.stdout)["run_id"]
    made = in_process(["report", run_id, "--runs-dir", str(runs)], d.repo_root)
    assert made.returncode == 0, made.stderr
    page = (runs / run_id / "report.html").read_text()
    head, rest = page.split("<h2>Findings that remain</h2>", 1)
    assert "<h2>" not in head  # the findings come first
    assert "reviewed by the offline engine (" in head and "took " in head and "Started 20" in head
    diff = rest.split("<h2>Diff</h2>", 1)[1].split("<h2>", 1)[0]
    assert 'style="' in diff and "eighty columns" in diff  # coloured by Pygments, every line kept
    assert "white-space:pre-wrap" in page  # wrapped, never clipped


def test_a_missing_research_log_says_what_to_do_without_naming_a_flag(tmp_path: Path) -> None:
    d = make_repo(tmp_path)
    d.research_log.unlink()
    result = run_cli(["gate", str(d.root)])
    assert result.code == 2 and "research log not found" in result.err
    assert "flag" not in result.err and "_workflow/research-log.md" in result.err.split("what to do:")[1]


def test_a_store_address_with_a_password_never_reaches_a_hint() -> None:
    from pipeline.cli import output
    from pipeline.cli.options import open_store

    output.forget_flags()
    secret = "postgresql://ci:s3cretpw@127.0.0.1:99999/db"
    with pytest.raises(Exception):  # noqa: B017 (the port is refused; the flag is remembered first)
        open_store(secret, None)
    assert "s3cretpw" not in output.pasteable("designloop runs") and "--store URL" in output.pasteable(
        "designloop runs"
    )
    output.forget_flags()


def test_a_spawns_start_reaches_the_live_view_and_never_a_store(tmp_path: Path) -> None:
    from pipeline.runs.event_log import EventLog, read_events
    from pipeline.runs.events import RoundStarted, SpawnBegun

    log = EventLog(tmp_path)
    stored: list[object] = []
    shown: list[object] = []
    log.subscribe(stored.append)  # a store's publisher
    log.subscribe(shown.append, notices=True)  # the live view
    log.emit(RoundStarted(round=1, budget=3))
    log.notify(SpawnBegun(round=1, role="design-author", model="offline"))
    assert [type(e) for e in stored] == [RoundStarted]
    assert [type(e) for e in shown] == [RoundStarted, SpawnBegun]
    assert [type(e) for e in read_events(tmp_path)] == [RoundStarted]
