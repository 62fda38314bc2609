"""Lazy markers are comments where the language's lexer says a comment is (issue 36 items 4 and 5): text
inside a string that only looks like one (a docstring quoting `# ... existing code ...`, a doctest's
`...` line, a JS template literal, a Ruby heredoc, a Lua long string) is the string's, and Python's `...`
is code where Python puts it (a stub's body after its docstring, inside brackets). Checked on the stdlib,
Python's own parser the ground truth."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from lsp_server.formats.merged import check_merged, copied_markers
from lsp_server.placement.lazy import marker_lines
from lsp_server.placement.snippet import read_snippet
from lsp_server.text import split_lines

# Modules whose docstrings hold bare `...` lines, `...` stubs, Protocols: code we did not write.
STDLIB = [
    "asyncio.locks",
    "tempfile",
    "ipaddress",
    "json",
    "unittest.mock",
    "importlib.resources.abc",
    "typing",
    "_pydecimal",
    "doctest",
    "inspect",
    "difflib",
    "argparse",
]


def _is_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node.value.value is Ellipsis


def _truth(tree: ast.Module) -> tuple[set[int], set[int], set[int]]:
    """(lines inside a string that began above, `...` lines that are a stub's body, `...` lines that are
    no statement), 0-based, as Python's parser says."""
    nodes = list(ast.walk(tree))
    inside: set[int] = set()
    for node in nodes:
        multiline = bool(node.end_lineno and node.end_lineno > node.lineno) if isinstance(node, ast.expr) else False
        if multiline and (
            isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str | bytes))
        ):
            inside.update(range(node.lineno, node.end_lineno or node.lineno))
    statements = {node.lineno - 1 for node in nodes if _is_ellipsis(node)}
    values = {node.lineno - 1 for node in nodes if isinstance(node, ast.Constant) and node.value is Ellipsis}
    stubs: set[int] = set()
    for node in nodes:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        body = node.body
        docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        if docstring and isinstance(body[0].value.value, str) and len(body) == 2:  # type: ignore[attr-defined]
            body = body[1:]
        if len(body) == 1 and _is_ellipsis(body[0]) and body[0].lineno != node.lineno:
            stubs.add(body[0].lineno - 1)
    return inside, stubs, values - statements


@pytest.mark.parametrize("module", STDLIB)
def test_no_line_inside_a_string_nor_a_stubs_ellipsis_is_a_marker_in_the_stdlib(module: str) -> None:
    path = Path(inspect.getsourcefile(importlib.import_module(module)) or "")
    text = path.read_text(encoding="utf-8")
    lines = split_lines(text)
    inside, stubs, values = _truth(ast.parse(text))
    found = set(marker_lines(lines, "python", lenient=True))
    assert not found & inside, [lines[i] for i in sorted(found & inside)][:5]
    assert not found & stubs, [lines[i] for i in sorted(found & stubs)][:5]
    assert not found & values
    for index in found:  # what is left: a comment, or a `...` statement among other code
        assert lines[index].lstrip().startswith(("#", "...")), lines[index]


def test_asyncio_locks_docstring_ellipses_are_its_text() -> None:
    """The case the stdlib test above must not pass by accident: a docstring with bare `...` lines."""
    import asyncio.locks

    text = Path(inspect.getsourcefile(asyncio.locks) or "").read_text(encoding="utf-8")
    lines = split_lines(text)
    assert sum(1 for line in lines if line.strip() == "...") >= 5
    assert marker_lines(lines, "python") == []


PROTOCOL = '''class Reader(Protocol):
    # ... existing code ...

    def read(self, size: int = -1) -> bytes:
        """Read at most `size` bytes.

        >>> for chunk in iter(reader.read, b""):
        ...     handle(chunk)
        ...
        """
        ...

    @abstractmethod
    def close(
        self,
    ) -> None:
        """Close it."""
        ...

    # ... rest of the class ...
'''


def test_a_stub_after_its_docstring_and_a_doctest_line_are_code_and_the_comments_are_markers() -> None:
    lines = split_lines(PROTOCOL)
    assert [lines[i].strip() for i in marker_lines(lines, "python", lenient=True)] == [
        "# ... existing code ...",
        "# ... rest of the class ...",
    ]
    read = read_snippet(PROTOCOL, "python")
    (reader,) = read.roots
    assert [child.name for child in reader.children] == ["Reader.read", "Reader.close"]
    assert not read.has_markers(reader.children[0].first_line, reader.children[1].last_line)


def test_an_ellipsis_among_other_code_is_still_a_marker() -> None:
    lines = split_lines("def load(self):\n    data = read()\n    ...\n    return parse(data)\n")
    assert marker_lines(lines, "python") == [2]
    lines = split_lines("if TYPE_CHECKING:\n    x = 1\n...\n")
    assert marker_lines(lines, "python") == [2]


def test_ellipsis_inside_brackets_is_code() -> None:
    lines = split_lines("Handler = Callable[\n    ...,\n    None,\n]\nresult = call(\n    ...\n)\n")
    assert marker_lines(lines, "python") == []


def test_a_docstring_quoting_a_marker_merges_and_copies_nothing() -> None:
    region = 'def f():\n    """Doc."""\n    return 1\n'
    answer = (
        'def f():\n    """Doc.\n\n    A snippet for it reads:\n\n'
        '        # ... existing code ...\n        ...\n    """\n    return 2\n'
    )
    snippet = "def f():\n    # ... existing code ...\n    return 2\n"
    assert copied_markers(answer, region, snippet, "python") == []
    check_merged(answer, region, snippet, "python")


@pytest.mark.parametrize(
    ("language", "text", "markers"),
    [
        (
            "javascript",
            "const help = `\n// ... existing code ...\n${name}\n/* ... */\n`;\n// ... existing code ...\n",
            [5],
        ),
        ("typescript", "/*\n// ... existing code ...\n*/\n// ...\nexport function f() {}\n", [3]),
        ("go", "var s = `\n// ... rest ...\n`\n// ... rest ...\n", [3]),
        ("rust", 'let s = r#"\n// ... existing code ...\n"#;\n// ... existing code ...\n', [3]),
        ("ruby", "x = <<~EOS\n  # ... existing code ...\nEOS\n# ... existing code ...\n", [3]),
        ("ruby", "=begin\n# ... existing code ...\n=end\n# ...\n", [3]),
        ("lua", "local s = [[\n-- ... existing code ...\n]]\n-- ... existing code ...\n", [3]),
        ("java", 'String s = """\n    // ... existing code ...\n    """;\n// ... existing code ...\n', [3]),
    ],
)
def test_a_marker_inside_a_string_or_comment_of_the_language_is_its_text(
    language: str, text: str, markers: list[int]
) -> None:
    assert marker_lines(split_lines(text), language, lenient=True) == markers


def test_a_template_literal_holding_a_marker_in_a_merged_answer_is_not_a_copied_marker() -> None:
    region = "export function help() {\n  return `usage`;\n}\n"
    answer = "export function help() {\n  return `usage:\n  // ... existing code ...\n  `;\n}\n"
    snippet = "export function help() {\n  return `usage:\n  // ... existing code ...\n  `;\n}\n"
    assert copied_markers(answer, region, snippet, "javascript") == []
    check_merged(answer, region, snippet, "javascript")
