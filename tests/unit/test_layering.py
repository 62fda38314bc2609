"""The package's layering: its folders in ranks, each importing only lower ranks; no import cycles; no
module over 450 lines. Every import counts, lazy and type-only ones included (a lazy or TYPE_CHECKING
import hides a dependency from the interpreter, not from a reader)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lsp_server"

# The layers, lowest first: a module imports only from a lower rank (its own folder aside). Two folders
# of one rank are independent of each other. `text` and `logs` import nothing of ours. A new folder
# gets its rank here; a module that needs a higher rank belongs in a higher folder.
RANKS: dict[str, int] = {
    "text": 0,  # lines and positions as LSP counts them
    "logs": 0,  # where the log goes
    # the vLLM proposer that drafts from the prediction: installed into vLLM's environment alone, so it
    # imports nothing of ours above it (test_the_proposer_stands_alone)
    "proposer": 0,
    "files": 1,  # reading and writing the user's files and our state folder safely
    "config": 2,  # settings: schema, layers, trust, conversion, loading
    "languages": 3,  # how each language's text is read: its languageId, lexers, definition headers
    "stats": 3,  # one refactor's measurement, its words, its history
    "regions": 4,  # what a cursor, a selection or a definition means: the region a refactor rewrites
    "backend": 4,  # talking to a backend: clients, one stream, errors, its window, what it taught
    "check": 5,  # the check before an edit: the syntax an answer brings, your own checker
    "placement": 6,  # where a snippet's parts go: its lazy markers, its definitions, a complete one spliced
    "formats": 7,  # the prompt and the answer: region, hunks, hygiene, minimal edits, changes, the choice
    "pipeline": 8,  # a request: its targets, the runner, one refactor from plan to result, the outcome
    "server": 9,  # the language server: wiring, handlers, the job, applying edits
    "bench": 9,  # `refactor-lsp bench`
    "cli": 10,  # the command line
    "__main__": 11,  # `python -m lsp_server`
}
# The loopback backend for tests and benchmarks: it may import any layer, and no layer imports it (it is
# not in the wheel).
APART = "testing"
# `lsp_server/__init__.py`: the version only; anything may read it, it imports nothing.
ROOT = ""


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


def layer_of(module: str) -> str:
    """`lsp_server.pipeline.engine` → "pipeline"; `lsp_server.text` → "text"; `lsp_server` → ""."""
    return module.split(".")[1] if "." in module else ROOT


def layering_problems(graph: dict[str, set[str]]) -> list[str]:
    """Each import that goes up a rank, across two folders of one rank, into `testing`, or out of the
    package's `__init__`."""
    problems = []
    for module, imported in sorted(graph.items()):
        layer = layer_of(module)
        for target in sorted(imported):
            to = layer_of(target)
            if layer == ROOT:
                problems.append(f"{module} imports {target}: the package's __init__ imports nothing")
            elif to in (layer, ROOT) or layer == APART:
                continue
            elif to == APART:
                problems.append(f"{module} imports {target}: nothing in the package imports `{APART}`")
            elif RANKS[to] > RANKS[layer]:
                problems.append(f"{module} (rank {RANKS[layer]}) imports {target} (rank {RANKS[to]}): upward")
            elif RANKS[to] == RANKS[layer]:
                problems.append(f"{module} imports {target}: `{layer}` and `{to}` share rank {RANKS[to]}")
    return problems


def test_every_module_has_a_layer() -> None:
    """A new top-level module or folder must be given a rank (or be put in an existing folder)."""
    unranked = sorted(m for m in MODULES if layer_of(m) not in {*RANKS, APART, ROOT})
    assert unranked == [], f"modules in no layer (add their folder to RANKS): {unranked}"


def test_imports_only_go_down_the_layers() -> None:
    graph = {module_name(p): imports_of(p) for p in PACKAGE.rglob("*.py")}
    problems = layering_problems(graph)
    assert problems == [], "imports against the layers:\n" + "\n".join(problems)


def test_the_layer_check_catches_what_it_forbids() -> None:
    """The check itself, on imports the package does not have: an upward one, one across a rank, one into
    `testing`; and the ones it allows."""
    planted = {
        "lsp_server.config.load": {"lsp_server.pipeline.engine"},  # 2 → 5
        "lsp_server.regions.region": {"lsp_server.backend.chat"},  # 4 ↔ 4
        "lsp_server.bench.schedule": {"lsp_server.testing.fake_backend"},
        "lsp_server.text": {"lsp_server.files.state"},  # 0 → 1
        "lsp_server": {"lsp_server.text"},
    }
    assert len(layering_problems(planted)) == 5
    allowed = {
        "lsp_server.pipeline.engine": {"lsp_server.config.load", "lsp_server.pipeline.plan", "lsp_server.text"},
        "lsp_server.testing.calibration": {"lsp_server.cli.main"},
        "lsp_server.cli.main": {"lsp_server"},
    }
    assert layering_problems(allowed) == []


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


PROPOSER = PACKAGE / "proposer"
VLLM_ADAPTER = "lsp_server.proposer.vllm_adapter"


def _third_party_imports(path: Path) -> set[str]:
    """Top-level names of the modules `path` imports that are not ours (nor relative)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found - {"lsp_server", "__future__"}


def test_the_proposer_stands_alone() -> None:
    """`lsp_server/proposer` runs inside vLLM's environment, installed without our dependencies: it imports
    the standard library and itself only; vLLM only from `vllm_adapter`, which nothing of ours imports, so
    the server and the CLI never load vLLM."""
    import sys

    stdlib = set(sys.stdlib_module_names)
    for path in PROPOSER.rglob("*.py"):
        allowed = stdlib | ({"vllm"} if module_name(path) == VLLM_ADAPTER else set())
        assert _third_party_imports(path) <= allowed, f"{path.name} imports {_third_party_imports(path) - allowed}"
        assert {layer_of(m) for m in imports_of(path)} <= {"proposer", ROOT}, f"{path.name} imports above itself"
    importers = [
        module_name(p)
        for p in PACKAGE.rglob("*.py")
        if VLLM_ADAPTER in imports_of(p) and module_name(p) != VLLM_ADAPTER
    ]
    assert importers == []
    vllm_users = [module_name(p) for p in PACKAGE.rglob("*.py") if "vllm" in _third_party_imports(p)]
    assert vllm_users == [VLLM_ADAPTER]


def test_every_folder_map_names_each_of_its_modules_and_no_two_modules_share_a_name() -> None:
    """Issue 37 item 4: each folder's `__init__` docstring is its map, naming every module in it, and a
    module's name says one thing: no two modules of the package share a name."""
    package = Path(__file__).resolve().parents[2] / "lsp_server"
    missing, seen, twice = [], {}, []
    for folder in sorted(p for p in package.iterdir() if (p / "__init__.py").is_file()):
        folder_map = (folder / "__init__.py").read_text(encoding="utf-8")
        for module in sorted(folder.glob("*.py")):
            if module.name == "__init__.py":
                continue
            if f"`{module.stem}`" not in folder_map:
                missing.append(f"{folder.name}/{module.name}")
            if module.stem in seen:
                twice.append(f"{seen[module.stem]} and {folder.name}/{module.name}")
            seen[module.stem] = f"{folder.name}/{module.name}"
    assert missing == [], f"modules the folder's __init__ map does not name: {missing}"
    assert twice == [], f"modules of one name: {twice}"
