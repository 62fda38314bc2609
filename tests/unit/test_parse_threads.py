"""Python is parsed on the event loop (code actions as the cursor moves) and in worker threads (a
batch finding its targets) at once. CPython 3.11's conversion of a parse into `ast` objects is not
thread-safe: every parse goes through `regions.python.parse_python`, which holds one lock."""

from __future__ import annotations

import ast
import textwrap
import threading
from pathlib import Path

import lsp_server
from lsp_server.regions import ScopeCache
from lsp_server.regions.python import find_python_definition
from lsp_server.regions.targets import top_level_definitions

SOURCE = Path(textwrap.__file__).read_text(encoding="utf-8")  # code no one here wrote
PACKAGE = Path(lsp_server.__file__).parent


class Finalized:
    """Garbage in a cycle whose finalizer runs Python, as a busy server makes: a collection during a
    parse runs it, and the interpreter may switch threads there."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))


def test_parsing_on_two_threads_at_once_never_fails() -> None:
    errors: list[BaseException] = []
    stop = threading.Event()
    cache = ScopeCache()  # the document's, shared by the batch and the code actions as in the server

    def batch() -> None:  # the worker thread: every top-level definition of the file, again and again
        while not stop.is_set():
            try:
                top_level_definitions(SOURCE, "python", cache)
                top_level_definitions(SOURCE + "\n", "python")  # another version: parsed afresh
            except Exception as exc:
                errors.append(exc)
                return

    worker = threading.Thread(target=batch)
    worker.start()
    lines = SOURCE.count("\n")
    try:
        for n in range(60):  # the event loop: a code action per cursor move, on a text of its own
            for _ in range(200):
                Finalized()
            find_python_definition(SOURCE + " " * (n + 1), n * 37 % lines)
            find_python_definition(SOURCE, n * 53 % lines, cache)
            if errors:
                break
    finally:
        stop.set()
        worker.join()
    assert errors == []


# Where the package may parse or compile: the one locked helper, and start-up's cache of attrs'
# generated methods (compile() of source text makes no `ast` objects, and runs before any thread).
ALLOWED = {("regions/python.py", "parse_python"), ("server/startup.py", "compile_cached")}
PARSER_CALLS = {"compile", "eval", "exec", "ast.parse", "ast.literal_eval", "builtins.compile", "builtins.eval"}


class ParserCalls(ast.NodeVisitor):
    """Calls of Python's parser (`ast.parse`, `ast.literal_eval`, `compile`, `eval`, `exec`), each with
    the function it is written in."""

    def __init__(self) -> None:
        self.functions = ["<module>"]
        self.found: list[tuple[int, str, str]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "ast":  # `from ast import parse` would hide a call from the check below
            self.found.append((node.lineno, self.functions[-1], "from ast import"))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            name = f"{func.value.id}.{func.attr}"
        else:
            name = ""
        if name in PARSER_CALLS:
            self.found.append((node.lineno, self.functions[-1], name))
        self.generic_visit(node)


def test_every_parse_goes_through_the_locked_helper() -> None:
    unlocked = []
    for path in sorted(PACKAGE.rglob("*.py")):
        calls = ParserCalls()
        calls.visit(ast.parse(path.read_text(encoding="utf-8")))
        where = path.relative_to(PACKAGE).as_posix()
        for line, function, what in calls.found:
            if not any(where.endswith(file) and function == allowed for file, allowed in ALLOWED):
                unlocked.append(f"{where}:{line} {function}: {what}")
    assert unlocked == []
