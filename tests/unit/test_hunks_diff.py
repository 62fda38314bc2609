"""The diff form of the `hunks` edit format: unified-diff hunks without line numbers, parsed strictly into
the blocks `apply_hunks` applies, an answer in the other form read in that form, and written back by
diff_for, from the same hunks as hunks_for, so that any change round-trips."""

from __future__ import annotations

import random

import pytest

from lsp_server.formats.hunks import DIVIDER, REPLACE_MARKER, SEARCH_MARKER, Hunk, HunksError, apply_hunks
from lsp_server.formats.hunks_diff import (
    DIFF_ANSWER_INSTRUCTION,
    DIFF_SYSTEM_PROMPT,
    NO_NEWLINE,
    parse_answer,
    parse_diff,
)
from lsp_server.formats.hygiene import clean_hunks_output
from lsp_server.formats.prompt import build_prompt
from lsp_server.testing.hunks_write import diff_for, hunks_for
from lsp_server.testing.responders import asks_for_hunks, hunks_form_asked, model_answer
from tests.unit.test_hunks import DIVIDER_CASES, EDGE_CASES, REGION, SOURCES, STDLIB, block, random_edit


def apply(region: str, answer: str) -> str:
    read = parse_answer(answer, "diff")
    return apply_hunks(region, read.hunks, form=read.form).text


def refusal(region: str, answer: str) -> HunksError:
    with pytest.raises(HunksError) as info:
        read = parse_answer(answer, "diff")
        apply_hunks(region, read.hunks, form=read.form)
    assert "nothing was applied" in str(info.value)
    return info.value


def pairs(answer: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    return [(h.search, h.replace) for h in parse_diff(answer)]


# ---------------------------------------------------------------------------------------- the prompt


def test_the_prompt_shows_the_form_and_the_rules() -> None:
    for text in (
        "@@\n (",
        "\n-(",
        "\n+(",
        "no line numbers",
        "exactly as it is",
        "indentation",
        "only once",
        "enough unchanged lines",
        "and no more",
        "one hunk per separate change",
        "no text between or around",
        "added lines only",
        "nothing at all",
    ):
        assert text in DIFF_SYSTEM_PROMPT, text
    assert SEARCH_MARKER not in DIFF_SYSTEM_PROMPT


def test_the_prompt_asks_for_the_configured_form() -> None:
    def prompt(**kwargs: str) -> list[dict[str, str]]:
        return build_prompt(text=REGION, start=0, end=len(REGION), instruction="x", path="a.py", **kwargs).messages

    diff = prompt(edit_format="hunks", hunks_form="diff")
    assert diff[0]["content"] == DIFF_SYSTEM_PROMPT and diff[1]["content"].endswith(DIFF_ANSWER_INSTRUCTION)
    blocks = prompt(edit_format="hunks")
    assert SEARCH_MARKER in blocks[0]["content"]
    assert prompt(edit_format="region", hunks_form="diff")[0]["content"] not in (
        DIFF_SYSTEM_PROMPT,
        blocks[0]["content"],
    )
    # The loopback backend answers in the form the prompt asks for.
    region_only = {"messages": prompt(edit_format="region")}
    assert (hunks_form_asked({"messages": diff}), hunks_form_asked({"messages": blocks})) == ("diff", "search-replace")
    assert asks_for_hunks({"messages": diff}) and not asks_for_hunks(region_only)
    renamed = REGION.replace("shape.side ** 2", "shape.side * shape.side")
    assert model_answer({"messages": diff}, lambda _: renamed) == (
        "@@\n-        return shape.side ** 2\n+        return shape.side * shape.side\n"
    )
    assert model_answer({"messages": blocks}, lambda _: renamed).startswith(SEARCH_MARKER)


# ---------------------------------------------------------------------------------------- parsing


def test_a_hunk_is_read_as_a_block_of_its_context_and_changed_lines() -> None:
    answer = "@@\n def area(shape):\n-    if shape.kind == 'circle':\n+    if shape.kind == CIRCLE:\n     x\n"
    assert parse_diff(answer) == [
        Hunk(
            ("def area(shape):", "    if shape.kind == 'circle':", "    x"),
            ("def area(shape):", "    if shape.kind == CIRCLE:", "    x"),
            1,
        )
    ]


def test_several_hunks_are_read_in_order_and_numbered() -> None:
    answer = "@@\n-a\n+b\n@@\n c\n-d\n-e\n+f\n g\n"
    assert [(h.number, h.search, h.replace) for h in parse_diff(answer)] == [
        (1, ("a",), ("b",)),
        (2, ("c", "d", "e", "g"), ("c", "f", "g")),
    ]


@pytest.mark.parametrize("head", ["@@", "@@ -12,3 +12,4 @@", "@@ def area(shape):", "@@@", "@@ -1 +1 @@  "])
def test_what_follows_the_at_signs_is_ignored(head: str) -> None:
    assert pairs(f"{head}\n-a\n+b\n") == [(("a",), ("b",))]


def test_any_line_of_code_is_safe_after_its_prefix() -> None:
    answer = "@@\n @@\n--x\n-+y\n- z\n+@@ -1 +1 @@\n+<<<<<<< SEARCH\n+=======\n+\\ No newline at end of file\n"
    assert pairs(answer) == [
        (("@@", "-x", "+y", " z"), ("@@", "@@ -1 +1 @@", SEARCH_MARKER, DIVIDER, NO_NEWLINE)),
    ]


def test_an_empty_line_inside_a_hunk_is_a_blank_context_line_and_at_its_edges_a_separator() -> None:
    answer = "\n@@\n\n a = 1\n\n-b = 2\n+b = 3\n\n\n@@\n\n-c\n+d\n\n"
    assert pairs(answer) == [(("a = 1", "", "b = 2"), ("a = 1", "", "b = 3")), (("c",), ("d",))]
    # A blank context line the model wrote with its space stays part of the hunk.
    assert pairs("@@\n \n-a\n+b\n \n") == [(("", "a", ""), ("", "b", ""))]
    # Left out, a blank line at an edge changes neither where the hunk applies nor what it writes.
    region = "x = 1\n\nreturn x\ny = 1\n\nreturn y\n"
    assert apply(region, "@@\n\n-return x\n+return 0\n") == region.replace("return x", "return 0")
    # And a hunk that only its edge's blank line would have made unique is refused, not guessed.
    assert "matches the code in 2 places" in str(refusal("a\n\nx\nb\nx\n", "@@\n\n-x\n+y\n"))


@pytest.mark.parametrize(
    "answer",
    [
        "```diff\n@@\n-a\n+b\n@@\n-c\n+d\n```\n",
        "```diff\n@@\n-a\n+b\n```\n\n```diff\n@@\n-c\n+d\n```",
        "~~~\n@@\n-a\n+b\n~~~\n@@\n-c\n+d\n",
        "app.py\n```diff\n@@\n-a\n+b\n@@\n-c\n+d\n```\n",
        "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a\n+b\n--- a/app.py\n+++ b/app.py\n@@ -9 +9 @@\n-c\n+d\n",
        "--- app.py\t2024-01-01 10:00\n+++ app.py\t2024-01-02 10:00\n@@\n-a\n+b\n@@\n-c\n+d\n",
        "@@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n@@\n-c\n+d\n",
        "@@\n-a\n+b\n@@\n-c\n+d\n\\ No newline at end of file\n\n",
        "\n\n@@\n-a\n+b\n\n\n@@\n-c\n+d\n\n\n",
        "@@\r\n-a\r\n+b\r\n@@\r\n-c\r\n+d\r\n",
    ],
    ids=[
        "wrapping-fence",
        "fence-per-hunk",
        "tilde-fence",
        "file-name-above-fence",
        "header-pairs",
        "header-pair-with-timestamps",
        "no-newline-inside",
        "no-newline-after",
        "blank-lines",
        "crlf",
    ],
)
def test_what_a_diff_may_hold_around_its_hunks_is_allowed(answer: str) -> None:
    assert pairs(answer) == [(("a",), ("b",)), (("c",), ("d",))]


def test_a_new_file_header_is_allowed_for_an_empty_region() -> None:
    assert apply("", "--- /dev/null\n+++ b/app.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n") == "x = 1\ny = 2\n"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Here are the changes:\n@@\n-a\n+b\n", 'text outside the diff hunks ("Here are the changes:")'),
        ("```diff\n@@\n-a\n+b\n```\nI renamed it.\n", '("I renamed it.")'),
        ("def area(shape):\n    return 0\n", 'without diff hunks (no @@ line; it wrote "def area(shape):")'),
        (" a\n-b\n+c\n", 'without diff hunks (no @@ line; it wrote "a")'),
        ("@@\n-a\n+b\nI renamed it.\n", "hunk 1 has a line that starts with neither a space, '-' nor '+' (\"I renamed"),
        (
            "@@\n-a\n+b\n@@\n c\n\td\n",
            "hunk 2 has a line that starts with neither a space, '-' nor '+' (\"d\", after a tab)",
        ),
        ("--- a/app.py\n+++ b/app.py\n\n@@\n-a\n+b\n", 'text outside the diff hunks ("--- a/app.py")'),
        ("--- a/app.py\n+++ b/other.py\n@@\n-a\n+b\n", 'text outside the diff hunks ("--- a/app.py")'),
        ("diff --git a/app.py b/app.py\n@@\n-a\n+b\n", 'text outside the diff hunks ("diff --git'),
        ("@@\n-a\n+b\n" + block("c\n", "d\n"), "mixes diff hunks and SEARCH/REPLACE blocks"),
        ("@@\n-a\n+b\n=======\n", "mixes diff hunks and SEARCH/REPLACE blocks"),
        ("```\n@@\n-a\n+b\n```\n>>>>>>> REPLACE\n", "mixes diff hunks and SEARCH/REPLACE blocks"),
    ],
    ids=[
        "prose-before",
        "prose-after",
        "no-hunks",
        "no-at-signs",
        "prose-in-hunk",
        "tab-in-hunk",
        "header-not-above-a-hunk",
        "header-of-two-files",
        "git-diff-line",
        "block-after-hunk",
        "divider-after-hunk",
        "tail-after-fence",
    ],
)
def test_answers_that_break_the_form_are_refused(answer: str, expected: str) -> None:
    with pytest.raises(HunksError) as info:
        parse_answer(answer, "diff")
    assert expected in str(info.value)
    assert "nothing was applied" in str(info.value) and 'edit_format = "region"' in str(info.value)


def test_a_refused_hunk_is_named() -> None:
    with pytest.raises(HunksError) as info:
        parse_diff("@@\n-a\n+b\n@@\n-c\nd\n")
    assert info.value.block == 2


def test_blocks_mixed_with_hunks_are_refused_in_the_blocks_form_too() -> None:
    with pytest.raises(HunksError) as info:
        parse_answer(block("a\n", "b\n") + "@@\n-c\n+d\n", "diff")
    assert "mixes SEARCH/REPLACE blocks and diff hunks (a `@@` line)" in str(info.value)


@pytest.mark.parametrize("answer", ["", "\n\n", "```diff\n```\n", "  \r\n", NO_NEWLINE + "\n"])
def test_an_empty_answer_has_no_hunks_and_means_no_change(answer: str) -> None:
    read = parse_answer(answer, "diff")
    assert (read.form, read.hunks, read.notes) == ("diff", [], [])
    result = apply_hunks(REGION, read.hunks, form=read.form)
    assert result.text == REGION and not result.changed and result.blocks == 0
    assert result.notes == ["the model answered with no diff hunks: it made no change"]


def test_a_hunk_without_removed_or_added_lines_is_skipped_with_a_note() -> None:
    answer = "@@\n def area(shape):\n@@\n\n@@\n-    raise ValueError(shape.kind)\n+    return 0\n"
    result = apply_hunks(REGION, parse_diff(answer), form="diff")
    assert result.text == REGION.replace("    raise ValueError(shape.kind)", "    return 0") and result.blocks == 3
    assert result.notes == [
        "hunk 1 changes nothing (it has no '-' or '+' lines, or they are the same)",
        "hunk 2 changes nothing (it has no '-' or '+' lines, or they are the same)",
    ]


def test_notes_of_one_kind_past_a_few_are_counted_in_one_note() -> None:
    # 100,000 empty hunks in a 300 KB answer once gave one note each: an 8 MB message, reply and stats.
    change = "@@\n-    raise ValueError(shape.kind)\n+    return 0\n"
    result = apply_hunks(REGION, parse_diff("@@\n" * 20_000 + change * 5), form="diff")
    assert result.text == REGION.replace("    raise ValueError(shape.kind)", "    return 0")
    assert result.notes == [
        "20,000 hunks change nothing, so they were skipped (hunks 1, 2, 3, 4, 5 and 19,995 more)",
        "4 hunks repeat an earlier one, so each was applied once (hunks 20002, 20003, 20004, 20005)",
    ]
    # A few of a kind are each said, in the answer's order, among the others.
    few = "@@\n@@\n-def area(shape):\n+def f(shape):\n@@\n@@\n-    raise ValueError(shape.kind)\n+    return 0\n"
    assert len(apply_hunks(REGION, parse_diff(few + "@@\n"), form="diff").notes) == 3


# ---------------------------------------------------------------------------------------- the other form


def test_an_answer_in_the_other_form_is_read_in_that_form_with_a_note() -> None:
    blocks = parse_answer(block("def area(shape):\n", "def area(s):\n"), "diff")
    assert blocks.form == "search-replace" and blocks.hunks[0].replace == ("def area(s):",)
    assert blocks.notes == [
        "the model answered in SEARCH/REPLACE blocks, not the diff hunks asked for: read as it answered"
    ]
    diff = parse_answer(
        "```diff\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-def area(shape):\n+def area(s):\n```", "search-replace"
    )
    assert diff.form == "diff" and diff.hunks == blocks.hunks
    assert diff.notes == [
        "the model answered in diff hunks, not the SEARCH/REPLACE blocks asked for: read as it answered"
    ]
    # Without any marker line, the form asked for reads it, and says what was missing.
    with pytest.raises(HunksError, match="without SEARCH/REPLACE blocks"):
        parse_answer("x = 1\n", "search-replace")
    with pytest.raises(HunksError, match="without diff hunks"):
        parse_answer("x = 1\n", "diff")


def test_hygiene_reads_the_form_asked_for_and_the_slip_is_in_the_notes() -> None:
    new = REGION.replace("def area(shape):", "def area(s):")
    diff = clean_hunks_output("@@\n-def area(shape):\n+def area(s):\n", REGION, "stop", form="diff")
    assert diff.text == new and diff.notes == []
    slipped = clean_hunks_output("@@\n-def area(shape):\n+def area(s):\n", REGION, "stop")
    assert slipped.text == new and slipped.notes[0].startswith("the model answered in diff hunks")


# ---------------------------------------------------------------------------------------- applying, in the form's words


def test_messages_and_notes_name_hunks_and_their_lines() -> None:
    nowhere = refusal(REGION, "@@\n-def area(shape):\n+def area(s):\n@@\n def perimeter(shape):\n-x\n+y\n")
    assert str(nowhere).startswith(
        "the model's hunk 2 does not match the code (its first context or '-' line is `def perimeter(shape):`); "
        'nothing was applied — run it again, or use refactor.edit_format = "region"'
    )
    assert nowhere.block == 2
    twice = "class A:\n    x = 1\nclass B:\n    x = 1\n"
    assert "hunk 1 matches the code in 2 places (its first context or '-' line is `x = 1`)" in str(
        refusal(twice, "@@\n-    x = 1\n+    x = 2\n")
    )
    assert "hunk 1 has only '+' lines (no line of the code to say where they go), which only an empty region" in str(
        refusal(REGION, "@@\n+x = 1\n")
    )
    assert "the model's hunks 1 and 2 change the same lines of the code" in str(
        refusal(REGION, "@@\n-def area(shape):\n+def f(shape):\n@@\n def area(shape):\n+    pass\n")
    )
    assert "(its context and '-' lines are blank)" in str(refusal(REGION, "@@\n \n+x = 1\n"))
    shifted = apply_hunks(
        REGION, parse_diff("@@\n if shape.kind == 'square':\n-    return shape.side ** 2\n+    return 0\n"), form="diff"
    )
    assert shifted.text == REGION.replace("shape.side ** 2", "0")
    assert shifted.notes == [
        "hunk 1 matched only with different indentation: the code is indented 4 spaces more than its context and "
        "'-' lines, so its '+' lines were shifted the same way"
    ]
    repeated = apply_hunks(REGION, parse_diff("@@\n-def area(shape):\n+def f(shape):\n" * 2), form="diff")
    assert repeated.notes == ["hunk 2 repeats hunk 1: applied once"]


def test_only_added_lines_fill_an_empty_region() -> None:
    assert apply("", "@@\n+x = 1\n+\n+y = 2\n") == "x = 1\n\ny = 2\n"
    assert apply("", "@@ -0,0 +1 @@\n\n+x = 1\n\n") == "x = 1\n"


def test_line_breaks_and_the_regions_last_one_follow_the_blocks_rules() -> None:
    crlf = REGION.replace("\n", "\r\n")
    assert apply(crlf, "@@\n-    raise ValueError(shape.kind)\n+    return 0\n+    # done\n") == crlf.replace(
        "    raise ValueError(shape.kind)\r\n", "    return 0\r\n    # done\r\n"
    )
    unterminated = REGION.rstrip("\n")
    answer = f"@@\n-    raise ValueError(shape.kind)\n{NO_NEWLINE}\n+    return 0\n"
    assert apply(unterminated, answer) == unterminated.replace("    raise ValueError(shape.kind)", "    return 0")
    # "No newline" said of a region that ends with one changes nothing: its last line break stays.
    assert apply(REGION, answer) == REGION.replace("    raise ValueError(shape.kind)", "    return 0")


# ---------------------------------------------------------------------------------------- writing


def check_round_trip(old: str, new: str, context: int = 1, newline: str | None = None) -> str:
    answer = diff_for(old, new, context)
    read = parse_answer(answer, "diff")
    assert read.form == "diff" and read.notes == []
    assert apply_hunks(old, read.hunks, newline=newline, form="diff").text == new, answer
    return answer


def test_diff_for_writes_the_hunks_that_hunks_for_writes_as_blocks() -> None:
    new = REGION.replace("shape.side ** 2", "shape.side * shape.side")
    assert check_round_trip(REGION, new) == (
        "@@\n"
        "     if shape.kind == 'square':\n"
        "-        return shape.side ** 2\n"
        "+        return shape.side * shape.side\n"
        "     raise ValueError(shape.kind)\n"
    )
    assert diff_for(REGION, REGION) == ""
    assert check_round_trip("", "a\nb\n") == "@@\n+a\n+b\n"
    assert check_round_trip("a\n \nb\n", "a\n \nc\n", context=1) == "@@\n  \n-b\n+c\n"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        *EDGE_CASES,
        *DIVIDER_CASES,
        ("\n", "x\n"),
        ("@@\n", "@@\n@@\n"),
        ("a\n@@\nb\n", "a\n@@ -1 +1 @@\nb\n"),
        ("-a\n+b\n c\n", "+a\n-b\n  c\n"),
        ("--- a/x\nkeep\n" + "y\n" * 5 + "z\n", "+++ a/x\nkeep\n" + "y\n" * 5 + "Z\n"),
        ("-- a/x\nkeep\n" + "y\n" * 5 + "z\n", "++ a/x\nkeep\n" + "y\n" * 5 + "Z\n"),
        (f"{NO_NEWLINE}\na\n", f"{NO_NEWLINE}\nb\n"),
        ("```\na\n```\n", "```\nb\n```\n"),
        (f"a\n{REPLACE_MARKER}\nb\n", f"a\n{REPLACE_MARKER}\nc\n"),
    ],
)
def test_diff_for_round_trips_the_edge_cases(old: str, new: str) -> None:
    check_round_trip(old, new)
    check_round_trip(old, new, context=0)
    check_round_trip(old, new, context=3)


def test_a_removed_and_an_added_line_that_read_as_a_header_fall_back_to_one_hunk() -> None:
    old = "-- a/x\nkeep\n" + "y\n" * 5 + "z\n"
    new = old.replace("-- a/x", "++ a/x").replace("z\n", "Z\n")
    answer = check_round_trip(old, new, context=0)
    assert answer.count("@@") == 1  # as two hunks, `--- a/x`, `+++ a/x` and `@@` would read as a header


def test_diff_for_round_trips_random_edits_of_stdlib_code_with_the_blocks_hunks() -> None:
    rng = random.Random(22)
    files = [(STDLIB / name).read_text(encoding="utf-8").splitlines() for name in SOURCES]
    for _ in range(300):
        lines = rng.choice(files)
        first = rng.randrange(len(lines))
        region = lines[first : first + rng.choice([1, 5, 20, 60, 200])]
        edited = random_edit(region, rng)
        newline = rng.choice(["\n", "\n", "\r\n"])
        if rng.random() < 0.85:
            old = "".join(line + newline for line in region)
            new = "".join(line + newline for line in edited)
        else:
            old = newline.join([*region, "# end"])
            new = newline.join([*edited, "# end"])
        context = rng.choice([0, 1, 1, 2])
        answer = check_round_trip(old, new, context=context, newline=newline)
        blocks = parse_answer(hunks_for(old, new, context)).hunks
        assert [(h.search, h.replace) for h in parse_diff(answer)] == [(h.search, h.replace) for h in blocks]
        assert len(answer) < len(hunks_for(old, new, context)) or old == new
