"""The per-document `ScopeCache`: the caller owns it, it changes no answer, and on an unchanged text
(pygls hands every request the same `str`) nothing is split, parsed or scanned twice."""

from __future__ import annotations

import pytest

from lsp_server.regions import ScopeCache, choose_region, line_span
from lsp_server.text import PositionMapper

PYTHON = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(40))
JAVASCRIPT = "".join(f"function f{i}() {{\n  return {i};\n}}\n\n" for i in range(40))


@pytest.mark.parametrize(("text", "language"), [(PYTHON, "python"), (JAVASCRIPT, "javascript"), (PYTHON, None)])
def test_a_cache_changes_no_answer(text: str, language: str | None) -> None:
    cache = ScopeCache()
    for offset in range(0, len(text), 7):
        for _ in range(2):  # the first call fills the cache, the second reads it
            assert choose_region(text, offset, offset, "auto", language, cache) == choose_region(
                text, offset, offset, "auto", language
            )


def test_one_text_is_split_once_and_shared_with_the_positions() -> None:
    cache = ScopeCache()
    cursor = PYTHON.index("return 7")
    assert choose_region(PYTHON, cursor, cursor, cache=cache).kind == "block"
    index = cache.line_index(PYTHON)
    choose_region(PYTHON, cursor + 30, cursor + 30, cache=cache)
    assert line_span(PYTHON, 3, 4, cache) == (index.offsets[3], index.offsets[5])
    assert cache.line_index(PYTHON) is index  # scope did not split the document again
    assert PositionMapper(PYTHON, "utf-16", index).line_starts is index.starts  # nor did the positions
    # An equal string is another object, maybe another version: it gets lines of its own.
    equal = "".join([PYTHON[:5], PYTHON[5:]])
    assert equal is not PYTHON
    assert cache.line_index(equal) is not index and cache.line_index(equal).offsets == index.offsets


def test_an_index_of_another_text_is_not_used_for_positions() -> None:
    index = ScopeCache().line_index("a\nb\n")
    assert PositionMapper("a\nbb\n", "utf-16", index).position(4) == (1, 2)


def test_a_cursor_coming_back_gets_the_answer_kept() -> None:
    cache = ScopeCache()
    cursor = JAVASCRIPT.index("return 3")
    first = choose_region(JAVASCRIPT, cursor, cursor, "auto", "javascript", cache).definition
    again = choose_region(JAVASCRIPT, cursor, cursor, "auto", "javascript", cache).definition
    assert first is not None and again is first and first.name == "f3"


def test_python_chunks_are_parsed_once_per_text() -> None:
    cache = ScopeCache()
    cursor = PYTHON.index("return 9")
    choose_region(PYTHON, cursor, cursor, "auto", "python", cache)
    snapshot = cache.snapshot(PYTHON)
    trees = {key: id(tree) for key, tree in snapshot.trees.items()}
    assert trees
    choose_region(PYTHON, cursor, cursor, "auto", "python", cache)
    assert {key: id(tree) for key, tree in cache.snapshot(PYTHON).trees.items()} == trees
    edited = PYTHON.replace("return 9", "return 99")  # the next version: parsed afresh
    choose_region(edited, cursor, cursor, "auto", "python", cache)
    assert cache.snapshot(edited) is not snapshot and cache.snapshot(edited).trees
