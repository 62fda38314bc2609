"""A complete snippet spliced as written (placement/complete.py, issue 36 item 7): where each definition goes,
re-indented; new ones beside the one before them, before the one after, or at the end of their class;
what is not complete left to the model, with the reason. On code we did not write: every function and
method of a few stdlib modules, spliced as `inspect` gives it, pasted dedented, must give the file back
unchanged, and with one line changed, exactly that line."""

from __future__ import annotations

import ast
import collections
import difflib
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest

from lsp_server.placement.complete import NotComplete, splice_snippet
from lsp_server.placement.where import read_parts


def spliced(document: str, snippet: str, language: str = "python") -> str:
    """The document with the snippet spliced in; NotComplete when it cannot be."""
    new = document
    for part in sorted(
        splice_snippet(document, read_parts(snippet, language), language), key=lambda s: -s.placed.target.start
    ):
        target = part.placed.target
        new = new[: target.start] + part.text + new[target.end :]
    return new


DOCUMENT = '''import os


class Store:
    """Items on disk."""

    limit = 10

    @property
    def size(self):
        return len(self.items)

    # Read them all.
    def load(self, path):
        with open(path) as handle:
            self.items = handle.read().split()
        return self.items


def helper():
    return os.sep
'''


def test_a_method_shown_in_its_class_replaces_the_method_only() -> None:
    snippet = "class Store:\n    def load(self, path):\n        self.items = open(path).read().split()\n"
    assert spliced(DOCUMENT, snippet) == DOCUMENT.replace(
        "        with open(path) as handle:\n            self.items = handle.read().split()\n"
        "        return self.items\n",
        "        self.items = open(path).read().split()\n",
    )  # its comment above kept: the snippet shows none


def test_a_method_pasted_alone_and_dedented_goes_back_to_its_indentation_with_its_decorator() -> None:
    snippet = "def size(self):\n    return len(self.items or ())\n"
    assert spliced(DOCUMENT, snippet) == DOCUMENT.replace("len(self.items)", "len(self.items or ())")


def test_new_definitions_go_after_the_one_before_them_before_the_one_after_or_at_the_end() -> None:
    after = "def helper():\n    return os.sep\n\n\ndef other():\n    return 2\n"
    assert spliced(DOCUMENT, after) == DOCUMENT + "\n\ndef other():\n    return 2\n"
    before = "def first():\n    return 1\n\n\ndef helper():\n    return os.sep\n"
    assert spliced(DOCUMENT, before) == DOCUMENT.replace("def helper", "def first():\n    return 1\n\n\ndef helper")
    at_end = "class Store:\n    def save(self):\n        pass\n"
    assert spliced(DOCUMENT, at_end) == DOCUMENT.replace(
        "        return self.items\n", "        return self.items\n\n    def save(self):\n        pass\n"
    )


def test_javascript_a_new_method_goes_before_the_closing_brace() -> None:
    document = "class A {\n  m() {\n    return 1;\n  }\n}\n\nfunction z() {}\n"
    snippet = "class A {\n  n() {\n    return 2;\n  }\n}\n"
    assert spliced(document, snippet, "javascript") == document.replace(
        "  }\n}\n", "  }\n\n  n() {\n    return 2;\n  }\n}\n"
    )


def test_crlf_files_keep_their_line_endings() -> None:
    document = DOCUMENT.replace("\n", "\r\n")
    snippet = "def helper():\n    return os.pathsep\n"
    assert spliced(document, snippet) == document.replace("os.sep", "os.pathsep")


@pytest.mark.parametrize(
    ("snippet", "why"),
    [
        ("class Store:\n    # ... existing code ...\n    def save(self):\n        pass\n", "lazy markers"),
        ("def helper():\n    return (os.sep\n", "does not parse on its own"),
        ("def brand_new():\n    return 1\n", "has nothing of the file beside it"),
        ("import sys\n\n\ndef helper():\n    return sys.platform\n", "code outside its definitions"),
        ('class Store:\n    """Items."""\n\n    limit = 20\n', "also holds `size`, `load`"),
        ("def size(self):\n\treturn 1\n", "indented with other characters"),
    ],
)
def test_what_is_not_the_merged_code_as_it_stands_goes_to_the_model_with_the_reason(snippet: str, why: str) -> None:
    with pytest.raises(NotComplete, match=why):
        spliced(DOCUMENT.replace("\nclass Store", "\n\nclass Store"), snippet)


MODULES = ["difflib", "textwrap", "json.decoder", "argparse", "ipaddress"]


def _definitions(tree: ast.Module) -> list[tuple[str | None, ast.FunctionDef]]:
    """Top-level functions and the methods of top-level classes, with their class."""
    found: list[tuple[str | None, ast.FunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found.append((None, node))
        elif isinstance(node, ast.ClassDef):
            found += [(node.name, child) for child in node.body if isinstance(child, ast.FunctionDef)]
    return found


@pytest.mark.parametrize("module", MODULES)
def test_every_function_and_method_of_the_stdlib_spliced_as_written_gives_the_file_back(module: str) -> None:
    """Each method as a chat shows it (in its class) and as pasted alone (dedented, when its name is the
    file's only one): the file back, or the model's to merge (NotComplete); never another file."""
    path = Path(inspect.getsourcefile(importlib.import_module(module)) or "")
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    found = _definitions(ast.parse(text))
    counts = collections.Counter(node.name for _, node in found)
    checked = 0
    for holder, node in found:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        source = "".join(lines[first : node.end_lineno])
        snippets = [f"class {holder}:\n{source}"] if holder else []
        if counts[node.name] == 1:
            snippets.append(textwrap.dedent(source))
        for snippet in snippets:
            try:
                assert spliced(text, snippet) == text, node.name
            except NotComplete:
                continue  # the model's to merge
            checked += 1
    assert checked >= 10


def test_a_changed_line_in_a_real_method_is_the_only_change() -> None:
    text = Path(inspect.getsourcefile(difflib) or "").read_text(encoding="utf-8")
    source = textwrap.dedent(inspect.getsource(difflib.SequenceMatcher.set_seq2))
    result = spliced(text, source.replace("self.b = b\n", "self.b = list(b)\n"))
    assert result == text.replace("        self.b = b\n", "        self.b = list(b)\n")
    ast.parse(result)
