"""The packages of `offsets_lib` are its architecture: each may import only the layers below it.

`wire` (the codec) imports nothing of ours; `audit` (the semantics) only `wire`; `io` (sources,
sinks, stored state) and `engine` (how the audit runs on Spark) sit on `audit`; `job`, `tools`
and `cli` on top. Imports inside functions count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "offsets_lib"

# package -> the packages of ours it may import (itself always allowed)
ALLOWED: dict[str, set[str]] = {
    "wire": set(),
    "audit": {"wire"},
    "io": {"wire", "audit"},
    "engine": {"wire", "audit", "io"},
    "job": {"wire", "audit", "io", "engine"},
    "tools": {"wire", "audit", "io", "engine", "job"},
    "cli": {"wire", "audit", "io", "engine", "job", "tools"},
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every offsets_lib module named by an import anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("offsets_lib")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("offsets_lib"):
            # `from offsets_lib.x import y`: y may be a module of package x
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                as_module = PACKAGE.parent / Path(*candidate.split("."))
                is_module = as_module.with_suffix(".py").exists() or as_module.is_dir()
                found.add(candidate if is_module else node.module)
    return found


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py")}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_lives_in_a_layer() -> None:
    loose = sorted(m for m in _graph() if m != "offsets_lib" and _layer(m) not in ALLOWED)
    assert loose == []


def test_each_package_imports_only_the_layers_below_it() -> None:
    violations = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in targets
        if (layer := _layer(module)) in ALLOWED
        and (used := _layer(target)) is not None
        and used != layer
        and used not in ALLOWED[layer]
    )
    assert violations == []


def test_no_import_cycle_between_modules() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in graph:
                continue
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert cycles == []
