"""The `hunks` edit format: SEARCH/REPLACE blocks parsed strictly, applied to the region or refused whole,
and written back by hunks_for so that any change round-trips."""

from __future__ import annotations

import random
import sysconfig
import time
from pathlib import Path

import pytest

from lsp_server.formats.hunks import (
    DIVIDER,
    HUNKS_SYSTEM_PROMPT,
    MAX_DIVIDERS,
    REPLACE_MARKER,
    SEARCH_MARKER,
    Hunk,
    HunksError,
    apply_hunks,
    parse_hunks,
)
from lsp_server.testing.hunks_write import hunks_for

REGION = (
    "def area(shape):\n"
    "    if shape.kind == 'circle':\n"
    "        return 3.14 * shape.r ** 2\n"
    "    if shape.kind == 'square':\n"
    "        return shape.side ** 2\n"
    "    raise ValueError(shape.kind)\n"
)


def block(search: str, replace: str) -> str:
    """One block as a model writes it: `search` and `replace` are whole lines, each ending with \\n."""
    return f"{SEARCH_MARKER}\n{search}{DIVIDER}\n{replace}{REPLACE_MARKER}\n"


def apply(region: str, answer: str) -> str:
    return apply_hunks(region, parse_hunks(answer)).text


def refusal(region: str, answer: str) -> HunksError:
    with pytest.raises(HunksError) as info:
        apply_hunks(region, parse_hunks(answer))
    assert "nothing was applied" in str(info.value)
    return info.value


# ---------------------------------------------------------------------------------------- the prompt


def test_the_prompt_shows_the_exact_markers_and_the_rules() -> None:
    for text in (SEARCH_MARKER, DIVIDER, REPLACE_MARKER, "exactly", "only once", "empty REPLACE", "nothing at all"):
        assert text in HUNKS_SYSTEM_PROMPT


# ---------------------------------------------------------------------------------------- parsing


def test_one_block_is_parsed_into_lines() -> None:
    hunks = parse_hunks(block("    raise ValueError(shape.kind)\n", "    return 0\n"))
    assert hunks == [Hunk(("    raise ValueError(shape.kind)",), ("    return 0",), 1)]


def test_several_blocks_are_parsed_in_order_and_numbered() -> None:
    answer = block("a\n", "b\n") + "\n" + block("c\n", "d\ne\n")
    assert [(h.number, h.search, h.replace) for h in parse_hunks(answer)] == [
        (1, ("a",), ("b",)),
        (2, ("c",), ("d", "e")),
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "```python\n" + block("a\n", "b\n") + block("c\n", "d\n") + "```\n",
        "```python\n" + block("a\n", "b\n") + "```\n\n```python\n" + block("c\n", "d\n") + "```",
        "~~~\n" + block("a\n", "b\n") + "~~~\n" + block("c\n", "d\n"),
        "app.py\n```python\n" + block("a\n", "b\n") + block("c\n", "d\n") + "```\n",
        "\n\n" + block("a\n", "b\n") + "\n" + block("c\n", "d\n") + "\n\n",
    ],
    ids=["wrapping-fence", "fence-per-block", "tilde-fence", "file-name-above-fence", "blank-lines"],
)
def test_fences_and_blank_lines_around_blocks_are_allowed(answer: str) -> None:
    assert [(h.search, h.replace) for h in parse_hunks(answer)] == [(("a",), ("b",)), (("c",), ("d",))]


def test_markers_may_have_trailing_whitespace_crlf_and_miscounted_angle_brackets() -> None:
    answer = (
        "<<<<<<< SEARCH  \r\na\r\n=======\t\r\nb\r\n>>>>>>>> REPLACE \r\n<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE"
    )
    assert [(h.search, h.replace) for h in parse_hunks(answer)] == [(("a",), ("b",)), (("c",), ("d",))]


def test_equals_signs_that_are_code_are_not_a_divider() -> None:
    search = 'line = "======="\n    =======\n========\n'
    replace = 'line = "-------"\n    =======\n========\n'
    (hunk,) = parse_hunks(block(search, replace))
    assert hunk.search == ('line = "======="', "    =======", "========")
    assert hunk.replace == ('line = "-------"', "    =======", "========")


def test_a_heading_underline_in_the_search_is_read_at_the_divider_whose_search_matches() -> None:
    # Code with a heading's underline: the block holds three divider lines, one of them the block's.
    region = "Title\n=======\n\nSome text.\n"
    answer = block("Title\n=======\n\nSome text.\n", "Title\n=======\n\nOther text.\n")
    assert len(parse_hunks(answer)[0].readings) == 2
    result = apply_hunks(region, parse_hunks(answer))
    assert result.text == "Title\n=======\n\nOther text.\n"  # applied exactly, as before the flood fix
    assert result.notes == ["block 1 has several ======= lines: read at the one whose SEARCH matches"]
    # Only a SEARCH that matches is a reading: none does, and the block is refused as one that does not.
    assert "does not match the code" in str(refusal("Other\n", answer))


def test_a_block_with_more_dividers_than_a_handful_is_refused_unread_and_fast() -> None:
    # A model that writes thousands of dividers (once: 1.97 GB and 9 s to parse, then applied as code).
    flood = block(REGION.splitlines(keepends=True)[1], f"{DIVIDER}\n" * 100_000)
    started = time.perf_counter()
    with pytest.raises(HunksError, match=f"edit block 1 has more than {MAX_DIVIDERS} ======= lines"):
        parse_hunks(flood + block("a\n", "b\n"))
    assert time.perf_counter() - started < 2.0  # linear: about 0.1 s here; 15,000 once took 9 s
    # A handful of readings, each matched once: linear in the answer.
    few = block("x\n" + f"{DIVIDER}\n" * (MAX_DIVIDERS - 1), "y\n")
    assert apply_hunks("x\n", parse_hunks(few)).text == f"{DIVIDER}\n" * (MAX_DIVIDERS - 1) + "y\n"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Here are the changes:\n" + block("a\n", "b\n"), 'text outside the SEARCH/REPLACE blocks ("Here are'),
        (block("a\n", "b\n") + "I renamed the variable.\n", '("I renamed the variable.")'),
        (block("a\n", "b\n") + "x = 1\n" + block("c\n", "d\n"), '("x = 1")'),
        ("def area(shape):\n    return 0\n", 'without SEARCH/REPLACE blocks (it wrote "def area(shape):")'),
        ("=======\n", "a `=======` line outside any SEARCH/REPLACE block"),
        (block("a\n", "b\n") + ">>>>>>> REPLACE\n", "a `>>>>>>> REPLACE` line outside"),
        (f"{SEARCH_MARKER}\na\nb\n{REPLACE_MARKER}\n", "edit block 1 has no ======= line"),
        (f"{SEARCH_MARKER}\na\n{DIVIDER}\nb\n{SEARCH_MARKER}\nc\n", "edit block 1 is not closed"),
    ],
    ids=[
        "prose-before",
        "prose-after",
        "code-between",
        "no-blocks",
        "stray-divider",
        "stray-tail",
        "no-divider",
        "nested",
    ],
)
def test_answers_that_break_the_format_are_refused(answer: str, expected: str) -> None:
    with pytest.raises(HunksError) as info:
        parse_hunks(answer)
    assert expected in str(info.value)
    assert "nothing was applied" in str(info.value) and 'edit_format = "region"' in str(info.value)


@pytest.mark.parametrize(
    "answer",
    [
        block("a\n", "b\n") + f"{SEARCH_MARKER}\n    return",
        block("a\n", "b\n") + f"{SEARCH_MARKER}\n    return 1\n{DIVIDER}\n    return 2\n",
        f"{SEARCH_MARKER}\n",
    ],
    ids=["in-search", "in-replace", "after-marker"],
)
def test_a_truncated_answer_is_refused_whole(answer: str) -> None:
    with pytest.raises(HunksError) as info:
        parse_hunks(answer)
    message = str(info.value)
    assert "ends inside edit block" in message and "stopped before finishing it" in message
    assert "max_tokens" not in message  # the stream said "stop": the cap was not what ended it


@pytest.mark.parametrize("answer", ["", "\n\n", "```\n```\n", "  \r\n"])
def test_an_empty_answer_has_no_blocks_and_means_no_change(answer: str) -> None:
    assert parse_hunks(answer) == []
    result = apply_hunks(REGION, parse_hunks(answer))
    assert result.text == REGION and not result.changed and result.blocks == 0
    assert result.notes == ["the model answered with no SEARCH/REPLACE blocks: it made no change"]


# ---------------------------------------------------------------------------------------- applying


def test_an_exact_block_changes_only_its_lines() -> None:
    answer = block("    raise ValueError(shape.kind)\n", "    raise ValueError(f'unknown shape {shape.kind}')\n")
    result = apply_hunks(REGION, parse_hunks(answer))
    assert result.text == REGION.replace(
        "raise ValueError(shape.kind)", "raise ValueError(f'unknown shape {shape.kind}')"
    )
    assert result.changed and result.notes == [] and result.blocks == 1


def test_several_blocks_apply_against_the_region_the_model_saw_in_any_order() -> None:
    first = block("def area(shape):\n", "def area(shape: Shape) -> float:\n")
    last = block("    raise ValueError(shape.kind)\n", "    return 0.0\n")
    expected = REGION.replace("def area(shape):", "def area(shape: Shape) -> float:").replace(
        "raise ValueError(shape.kind)", "return 0.0"
    )
    assert apply(REGION, first + last) == expected
    assert apply(REGION, last + first) == expected


def test_a_later_block_cannot_match_what_an_earlier_one_wrote() -> None:
    answer = block("def area(shape):\n", "def area(shape):\n    # circles first\n") + block("    # circles first\n", "")
    assert "edit block 2 does not match the code (SEARCH starts with `# circles first`)" in str(refusal(REGION, answer))


def test_a_block_that_matches_twice_is_refused_and_nothing_is_applied() -> None:
    answer = block("def area(shape):\n", "def area(shape: Shape):\n") + block("        return\n", "        yield\n")
    region = REGION.replace("shape.side ** 2", "shape.side ** 2\n        return")
    error = refusal(region.replace("3.14 * shape.r ** 2", "3.14 * shape.r ** 2\n        return"), answer)
    assert "edit block 2 matches the code in 2 places (SEARCH starts with `return`)" in str(error)
    assert error.block == 2


def test_a_block_that_matches_nowhere_is_refused_naming_it() -> None:
    answer = block("def area(shape):\n", "def area(s):\n") + block("def perimeter(shape):\n", "def perimeter(s):\n")
    error = refusal(REGION, answer)
    assert str(error).startswith(
        "the model's edit block 2 does not match the code (SEARCH starts with `def perimeter(shape):`); "
        'nothing was applied — run it again, or use refactor.edit_format = "region"'
    )
    assert error.block == 2


def test_a_search_indented_less_than_the_code_matches_and_its_replace_is_shifted() -> None:
    answer = block(
        "if shape.kind == 'square':\n    return shape.side ** 2\n",
        "if shape.kind == 'square':\n    return shape.side * shape.side\n",
    )
    result = apply_hunks(REGION, parse_hunks(answer))
    assert result.text == REGION.replace("shape.side ** 2", "shape.side * shape.side")
    assert result.notes == [
        "block 1 matched only with different indentation: the code is indented 4 spaces more than its SEARCH, "
        "so its REPLACE was shifted the same way"
    ]


def test_a_search_indented_more_than_the_code_matches_and_its_replace_is_shifted_back() -> None:
    region = "x = 1\nif x:\n\tprint(x)\n"
    answer = block("\tif x:\n\t\tprint(x)\n", "\tif x:\n\t\tprint(x + 1)\n\t\tprint('done')\n")
    result = apply_hunks(region, parse_hunks(answer))
    assert result.text == "x = 1\nif x:\n\tprint(x + 1)\n\tprint('done')\n"
    assert "indented 1 tab less than its SEARCH" in result.notes[0]


def test_trailing_whitespace_the_model_dropped_is_let_off_and_the_code_keeps_its_own() -> None:
    region = "a = 1   \n\n    \nb = 2\n"
    result = apply_hunks(region, parse_hunks(block("a = 1\n\n\nb = 2\n", "a = 1\n\n\nb = 3\n")))
    assert result.text == "a = 1   \n\n    \nb = 3\n"
    assert result.notes == ["block 1 matched only once whitespace at line ends and on blank lines was ignored"]


def test_an_indentation_difference_that_is_not_one_shift_is_refused() -> None:
    answer = block("if shape.kind == 'square':\n        return shape.side ** 2\n", "pass\n")
    assert "does not match the code" in str(refusal(REGION, answer))


def test_a_shifted_search_that_matches_twice_is_refused() -> None:
    region = "class A:\n    x = 1\nclass B:\n    x = 1\n"
    assert "matches the code in 2 places" in str(refusal(region, block("x = 1\n", "x = 2\n")))


def test_overlapping_blocks_are_refused() -> None:
    answer = block("def area(shape):\n    if shape.kind == 'circle':\n", "def area(s):\n    if s.kind == 'circle':\n")
    answer += block("    if shape.kind == 'circle':\n        return 3.14 * shape.r ** 2\n", "    pass\n")
    error = refusal(REGION, answer)
    assert "edit blocks 1 and 2 change the same lines" in str(error)


def test_a_repeated_block_is_applied_once() -> None:
    answer = block("def area(shape):\n", "def area(s):\n")
    result = apply_hunks(REGION, parse_hunks(answer + answer))
    assert result.text == REGION.replace("def area(shape):", "def area(s):")
    assert result.notes == ["block 2 repeats block 1: applied once"]


def test_adjacent_blocks_are_not_overlapping() -> None:
    answer = block("def area(shape):\n", "def area(s):\n") + block(
        "    if shape.kind == 'circle':\n", "    if s.kind == 'circle':\n"
    )
    assert apply(REGION, answer).startswith("def area(s):\n    if s.kind == 'circle':\n")


def test_crlf_region_keeps_its_line_breaks_when_the_model_writes_lf() -> None:
    region = REGION.replace("\n", "\r\n")
    answer = block("        return shape.side ** 2\n", "        side = shape.side\n        return side * side\n")
    assert apply(region, answer) == REGION.replace(
        "        return shape.side ** 2\n", "        side = shape.side\n        return side * side\n"
    ).replace("\n", "\r\n")


def test_mixed_line_breaks_unchanged_lines_keep_theirs() -> None:
    region = "a\r\nb\nc\r\nd\r\n"
    assert apply(region, block("b\nc\n", "b\nC\n")) == "a\r\nb\nC\r\nd\r\n"


def test_a_deletion_block_removes_lines() -> None:
    answer = block("    if shape.kind == 'square':\n        return shape.side ** 2\n", "")
    assert apply(REGION, answer) == REGION.replace(
        "    if shape.kind == 'square':\n        return shape.side ** 2\n", ""
    )


def test_deleting_every_line_leaves_an_empty_region() -> None:
    assert apply(REGION, block(REGION, "")) == ""


def test_an_empty_search_inserts_into_an_empty_region_only() -> None:
    assert apply("", block("", "x = 1\ny = 2\n")) == "x = 1\ny = 2\n"
    assert "empty SEARCH, which only an empty region allows" in str(refusal(REGION, block("", "x = 1\n")))
    assert "does not match the code (the region is empty" in str(refusal("", block("x = 1\n", "x = 2\n")))
    assert "change the same lines" in str(refusal("", block("", "x = 1\n") + block("", "y = 2\n")))


def test_inserting_lines_before_the_first_and_after_the_last() -> None:
    answer = block("def area(shape):\n", "@cache\ndef area(shape):\n") + block(
        "    raise ValueError(shape.kind)\n", "    raise ValueError(shape.kind)\n    # unreachable\n"
    )
    assert apply(REGION, answer) == "@cache\n" + REGION + "    # unreachable\n"


def test_a_region_without_a_final_line_break_keeps_it_that_way() -> None:
    region = REGION.rstrip("\n")
    assert apply(region, block("    raise ValueError(shape.kind)\n", "    return 0\n")) == region.replace(
        "    raise ValueError(shape.kind)", "    return 0"
    )
    appended = apply(region, block("    raise ValueError(shape.kind)\n", "    raise ValueError(shape.kind)\nx = 1\n"))
    assert appended == region + "\nx = 1"
    assert apply(region, block("    raise ValueError(shape.kind)\n", "")) == region.rsplit("\n", 1)[0]


def test_a_block_never_removes_the_regions_final_line_break() -> None:
    # The model takes the line break at the region's end for a blank line, and drops it: the code
    # after the region must not end up glued to the region's last line.
    assert "does not match" in str(refusal(REGION, block("    raise ValueError(shape.kind)\n\n", "    return 0\n")))
    assert apply(REGION, block("    raise ValueError(shape.kind)\n", "")) == REGION.rsplit("\n", 2)[0] + "\n"


def test_a_byte_order_mark_stays_and_the_model_need_not_copy_it() -> None:
    assert apply("\ufeffa = 1\nb = 2\n", block("a = 1\n", "a = 2\n")) == "\ufeffa = 2\nb = 2\n"


def test_a_block_that_changes_nothing_is_noted_and_an_answer_of_them_changes_nothing() -> None:
    result = apply_hunks(REGION, parse_hunks(block("def area(shape):\n", "def area(shape):\n")))
    assert result.text == REGION and not result.changed and result.blocks == 1
    assert result.notes == ["block 1 changes nothing (its SEARCH and REPLACE are the same)"]
    mixed = apply_hunks(
        REGION,
        parse_hunks(block("def area(shape):\n", "def area(shape):\n") + block("def area(shape):\n", "def f(shape):\n")),
    )
    assert mixed.changed and mixed.text.startswith("def f(shape):\n") and len(mixed.notes) == 1


def test_hunks_built_by_hand_are_numbered_by_their_place() -> None:
    with pytest.raises(HunksError) as info:
        apply_hunks(REGION, [Hunk(("def area(shape):",), ("x",)), Hunk(("nope",), ("x",))])
    assert "edit block 2 does not match the code (SEARCH starts with `nope`)" in str(info.value)


def test_a_blank_search_that_matches_nowhere_says_so() -> None:
    assert "(its SEARCH is blank)" in str(refusal(REGION, block("\n", "x = 1\n")))


# ---------------------------------------------------------------------------------------- writing


def check_round_trip(old: str, new: str, context: int = 1, newline: str | None = None) -> str:
    answer = hunks_for(old, new, context)
    assert apply_hunks(old, parse_hunks(answer), newline=newline).text == new, answer
    return answer


def test_hunks_for_writes_a_small_block_with_one_line_of_context() -> None:
    new = REGION.replace("shape.side ** 2", "shape.side * shape.side")
    assert check_round_trip(REGION, new) == block(
        "    if shape.kind == 'square':\n        return shape.side ** 2\n    raise ValueError(shape.kind)\n",
        "    if shape.kind == 'square':\n        return shape.side * shape.side\n    raise ValueError(shape.kind)\n",
    )
    assert hunks_for(REGION, REGION) == ""


def test_hunks_for_grows_context_until_the_search_is_unique() -> None:
    old = "".join(f"def f{i}():\n    x = 1\n    return x\n\n" for i in range(5))
    new = old.replace("def f3():\n    x = 1\n", "def f3():\n    x = 2\n")
    answer = check_round_trip(old, new)
    assert "def f3():" in answer and answer.count(SEARCH_MARKER) == 1
    assert check_round_trip(old, new, context=0).count("\n") <= answer.count("\n")


def test_hunks_for_groups_nearby_changes_and_separates_distant_ones() -> None:
    old = "".join(f"line {i}\n" for i in range(30))
    near = old.replace("line 5\n", "LINE 5\n").replace("line 7\n", "LINE 7\n")
    assert check_round_trip(old, near).count(SEARCH_MARKER) == 1
    far = near.replace("line 25\n", "LINE 25\n")
    assert check_round_trip(old, far).count(SEARCH_MARKER) == 2


# Edits at a text's edges, line breaks and repeats that every form's writer must round-trip.
EDGE_CASES = [
    ("a\nb\n", "x\na\nb\n"),
    ("a\nb\n", "a\nb\nx\n"),
    ("a\nb\n", ""),
    ("a\nb", ""),
    ("", "a\nb\n"),
    ("a\nb", "a\nc"),
    ("a\nb", "a"),
    ("a\nb", "a\nb\nc"),
    ("a\na\na\n", "a\nb\na\n"),
    ("a\r\nb\r\nc\r\n", "a\r\nB\r\nB2\r\nc\r\n"),
    ("\n\n\n", "\n\nx\n\n"),
    ("x\n", "\n"),
    ("\ufeffa\nb\n", "\ufeffa\nc\n"),
]
# Code holding divider lines (a heading's underline): a block around them holds several dividers, read
# at the one whose SEARCH matches (both forms round-trip them).
DIVIDER_CASES = [
    ("Title\n=======\nText\n", "Title\n=======\nOther\n"),
    ("a\n=======\nb\n", "a\n=======\n=======\nb\n"),
    ("=======\n", "=======\n=======\n"),
]


@pytest.mark.parametrize(("old", "new"), EDGE_CASES)
def test_hunks_for_round_trips_the_edge_cases(old: str, new: str) -> None:
    check_round_trip(old, new)
    check_round_trip(old, new, context=0)
    check_round_trip(old, new, context=3)


@pytest.mark.parametrize(("old", "new"), DIVIDER_CASES)
def test_hunks_for_round_trips_code_with_divider_lines(old: str, new: str) -> None:
    check_round_trip(old, new)
    check_round_trip(old, new, context=3)


@pytest.mark.parametrize(("old", "new"), [(f"a\n{REPLACE_MARKER}\nb\n", f"a\n{REPLACE_MARKER}\nc\n")])
def test_hunks_for_refuses_text_with_lines_that_are_block_markers(old: str, new: str) -> None:
    with pytest.raises(HunksError, match="read as markers"):
        hunks_for(old, new, context=3)


# ---------------------------------------------------------------------------------------- round trips on real code

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SOURCES = ["textwrap.py", "difflib.py", "string.py", "json/encoder.py", "argparse.py", "dataclasses.py", "ast.py"]


def random_edit(lines: list[str], rng: random.Random) -> list[str]:
    """Some line edits of the kinds a refactor makes (content lines, without line breaks)."""
    lines = list(lines)
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["insert", "delete", "replace", "reindent", "duplicate", "start", "end"])
        at = rng.randrange(len(lines) + 1)
        span = rng.randint(1, 5)
        if kind == "insert" or not lines:
            lines[at:at] = [f"    added_{rng.randrange(1000)} = {at}" for _ in range(span)]
        elif kind == "delete":
            del lines[at : at + span]
        elif kind == "replace":
            lines[at : at + span] = [line.replace("self", "this") + " # edited" for line in lines[at : at + span]]
        elif kind == "reindent":
            lines[at : at + span] = ["    " + line if line.strip() else line for line in lines[at : at + span]]
        elif kind == "duplicate":
            lines.insert(at, rng.choice(lines))  # a repeated line: its block needs more context
        elif kind == "start":
            lines[0:0] = ["# header", ""]
        else:
            lines += ["", "# footer"]
    return lines


def test_hunks_for_round_trips_random_edits_of_stdlib_code() -> None:
    rng = random.Random(14)
    files = [(STDLIB / name).read_text(encoding="utf-8").splitlines() for name in SOURCES]
    cases = 0
    for _ in range(400):
        lines = rng.choice(files)
        first = rng.randrange(len(lines))
        region = lines[first : first + rng.choice([1, 5, 20, 60, 200])]
        edited = random_edit(region, rng)
        newline = rng.choice(["\n", "\n", "\r\n"])
        if rng.random() < 0.85:  # most regions end with a line break
            old = "".join(line + newline for line in region)
            new = "".join(line + newline for line in edited)
        else:  # a file's end may not, and blocks keep that (a last line "" would read as a line break)
            old = newline.join([*region, "# end"])
            new = newline.join([*edited, "# end"])
        # A one-line region shows no line break: the caller passes the document's.
        check_round_trip(old, new, context=rng.choice([0, 1, 1, 2]), newline=newline)
        cases += 1
    assert cases == 400


def test_hunks_for_round_trips_whole_files_and_deleting_them() -> None:
    rng = random.Random(41)
    for name in SOURCES[:3]:
        text = (STDLIB / name).read_text(encoding="utf-8")
        edited = "\n".join(random_edit(text.splitlines(), rng)) + "\n"
        check_round_trip(text, edited)
        check_round_trip(text, "")
        check_round_trip("", text)
