"""The package's layering: no import cycles, lazy and type-only imports included (a lazy or
TYPE_CHECKING import hides a cycle from the interpreter, not from a reader)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lsp_server"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Modules of the package that `path` imports anywhere: top level, functions, TYPE_CHECKING blocks."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.startswith("lsp_server"):
                found.add(target)
                for alias in node.names:  # `from . import engine`
                    if f"{target}.{alias.name}" in MODULES:
                        found.add(f"{target}.{alias.name}")
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("lsp_server"))
    found.discard(name)
    return {m for m in found if m in MODULES}


MODULES = {module_name(p) for p in PACKAGE.rglob("*.py")}


def test_no_import_cycles() -> None:
    graph = {module_name(p): imports_of(p) for p in PACKAGE.rglob("*.py")}
    graph = {k: {d for d in v if d != "lsp_server"} for k, v in graph.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == [], "import cycles: " + "; ".join(" → ".join(c) for c in cycles)


MAX_MODULE_LINES = 450  # past it, a module has more than one job: split it before adding more


def test_no_module_is_over_450_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in PACKAGE.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines: {long}"
