"""The package layout: dependencies point one way and there are no import cycles.

Every import of every module counts, including those inside functions and under
TYPE_CHECKING, so a lazy import cannot hide an upward dependency.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pipeline"


def _contracts() -> list[dict[str, Any]]:
    """The import contracts (pyproject.toml's [tool.importlinter]; CI runs ``lint-imports``)."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        contracts: list[dict[str, Any]] = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    return contracts


_LAYERED = next(c for c in _contracts() if c["type"] == "layers")
# Lower layers never import higher ones. The root modules (errors, settings, validation) are the
# floor (""); the order is the layers contract's, lowest first.
LAYERS = ["", *reversed(_LAYERED["layers"][:-1])]
ROOT_MODULES = {m.strip() for m in _LAYERED["layers"][-1].split(":")}
# Upward imports the contract allows by name (importer, imported).
ALLOWED = {tuple(rule.split(" -> ")) for rule in _LAYERED.get("ignore_imports", [])}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, name: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    known = modules()
    return {m for m in found if m in known and m != name}


def layer(name: str) -> int:
    parts = name.split(".")
    sub = parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else ""
    return LAYERS.index(sub)


def graph() -> dict[str, set[str]]:
    return {name: imports_of(path, name) for name, path in modules().items()}


def test_the_layers_cover_every_subpackage() -> None:
    subpackages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subpackages == set(LAYERS) - {""}
    root_modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert root_modules == ROOT_MODULES


def test_every_allowed_upward_import_is_still_made() -> None:
    """An import the contract allows by name that the code no longer makes is a stale allowance."""
    edges = graph()
    assert all(dep in edges.get(name, set()) for name, dep in ALLOWED)


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{name} ({LAYERS[layer(name)] or 'root'}) imports {dep} ({LAYERS[layer(dep)] or 'root'})"
        for name, deps in graph().items()
        for dep in deps
        if layer(dep) > layer(name) and (name, dep) not in ALLOWED
    ]
    assert upward == []


def test_there_are_no_import_cycles() -> None:
    edges = graph()
    # Package __init__ imports of their own children are not cycles of the code.
    done: set[str] = set()
    stack: list[str] = []

    def visit(name: str) -> None:
        if name in stack:
            cycle = [*stack[stack.index(name) :], name]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        stack.append(name)
        for dep in sorted(edges.get(name, ())):
            if dep.startswith(name + "."):
                continue
            visit(dep)
        stack.pop()
        done.add(name)

    for name in sorted(edges):
        visit(name)


def test_the_checker_sees_lazy_and_upward_imports(tmp_path: Path) -> None:
    """The test itself can fail: a function-level upward import is reported."""
    src = tmp_path / "mod.py"
    src.write_text(
        "def f():\n    from pipeline.graph.create.build import build_graph\n    return build_graph\n"
    )
    found = imports_of(src, "pipeline.formats.mod")
    assert "pipeline.graph.create.build" in found
    assert layer("pipeline.graph.create.build") > layer("pipeline.formats.mod")
