"""Targets in the standard library's own files, found by their structure (`ast`), never by one
Python version's text: 3.13 rewrote `textwrap.indent`, and a test that looked for 3.11's lines
stopped the whole suite from collecting."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Definition:
    """A definition of a real file: 1-based lines, its leading comment block and decorators included (as
    the scope takes a definition: docs/how-it-works.md, "Scope")."""

    source: str
    name: str
    first_line: int
    last_line: int
    cursor_line: int  # a line inside it (the one the finder was looking for)

    @property
    def start(self) -> int:
        return _offset(self.source, self.first_line)

    @property
    def end(self) -> int:
        return _offset(self.source, self.last_line + 1)

    @property
    def text(self) -> str:
        return self.source[self.start : self.end]

    @property
    def header(self) -> str:
        """Its `def` line, stripped: how a prompt that kept it can be recognised."""
        return next(line.strip() for line in self.text.splitlines() if line.lstrip().startswith(("def ", "class ")))

    @property
    def cursor_text(self) -> str:
        """The cursor line, stripped (what an editor test puts its cursor on)."""
        return self.source.splitlines()[self.cursor_line - 1].strip()

    def renamed(self, old: str, new: str) -> str:
        """The file with the word `old` renamed `new` in this definition only: what a model that follows
        "rename OLD to NEW" (the loopback backend's rule) makes of the file."""
        region = re.sub(rf"\b{re.escape(old)}\b", new, self.text)
        return self.source[: self.start] + region + self.source[self.end :]


def _offset(source: str, line: int) -> int:
    """The offset where 1-based `line` starts (the text's length past its last line)."""
    lines = source.splitlines(keepends=True)
    return sum(len(text) for text in lines[: line - 1])


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, lines: list[str]) -> int:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    while first > 1 and lines[first - 2].lstrip().startswith("#"):
        first -= 1
    return first


def smallest_function_looping_over(path: Path, name: str) -> Definition:
    """The smallest function of the file that has a `for NAME in ...` loop, and the loop's line."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found: list[tuple[int, Definition]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        loops = [
            loop
            for loop in ast.walk(node)
            if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and loop.target.id == name
        ]
        if loops and node.end_lineno is not None:
            first = _first_line(node, lines)
            found.append(
                (node.end_lineno - first, Definition(source, node.name, first, node.end_lineno, loops[0].lineno))
            )
    if not found:
        raise LookupError(f"{path} has no function with a `for {name} in` loop")
    return min(found, key=lambda item: item[0])[1]


def top_level_assignment(path: Path, target: str) -> int:
    """The 1-based line of the module-level statement that assigns `target` (e.g. `__all__`)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == target for t in node.targets):
            return node.lineno
    raise LookupError(f"{path} assigns no {target} at its top level")


def module_docstring_lines(path: Path) -> tuple[int, int]:
    """The 1-based first and last lines of the module's docstring."""
    head = ast.parse(path.read_text(encoding="utf-8")).body[0]
    if not (isinstance(head, ast.Expr) and isinstance(head.value, ast.Constant) and isinstance(head.value.value, str)):
        raise LookupError(f"{path} has no module docstring")
    return head.lineno, head.end_lineno or head.lineno
