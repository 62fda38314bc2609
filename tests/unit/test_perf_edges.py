"""Edges of the performance work (issue 7): the fast paths must give exactly what the simple code gave.

Correctness only: how fast is benchmarks/perf.py's business.
"""

from __future__ import annotations

import itertools
import random
import re

import pytest

from lsp_server import regions
from lsp_server.formats import edits
from lsp_server.formats.edits import Replacement, apply_replacements, region_replacements
from lsp_server.regions import choose_region, enclosing_block, line_span, split_lines
from lsp_server.regions.indentation import _bracket_balance
from lsp_server.text import PositionMapper, line_starts

_LSP_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def apply_as_editor(document: str, replacements: list[Replacement]) -> str:
    """Apply through LSP positions, as an editor does."""
    mapper = PositionMapper(document)
    spans = [(mapper.position(e.start), mapper.position(e.end), e.text) for e in replacements]
    out, pos = [], 0
    for start, end, text in sorted(spans):
        a, b = mapper.offset(*start), mapper.offset(*end)
        out += [document[pos:a], text]
        pos = b
    return "".join(out) + document[pos:]


def check(document: str, new: str, start: int = 0, end: int | None = None) -> list[Replacement]:
    end = len(document) if end is None else end
    result = region_replacements(document, start, end, new)
    expected = document[:start] + new + document[end:]
    assert apply_replacements(document, result) == expected
    assert apply_as_editor(document, result) == expected
    for a, b in itertools.pairwise(result):
        assert a.end < b.start
    for e in result:
        assert start <= e.start <= e.end <= end
    return result


def code_file(n_functions: int) -> str:
    return "".join(
        f"def f{i}(items):\n    total = 0\n    for x in items:\n        total += x * {i}\n    return total\n\n\n"
        for i in range(n_functions)
    )


# -- line splitting -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "a\n",
        "a\r\nb\rc\nd",
        "\r\r\n\n",
        "x\x0by\n",  # vertical tab: a line break for str.splitlines, not for LSP
        "x\x0cy\x1cz\x1d\x1e\x85w\n",
        "one\u2028two\u2029three\r\n",
        "tail\r",
    ],
)
def test_split_lines_breaks_only_where_lsp_does(text: str) -> None:
    assert split_lines(text) == _LSP_LINE.findall(text)
    assert "".join(split_lines(text)) == text


def test_split_lines_random_texts() -> None:
    rng = random.Random(1)
    pieces = ["a", "b", " ", "\n", "\r", "\r\n", "\x0b", "\u2028", "\x85", "😀"]
    for _ in range(500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert split_lines(text) == _LSP_LINE.findall(text)


def test_line_starts_match_the_lsp_lines_and_are_cached_per_string() -> None:
    for text in ("", "a", "a\n", "a\nb", "a\r\nb\rc\n", "x\u2028y\nz", "\n\n"):
        expected = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
        assert line_starts(text) == expected
    first = "x = 1\ny = 2\n"
    second = "".join(["x = 1\n", "y = 22\n"])  # another string object
    assert line_starts(first) == [0, 6, 12]
    assert line_starts(second) == [0, 6, 13]
    assert line_starts(first) == [0, 6, 12]


def test_position_mapper_does_not_break_at_unicode_line_separators() -> None:
    text = "s = 'a\u2028b'\nt = 1\n"
    mapper = PositionMapper(text)
    assert mapper.position(text.index("t")) == (1, 0)
    assert mapper.position(text.index("b")) == (0, 7)


# -- the line diff ------------------------------------------------------------------------------------


def test_common_runs_of_strings_and_lists() -> None:
    assert edits._common_run("abcdef", 0, "abcxef", 0, 6) == 3
    assert edits._common_run("abc", 0, "abc", 0, 3) == 3
    assert edits._common_run("abc", 1, "xbc", 1, 2) == 2
    assert edits._common_run("", 0, "", 0, 0) == 0
    assert edits._common_run_back("abcdef", 6, "xbcdef", 6, 6) == 5
    assert edits._common_run_back("abc", 3, "abc", 3, 3) == 3
    assert edits._common_run_back("abc", 2, "xbc", 2, 1) == 1
    a = list(range(1000))
    for k in (0, 1, 2, 3, 7, 8, 9, 500, 999):
        b = list(a)
        b[k] = -1
        assert edits._common_run(a, 0, b, 0, 1000) == k
        assert edits._common_run_back(a, 1000, b, 1000, 1000) == 999 - k


def test_many_identical_lines_with_scattered_changes() -> None:
    document = "    pass\n" * 3000
    lines = document.splitlines(keepends=True)
    for i in (10, 700, 701, 1500, 2999):
        lines[i] = f"    pass  # changed {i}\n"
    lines.insert(2000, "    # inserted\n")
    del lines[100]
    result = check(document, "".join(lines))
    assert sum(e.end - e.start for e in result) < 200  # a few lines, not the whole file


def test_every_other_line_changed() -> None:
    document = code_file(300)
    new = "".join(line if i % 2 else line.rstrip("\n") + "  # x\n" for i, line in enumerate(document.splitlines(True)))
    result = check(document, new)
    assert all(e.start == e.end and e.text == "  # x" for e in result)


def test_functions_reordered_and_fully_rewritten_files() -> None:
    document = code_file(200)
    blocks = document.split("\n\n\n")
    random.Random(5).shuffle(blocks)
    check(document, "\n\n\n".join(blocks))
    check(document, "".join(f"{line.rstrip()}  # v2\n" for line in document.splitlines()))
    check(document, "")
    check("", document)


def test_mixed_line_endings_keep_the_unchanged_lines_own_endings() -> None:
    lines = [f"line {i}" + ("\r\n" if i % 3 else "\n") for i in range(600)]
    document = "".join(lines)
    new_lines = [x.rstrip("\r\n") + "\n" for x in lines]  # the model answers with \n everywhere
    new_lines[300] = "changed 300\n"
    new_lines.insert(450, "inserted\n")
    result = region_replacements(document, 0, len(document), "".join(new_lines))
    out = apply_replacements(document, result)
    assert out.splitlines() == "".join(new_lines).splitlines()
    kept = out.splitlines(keepends=True)
    assert kept[1] == "line 1\r\n" and kept[3] == "line 3\n"  # untouched lines keep their endings
    for e in result:
        for offset in (e.start, e.end):
            assert not (document[offset - 1 : offset] == "\r" and document[offset : offset + 1] == "\n")


def test_last_line_without_newline_is_not_the_same_line_with_one() -> None:
    document = "a\nb\nc"
    check(document, "a\nb\nc\n")
    check(document + "\n", "a\nb\nc")
    big = code_file(100)
    check(big.rstrip("\n"), big)


def test_out_of_budget_gaps_become_one_exact_replacement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edits, "_BUDGET_BASE", 0)
    monkeypatch.setattr(edits, "_BUDGET_PER_LINE", 0)
    document = code_file(100)
    lines = document.splitlines(keepends=True)
    lines[5] = "changed\n"
    lines[600] = "changed too\n"
    result = check(document, "".join(lines))
    assert len(result) == 1  # coarse, but exact


def test_random_edits_on_repetitive_and_unique_lines() -> None:
    pool = ["\n", "    pass\n", "    return x\n", "x = 1\n", "y\r\n", "z", "é😀\n"]
    for seed in range(300):
        rng = random.Random(seed)
        lines = [
            rng.choice(pool) if rng.random() < 0.6 else f"u{rng.randint(0, 10**6)}\n"
            for _ in range(rng.randint(0, 400))
        ]
        lines = [x if x.endswith("\n") else x + "\n" for x in lines]
        new = list(lines)
        for _ in range(rng.randint(0, 40)):
            i = rng.randint(0, len(new))
            op = rng.random()
            if op < 0.35:
                new.insert(i, rng.choice(pool[:4]) if rng.random() < 0.5 else f"new{rng.random()}\n")
            elif op < 0.7 and new:
                del new[min(i, len(new) - 1)]
            elif new:
                new[min(i, len(new) - 1)] = f"chg{rng.random()}\n"
        document = "head\n" + "".join(lines) + "tail\n"
        check(document, "".join(new), 5, 5 + len("".join(lines)))


# -- scope --------------------------------------------------------------------------------------------


def big_class(n_methods: int) -> str:
    body = "".join(
        f"    def method_{i}(self, value):\n        if value:\n            return value * {i}\n        return None\n\n"
        for i in range(n_methods)
    )
    return "import os\n\n\nclass Big:\n    limit = 3\n\n" + body + "\n\ndef after():\n    return 1\n"


def test_cursor_deep_in_a_big_class_takes_the_method() -> None:
    text = big_class(2000)
    offset = text.index("return value * 1500")
    region = choose_region(text, offset, offset)
    assert region.kind == "block"
    assert text[region.start : region.end].startswith("    def method_1500(self, value):\n")
    assert text[region.start : region.end].endswith("        return None\n")


def test_cursor_in_the_body_of_a_big_class_takes_the_class() -> None:
    text = big_class(500)
    offset = text.index("limit = 3")
    region = choose_region(text, offset, offset)
    assert region.kind == "block"
    assert text[region.start : region.end].startswith("class Big:")
    assert "def after" not in text[region.start : region.end]


def test_top_level_statement_in_a_big_file_belongs_to_no_block() -> None:
    text = code_file(500) + "print('done')\n" + code_file(3)
    assert enclosing_block(text, text.count("\n", 0, text.index("print('done')"))) is None


def test_bracket_balance_counts_every_bracket() -> None:
    def by_hand(lines: list[str]) -> int:
        return sum((ch in "([{") - (ch in ")]}") for line in lines for ch in line)

    rng = random.Random(3)
    for _ in range(200):
        lines = [
            "".join(rng.choice("([{}])x '\"") for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(0, 5))
        ]
        assert _bracket_balance(lines) == by_hand(lines)


def test_brackets_spread_over_unindented_lines_extend_the_block() -> None:
    text = "int main() {\n  call(a,\n{ b });\n  x = [\n1,\n2];\n}\nint other;\n"
    assert enclosing_block(text, text.count("\n", 0, text.index("call"))) == (0, 6)
    text = "fn f() {\n    let v = vec![\n1, 2,\n];\n}\n"
    assert enclosing_block(text, text.count("\n", 0, text.index("let v"))) == (0, 4)


def test_line_index_follows_the_text_it_is_given() -> None:
    one = "a\nb\nc\n"
    two = "a\nbb\nc\n"
    assert line_span(one, 1, 1) == (2, 4)
    assert line_span(two, 1, 1) == (2, 5)
    assert line_span(one, 1, 1) == (2, 4)


def test_instruction_comment_found_only_inside_the_region() -> None:
    text = "# refactor-lsp: not this one\ndef f():\n    # refactor-lsp: this one\n    return 1\n"
    region = choose_region(text, text.index("return"), text.index("return"))
    found = regions.find_instruction_comment(text, region)
    assert found is not None and found.instruction == "this one"


# -- actions ------------------------------------------------------------------------------------------


def test_listing_actions_does_not_load_the_pipeline() -> None:
    import subprocess
    import sys

    code = (
        "import sys, lsp_server.server.actions; "
        "print('lsp_server.pipeline.plan' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
