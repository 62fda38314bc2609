"""Where an applied snippet goes (placement/where.py), read as chat models write snippets: lazy markers,
a method inside `class X:` with markers around it, a method pasted alone and indented. On code we did
not write: CPython's difflib.py (2,000+ lines) and domutils' JavaScript from the bench corpus. The
expected lines come from `inspect` and from text searches, not from the scope code."""

from __future__ import annotations

import difflib
import inspect
from pathlib import Path

import pytest

from lsp_server.placement.lazy import marker_lines
from lsp_server.placement.snippet import read_snippet
from lsp_server.placement.where import NotPlaced, place_snippet

DIFFLIB = Path(inspect.getsourcefile(difflib) or "")
DIFFLIB_TEXT = DIFFLIB.read_text(encoding="utf-8")
DOMUTILS = Path(__file__).resolve().parents[2] / "benchmarks/tasks/js-domutils-batch-jsdoc-types/source.js"


def lines_of(function: object) -> tuple[int, int]:
    """A function's first and last line (1-based), as inspect reads them."""
    source, start = inspect.getsourcelines(function)  # type: ignore[arg-type]
    return start, start + len(source) - 1


def placed_lines(text: str, snippet: str, language: str, selection: tuple[int, int] | None = None) -> list:
    return [
        (t.target.first_line + 1, t.target.last_line + 1, t.scope)
        for t in place_snippet(text, snippet, language, selection)
    ]


# -- lazy markers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "language"),
    [
        ("    # ... existing code ...", "python"),
        ("# ... rest of the class ...", "python"),
        ("  // ...", "javascript"),
        ("/* ... */", "typescript"),
        ("// existing code here", "go"),
        ("    # (unchanged)", "python"),
        ("-- ... rest unchanged", "lua"),
        ("<!-- ... -->", "html"),
        ("…", "javascript"),
        ("    ...", "javascript"),
    ],
)
def test_lazy_markers_in_the_comment_syntax_of_the_language(line: str, language: str) -> None:
    assert marker_lines([line], language) == [0]


@pytest.mark.parametrize(
    ("line", "language"),
    [
        ("    # compute the total", "python"),
        ("    total = sum(xs)  # ... and the rest", "python"),
        ("        # Fixup leading and trailing groups if they show no changes.", "python"),  # difflib's own
        ("    // return early when there are no changes", "javascript"),
        ("// ... existing code ...", "python"),  # not a Python comment: only a snippet reads it leniently
        ("# ... existing code ...", "javascript"),
        ("    // the loop below runs once per item, over every item the caller passed in and more", "go"),
    ],
)
def test_comments_that_are_not_lazy_markers(line: str, language: str) -> None:
    assert marker_lines([line], language) == []


def test_a_snippet_reads_another_languages_marker_comment_too() -> None:
    assert marker_lines(["// ... existing code ..."], "python", lenient=True) == [0]


def test_python_ellipsis_is_a_stub_as_the_whole_body_and_a_marker_among_other_code() -> None:
    stub = ["class Reader(Protocol):\n", "    def read(self) -> bytes:\n", "        ...\n"]
    assert marker_lines(stub, "python") == []
    lazy = ["class Foo:\n", "    ...\n", "    def bar(self):\n", "        return 2\n"]
    assert marker_lines(lazy, "python") == [1]


# -- reading the snippet ------------------------------------------------------------------------------

LAZY_CLASS = '''class SequenceMatcher:
    # ... existing code ...

    def set_seq2(self, b):
        """Set the second sequence to be compared."""
        # ... existing code ...
        self.fullbcount = None
        self.__chain_b()

    # ... rest of the class ...
'''


def test_a_method_inside_a_class_shown_with_markers_is_the_class_method() -> None:
    read = read_snippet(LAZY_CLASS, "python")
    (cls,) = read.roots
    assert cls.path == ("SequenceMatcher",) and cls.shows_only_children
    (method,) = cls.children
    assert method.path == ("SequenceMatcher", "set_seq2") and not method.shows_only_children


def test_a_class_with_its_own_changed_lines_is_changed_whole() -> None:
    snippet = "class Foo:\n    limit = 5\n    # ... existing code ...\n\n    def bar(self):\n        return 2\n"
    (cls,) = read_snippet(snippet, "python").roots
    assert not cls.shows_only_children


# -- placing it in a stdlib file -----------------------------------------------------------------------


def test_a_lazy_method_of_difflib_goes_to_that_method_alone() -> None:
    first, last = lines_of(difflib.SequenceMatcher.set_seq2)
    assert placed_lines(DIFFLIB_TEXT, LAZY_CLASS, "python") == [(first, last, "block")]
    (target,) = place_snippet(DIFFLIB_TEXT, LAZY_CLASS, "python")
    assert target.part.startswith("    def set_seq2(self, b):") and "rest of the class" not in target.part


def test_a_method_pasted_alone_and_indented_is_found_by_its_name() -> None:
    snippet = (
        "    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):\n"
        "        # ... existing code ...\n"
        "        return Match(besti, bestj, bestsize)\n"
    )
    assert placed_lines(DIFFLIB_TEXT, snippet, "python") == [
        (*lines_of(difflib.SequenceMatcher.find_longest_match), "block")
    ]


def test_two_methods_are_two_regions_of_one_apply() -> None:
    snippet = LAZY_CLASS.replace(
        "    # ... rest of the class ...\n",
        "    # ... existing code ...\n\n    def ratio(self):\n"
        "        matches = sum(t[-1] for t in self.get_matching_blocks())\n"
        "        return _calculate_ratio(matches, len(self.a) + len(self.b))\n\n    # ... rest of the class ...\n",
    )
    expected = [
        (*lines_of(difflib.SequenceMatcher.set_seq2), "block"),
        (*lines_of(difflib.SequenceMatcher.ratio), "block"),
    ]
    assert placed_lines(DIFFLIB_TEXT, snippet, "python") == expected


def test_a_new_method_goes_into_the_class_the_snippet_shows() -> None:
    snippet = (
        "class Differ:\n    # ... existing code ...\n\n"
        "    def count(self, a, b):\n        return sum(1 for _ in self.compare(a, b))\n"
    )
    (target,) = place_snippet(DIFFLIB_TEXT, snippet, "python")
    first, last = lines_of(difflib.Differ)
    assert (target.target.first_line + 1, target.target.last_line + 1) == (first, last)
    assert target.adds and target.part.startswith("class Differ:")


def test_a_new_import_goes_to_the_preamble_with_the_method_in_one_apply() -> None:
    snippet = "import os\n# ... existing code ...\n\n" + LAZY_CLASS
    preamble, method = place_snippet(DIFFLIB_TEXT, snippet, "python")
    first_definition = DIFFLIB_TEXT[: DIFFLIB_TEXT.index("\ndef ")].count("\n")  # `_calculate_ratio`, 0-based - 1
    assert preamble.target.first_line == 0 and preamble.target.last_line < first_definition
    assert preamble.scope == "selection" and preamble.part.startswith("import os")
    assert method.target.first_line + 1 == lines_of(difflib.SequenceMatcher.set_seq2)[0]


def test_a_name_the_file_has_twice_is_told_by_its_header_line_else_the_cursor() -> None:
    body = "    self.linejunk = linejunk\n    self.charjunk = charjunk\n"
    first, last = lines_of(difflib.Differ.__init__)
    # The header line as the file has it picks that one (an overload, in Java or C#, is told the same way).
    same = "def __init__(self, linejunk=None, charjunk=None):\n" + body
    assert placed_lines(DIFFLIB_TEXT, same, "python") == [(first, last, "block")]
    # A changed signature matches none of them: the cursor says which.
    changed = "def __init__(self, linejunk=None, charjunk=None, tabsize=8):\n" + body
    starts = [lines_of(cls.__init__)[0] for cls in (difflib.SequenceMatcher, difflib.Differ, difflib.HtmlDiff)]
    where = ", ".join(map(str, starts))
    with pytest.raises(NotPlaced, match=rf"3 definitions named `__init__` \(lines {where}\).*cursor"):
        place_snippet(DIFFLIB_TEXT, changed, "python")
    inside = DIFFLIB_TEXT.index("self.charjunk = charjunk")
    assert placed_lines(DIFFLIB_TEXT, changed, "python", (inside, inside)) == [(first, last, "block")]


def test_a_snippet_naming_nothing_goes_to_the_selection_or_the_cursors_definition_or_is_refused() -> None:
    snippet = "    self.bpopular = set()\n"
    with pytest.raises(NotPlaced, match=r"names no definition.*select the lines.*--lines"):
        place_snippet(DIFFLIB_TEXT, snippet, "python")
    cursor = DIFFLIB_TEXT.index("self.fullbcount = None")
    assert placed_lines(DIFFLIB_TEXT, snippet, "python", (cursor, cursor)) == [
        (*lines_of(difflib.SequenceMatcher.set_seq2), "block")
    ]
    start = DIFFLIB_TEXT.index("        self.fullbcount = None")
    end = DIFFLIB_TEXT.index("\n", start) + 1
    line = DIFFLIB_TEXT[:start].count("\n") + 1
    assert placed_lines(DIFFLIB_TEXT, snippet, "python", (start, end)) == [(line, line, "selection")]


def test_a_new_top_level_function_in_a_long_file_needs_a_place_and_in_a_short_one_takes_the_file() -> None:
    snippet = "# ... existing code ...\n\ndef similarity(a, b):\n    return SequenceMatcher(None, a, b).ratio()\n"
    with pytest.raises(NotPlaced, match="function `similarity` is not in the file"):
        place_snippet(DIFFLIB_TEXT, snippet, "python")
    short = "import math\n\n\ndef area(r):\n    return math.pi * r * r\n"
    (target,) = place_snippet(short, snippet, "python")
    assert target.scope == "file" and target.part.startswith("# ... existing code ...")


def test_a_snippet_of_markers_alone_is_refused() -> None:
    with pytest.raises(NotPlaced, match="holds no code"):
        place_snippet(DIFFLIB_TEXT, "# ... existing code ...\n\n# ...\n", "python")


# -- JavaScript ---------------------------------------------------------------------------------------


def test_a_lazy_function_of_domutils_goes_to_that_function() -> None:
    text = DOMUTILS.read_text(encoding="utf-8")
    snippet = (
        "// ... existing code ...\n\n"
        "export function getSiblings(elem) {\n"
        "    // ... existing code ...\n"
        "    return siblings.length ? siblings : [elem];\n"
        "}\n\n"
        "// ... rest of the file ...\n"
    )
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("export function getSiblings"))
    doc = max(i for i in range(header) if lines[i] == "/**")  # its JSDoc is part of its region
    end = next(i for i in range(header, len(lines)) if lines[i] == "}")
    assert placed_lines(text, snippet, "javascript") == [(doc + 1, end + 1, "block")]


JS_CLASS = """class Store {
  constructor() {
    this.items = {};
  }

  get(key) {
    return this.items[key];
  }

  set(key, value) {
    this.items[key] = value;
  }
}

class Cache {
  get(key) {
    return null;
  }
}
"""


def test_a_javascript_method_shown_in_its_class_goes_to_that_classs_method() -> None:
    snippet = "class Store {\n  // ...\n\n  get(key) {\n    return this.items[key] ?? null;\n  }\n\n  /* ... */\n}\n"
    assert placed_lines(JS_CLASS, snippet, "javascript") == [(6, 8, "block")]
    alone = "get(key) {\n  return this.items[key] ?? null;\n}\n"
    with pytest.raises(NotPlaced, match="2 definitions named `get`"):
        place_snippet(JS_CLASS, alone, "javascript")


# -- bounds: many definitions, a cancel ---------------------------------------------------------------


def _class_of(methods: int) -> str:
    return "class Big:\n" + "".join(f"    def m{i}(self, x):\n        return x + {i}\n\n" for i in range(methods))


def _snippet_naming(methods: int) -> str:
    body = "".join(f"    def m{i}(self, x):\n        return x - {i}\n\n" for i in range(methods))
    return "class Big:\n    # ... existing code ...\n\n" + body + "    # ... rest of the class ...\n"


@pytest.mark.parametrize("methods", [100, 400])
def test_placing_the_methods_of_a_class_asks_the_finder_a_bounded_number_of_times_a_method(
    methods: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36 item 3: each method's class was found again by walking up over every sibling above it
    (400 methods: 80,000 questions); now once a line at most, whatever the number of methods."""
    from lsp_server.placement import where as placement

    asked = 0
    finder = placement._finder_for("python")

    def counting(snapshot: placement.Snapshot, line: int) -> placement.Definition | None:
        nonlocal asked
        asked += 1
        return finder(snapshot, line)

    monkeypatch.setattr(placement, "_finder_for", lambda language: counting)
    placed = place_snippet(_class_of(methods), _snippet_naming(methods), "python")
    assert [t.target.name for t in placed] == [f"Big.m{i}" for i in range(methods)]
    assert asked <= 4 * methods + 10, asked


def test_a_snippet_naming_more_definitions_than_one_apply_takes_is_refused_before_any_is_looked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lsp_server.placement import where as placement

    monkeypatch.setattr(placement, "Document", None)  # nothing of the document may be read
    with pytest.raises(placement.TooManyParts, match=r"names 501 definitions, more than one apply takes \(500\)"):
        place_snippet(_class_of(501), _snippet_naming(501), "python", max_parts=500)


def test_a_stop_ends_the_placement_at_its_next_step() -> None:
    from lsp_server.placement.where import Stopped

    calls = 0

    def stop() -> bool:
        nonlocal calls
        calls += 1
        return calls > 3

    with pytest.raises(Stopped):
        place_snippet(_class_of(200), _snippet_naming(200), "python", stop=stop)
    assert calls == 4
