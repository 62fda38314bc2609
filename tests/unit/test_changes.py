"""An answer's changes (formats/changes.py, issue 38): grouped by line as a person reads them, labelled
from their own text, any subset applicable exactly, a change that needs another's name told."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from lsp_server.formats.changes import kept_text, split_changes, unmet_needs
from lsp_server.formats.edits import apply_replacements, region_replacements

BEFORE = """import os


def fetch(url, retries):
    data = None
    for attempt in range(retries):
        data = get(url)
        if data:
            break
    total = len(data)
    return total
"""
AFTER = """import os
import time


def fetch(url, retries, timeout=None):
    data = None
    for attempt in range(retries):
        if timeout is None:
            timeout = 10
        data = get(url, timeout=timeout)
        if data:
            break
        time.sleep(1)
    result = len(data)
    return result
"""


def changes_of(before: str, after: str):
    return split_changes(before, region_replacements(before, 0, len(before), after))


def test_an_answer_is_split_into_the_changes_a_reader_sees_each_labelled_from_its_own_text() -> None:
    changes = changes_of(BEFORE, AFTER)
    assert [c.label for c in changes] == [
        "line 2: add `import time`",
        "line 4: `def fetch(url, retries):` → `def fetch(url, retries, timeout=None):`",
        "line 7: add `if timeout is None:`, `data = get(url)` → `data = get(url, timeout=timeout)`",
        "lines 10-11: add `time.sleep(1)`, `total` → `result`",
    ]
    # The change that calls time.sleep needs the import that brings `time`; nothing else needs anything.
    assert [c.needs for c in changes] == [(), (), (), (1,)]
    assert changes[0].brings == ("time",)


def test_lines_end_where_the_editor_ends_them_a_lone_cr_included() -> None:
    """A file whose lines end in \\r (or mix them): the same changes, labels and needs as with \\n; a form
    feed or U+2028 inside a line ends nothing (LSP's line breaks are \\n, \\r\\n and \\r)."""
    expected = changes_of(BEFORE, AFTER)
    for ending in ("\r", "\r\n"):
        changes = changes_of(BEFORE.replace("\n", ending), AFTER.replace("\n", ending))
        assert [(c.label, c.first_line, c.last_line, c.needs) for c in changes] == [
            (c.label, c.first_line, c.last_line, c.needs) for c in expected
        ], repr(ending)
    before, after = "x = 1\x0c# page\ny = 2\u2028z\n", "x = 1\x0c# page\ny = 3\u2028z\n"
    assert [c.label for c in changes_of(before, after)] == ["line 2: `y = 2\u2028z` → `y = 3\u2028z`"]


def test_every_subset_applies_exactly_and_all_of_them_is_the_answer() -> None:
    changes = changes_of(BEFORE, AFTER)
    numbers = [c.number for c in changes]
    assert kept_text(BEFORE, changes, numbers) == AFTER
    assert kept_text(BEFORE, changes, []) == BEFORE
    for dropped in numbers:
        kept = kept_text(BEFORE, changes, [n for n in numbers if n != dropped])
        assert kept not in (BEFORE, AFTER)
    assert "import time" not in kept_text(BEFORE, changes, [2, 3, 4])
    assert [(a.number, b.number) for a, b in unmet_needs(changes, [2, 4])] == [(4, 1)]
    assert unmet_needs(changes, [1, 4]) == []


def test_a_blank_line_between_two_edits_makes_two_changes_and_adjacent_edits_one() -> None:
    before = "a = 1\nb = 2\n\nc = 3\nd = 4\ne = 5\n"
    after = "a = 10\nb = 2\n\nc = 30\nd = 4\ne = 50\n"
    changes = changes_of(before, after)
    # a and c are a blank line apart: two changes; c and e are one unchanged line apart: one change.
    assert [(c.first_line, c.last_line) for c in changes] == [(1, 1), (4, 6)]


def test_a_rename_everywhere_is_labelled_as_one() -> None:
    before = "def f(total):\n    total += 1\n    return total\n"
    after = before.replace("total", "result")
    (change,) = changes_of(before, after)
    assert change.label == "lines 1-3: `total` → `result`"


def test_on_code_no_one_here_wrote_changes_partition_the_answer() -> None:
    """textwrap.py with every other top-level function's body reindented and a docstring dropped: the
    changes cover every edit once, and keeping any one of them applies exactly that edit's lines."""
    import textwrap as module

    source = Path(inspect.getsourcefile(module) or "").read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in tree.body[::2]:
        if isinstance(node, ast.FunctionDef):
            lines[node.lineno - 1] = lines[node.lineno - 1].replace("def ", "def renamed_", 1)
    after = "".join(lines)
    edits = region_replacements(source, 0, len(source), after)
    changes = split_changes(source, edits)
    assert sum(len(c.edits) for c in changes) == len(edits)
    assert kept_text(source, changes, [c.number for c in changes]) == after
    for change in changes:
        alone = kept_text(source, changes, [change.number])
        assert alone == apply_replacements(source, list(change.edits))
        assert change.label.startswith(f"line {change.first_line}")
