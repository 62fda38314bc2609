"""Locating SEARCH blocks stays near-linear in the region's size, whatever the answer: a region of
thousands of identical lines (a table, a data literal) and an answer built of them apply, or are
refused, in a fraction of a second, never in the seconds of CPU a line-by-line scan would take.

The bounds are generous for a noisy 2-core machine: the work measured about 0.02 s here, and
6.4 s with the scan this replaced."""

from __future__ import annotations

import time

import pytest

from lsp_server.formats.hunks import DIVIDER, REPLACE_MARKER, SEARCH_MARKER, HunksError, apply_hunks, parse_hunks
from lsp_server.formats.hunks_match import MATCH_BUDGET

BOUND_S = 1.0
ROW = "| a | b |\n"
# 8,000 identical table rows, indented, then one distinct row.
TABLE = "def table():\n    return '''\n" + ("    " + ROW) * 8000 + "    | end | end |\n    '''\n"


def block(search: str, replace: str) -> str:
    return f"{SEARCH_MARKER}\n{search}{DIVIDER}\n{replace}{REPLACE_MARKER}\n"


def timed_apply(region: str, answer: str) -> tuple[str | HunksError, float]:
    started = time.perf_counter()
    try:
        outcome: str | HunksError = apply_hunks(region, parse_hunks(answer)).text
    except HunksError as error:
        outcome = error
    return outcome, time.perf_counter() - started


def test_a_block_of_1700_rows_that_matches_only_unindented_applies_at_once() -> None:
    # A 34 KB answer whose SEARCH lacks the rows' indentation: only the indentation fallback finds it,
    # and every row but the last is a candidate start.
    answer = block(ROW * 1700 + "| end | end |\n", ROW * 1700 + "| end | END |\n")
    assert len(answer) > 34_000
    new, seconds = timed_apply(TABLE, answer)
    assert new == TABLE.replace("| end | end |", "| end | END |")
    assert seconds < BOUND_S


@pytest.mark.parametrize("indent", ["    ", ""], ids=["exact", "shifted"])
def test_a_block_that_matches_thousands_of_times_is_refused_at_once(indent: str) -> None:
    rows = (indent + ROW) * 1700
    outcome, seconds = timed_apply(TABLE, block(rows, rows + "| c | d |\n"))
    assert isinstance(outcome, HunksError)
    assert "edit block 1 matches the code in 100 places or more (SEARCH starts with `| a | b |`)" in str(outcome)
    assert seconds < BOUND_S


def test_an_answer_past_the_work_budget_is_refused_with_a_message() -> None:
    # Every line of these blocks is common, and each candidate start fails only at the last line: the
    # one answer shape that indexing cannot make cheap. Its cost is capped, and the answer refused.
    region = "x\ny\n" * 4000 + "x\nx\n"
    search = "x\ny\n" * 900 + "x\nx\n"
    answer = "".join(block(search, f"{search}z{n}\n") for n in range(4))
    outcome, seconds = timed_apply(region, answer)
    assert isinstance(outcome, HunksError) and outcome.block == 4
    assert str(outcome).startswith(
        "the model's edit blocks repeat lines that occur so often in the code that locating them was stopped at "
        f"block 4 (over {MATCH_BUDGET:,} line comparisons); nothing was applied — run it again, or use "
        'refactor.edit_format = "region"'
    )
    assert seconds < BOUND_S
