"""A definition found around the cursor: what the scope finders (Python's syntax tree, the code heuristic) return."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Definition:
    """Lines [first_line, last_line] (0-based, inclusive) of a definition.

    The span starts at the definition's leading block (decorators, annotations, attributes and the
    comment block written directly above it, with no blank line between) and ends on its last line.
    """

    first_line: int
    last_line: int
    kind: str  # "function" | "method" | "class" | "impl" | "struct" | "interface" | "enum" | "module" | "block" ...
    name: str | None = None

    @property
    def line_count(self) -> int:
        return self.last_line - self.first_line + 1

    def describe(self) -> str:
        """`method `Foo.bar``, or `class` alone when the name is unknown."""
        return f"{self.kind} `{self.name}`" if self.name else self.kind
