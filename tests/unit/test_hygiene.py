"""Output hygiene: what the model said becomes the region's new text, or is refused with a reason."""

from __future__ import annotations

import random

import pytest

from lsp_server.formats.hygiene import UnusableOutput, clean_output

ORIGINAL = "def add(a, b):\n    return a + b\n"
ANSWER = "def add(a: int, b: int) -> int:\n    return a + b\n"


def clean(raw: str, original: str = ORIGINAL, finish_reason: str | None = "stop", **kwargs) -> str:
    return clean_output(raw, original, finish_reason, **kwargs)


def refusal(raw: str, original: str = ORIGINAL, finish_reason: str | None = "stop") -> str:
    with pytest.raises(UnusableOutput) as info:
        clean_output(raw, original, finish_reason)
    return str(info.value)


def test_plain_answer_is_used_as_it_is() -> None:
    assert clean(ANSWER) == ANSWER


@pytest.mark.parametrize(
    "raw",
    [
        f"```python\n{ANSWER}```",
        f"```python\n{ANSWER}```\n",
        f"```\n{ANSWER}```\n",
        f"~~~py\n{ANSWER}~~~\n",
        f"\n\n```python\n{ANSWER}```\n\n",
        f"```python\r\n{ANSWER}```\r\n",
    ],
    ids=["python", "trailing-newline", "bare", "tilde", "blank-lines-around", "crlf-fence"],
)
def test_markdown_fence_is_stripped(raw: str) -> None:
    assert clean(raw) == ANSWER


def test_an_introducing_line_before_a_wrapping_fence_is_stripped() -> None:
    assert clean(f"Here is the updated code:\n\n```python\n{ANSWER}```\n") == ANSWER
    assert clean(f"Here you go:\n```python\n{ANSWER}```") == ANSWER


def test_prose_after_the_fenced_code_is_refused() -> None:
    raw = f"Here is the updated code:\n\n```python\n{ANSWER}```\n\nI added type hints to both parameters."
    message = refusal(raw)
    assert "text after its code block" in message and "I added type hints" in message
    assert "nothing was applied" in message


def test_fence_cut_off_before_its_end_still_gives_the_code() -> None:
    assert clean(f"```python\n{ANSWER}") == ANSWER


def test_a_closing_fence_glued_to_the_last_line_is_stripped() -> None:
    assert clean(f"```python\n{ANSWER.rstrip()}```") == ANSWER


def test_region_starting_with_a_fence_is_left_alone() -> None:
    original = "```python\nprint('hello')\n```\n"
    raw = "```python\nprint('hello, world')\n```\n"
    assert clean(raw, original) == raw


def test_fences_inside_the_code_are_content() -> None:
    original = 'def f():\n    """Example:\n\n    ```python\n    f()\n    ```\n    """\n    return 1\n'
    raw = original.replace("return 1", "return 2")
    assert clean(raw, original) == raw
    # ...also when the model wraps the whole answer in a fence of its own.
    assert clean(f"```python\n{raw}```\n", original) == raw


def test_region_markers_echoed_by_the_model_are_removed() -> None:
    assert clean(f"<<<REGION\n{ANSWER}REGION>>>\n") == ANSWER


def test_think_block_is_stripped() -> None:
    raw = f"<think>\nThe user wants type hints. Both are ints.\n</think>\n\n{ANSWER}"
    assert clean(raw) == ANSWER


def test_unterminated_think_is_refused() -> None:
    message = refusal("<think>\nThe user wants type hints, so first I will look at")
    assert "only its reasoning" in message
    assert "nothing was applied" in message


@pytest.mark.parametrize("raw", ["", "   \n\n"])
def test_empty_answer_is_left_to_the_deletion_guard(raw: str) -> None:
    # hygiene.refuse_mass_deletion judges it, for both formats (tests/unit/test_deletion_guard.py).
    assert not clean(raw).strip()


def test_empty_answer_for_an_empty_region_is_fine() -> None:
    assert clean("", "") == ""


@pytest.mark.parametrize(
    "raw",
    [
        "Sure! I added type hints to the function.",
        "I cannot do that because the types are not known.",
        "The code already has type hints, so nothing needs to change.",
    ],
)
def test_prose_instead_of_code_is_refused(raw: str) -> None:
    message = refusal(raw)
    assert "explanation instead of code" in message
    assert raw[:40] in message  # the user sees what the model said


def test_code_that_starts_like_prose_is_kept_when_it_shares_lines_with_the_region() -> None:
    original = "Note: keep this line\nvalue = 1\n"
    assert clean("Note: keep this line\nvalue = 2\n", original) == "Note: keep this line\nvalue = 2\n"


def test_an_explanation_line_before_the_code_is_refused() -> None:
    original = "    return a + b\n"
    message = refusal("The code below adds them:\n    return a + b\n", original)
    assert "explanation before its code" in message and "The code below" in message


def test_answer_cut_off_at_the_token_limit_is_refused() -> None:
    message = refusal(ANSWER[:20], finish_reason="length")
    assert "cut off at its token limit" in message and "nothing was applied" in message


def test_content_filter_is_refused() -> None:
    assert "content filter" in refusal(ANSWER, finish_reason="content_filter")


def test_lost_indentation_is_restored() -> None:
    original = "    def add(self, a, b):\n        return a + b\n"
    raw = "def add(self, a: int, b: int) -> int:\n    return a + b\n"
    assert clean(raw, original) == "    def add(self, a: int, b: int) -> int:\n        return a + b\n"


def test_tab_indentation_is_restored() -> None:
    original = "\tif x {\n\t\treturn 1\n\t}\n"
    assert clean("if x {\n\treturn 2\n}\n", original) == "\tif x {\n\t\treturn 2\n\t}\n"


def test_kept_indentation_is_not_doubled() -> None:
    original = "    def add(self, a, b):\n        return a + b\n"
    raw = "    def add(self, a: int, b: int) -> int:\n        return a + b\n"
    assert clean(raw, original) == raw


def test_crlf_region_gets_crlf() -> None:
    original = "a = 1\r\nb = 2\r\n"
    assert clean("a = 1\nb = 3\nc = 4\n", original) == "a = 1\r\nb = 3\r\nc = 4\r\n"


def test_lf_region_gets_lf_even_from_a_crlf_answer() -> None:
    assert clean("a = 1\r\nb = 3\r\n", "a = 1\nb = 2\n") == "a = 1\nb = 3\n"


def test_trailing_newline_is_added_back() -> None:
    assert clean(ANSWER.rstrip("\n")) == ANSWER


def test_missing_final_newline_stays_missing() -> None:
    original = ORIGINAL.rstrip("\n")
    assert clean(ANSWER, original) == ANSWER.rstrip("\n")


def test_trailing_blank_lines_of_the_region_are_kept() -> None:
    assert clean(ANSWER, ORIGINAL + "\n\n") == ANSWER + "\n\n"
    assert clean(ANSWER + "\n\n\n", ORIGINAL) == ANSWER


def test_instruction_comments_the_model_kept_are_dropped() -> None:
    raw = "def add(a: int, b: int) -> int:\n    # refactor-lsp: add type hints\n    return a + b\n"
    assert clean(raw, drop_instruction_comments=True) == ANSWER
    assert "refactor-lsp:" in clean(raw)  # only when asked to


# -- answers that are correct and look like wrapping: hygiene must leave them alone ---------------

DOCSTRING_ORIGINAL = "def area(r):\n    return 3.14159 * r * r\n"
DOCSTRING_ANSWER = (
    "def area(r):\n"
    '    """The area of a circle of radius r.\n'
    "\n"
    "    ```python\n"
    "    >>> area(1)\n"
    "    3.14159\n"
    "    ```\n"
    '    """\n'
    "    return 3.14159 * r * r\n"
)


def test_a_docstring_with_a_fenced_example_is_applied_whole() -> None:
    assert clean(DOCSTRING_ANSWER, DOCSTRING_ORIGINAL) == DOCSTRING_ANSWER


def test_a_fenced_example_at_the_very_end_of_the_answer_is_content() -> None:
    original = "x = 1\n"
    answer = 'x = 1\nDOC = """\n```python\nx\n```\n"""\n'
    assert clean(answer, original) == answer


def test_a_wrapped_answer_with_a_fenced_docstring_loses_only_the_wrapper() -> None:
    assert clean(f"```python\n{DOCSTRING_ANSWER}```\n", DOCSTRING_ORIGINAL) == DOCSTRING_ANSWER


def test_think_inside_a_string_literal_is_content() -> None:
    original = 'TAGS = ("<b>", "</b>")\n'
    answer = 'TAGS = ("<b>", "</b>", "<think>...</think>")\n'
    assert clean(answer, original) == answer
    answer = 'def strip(s):\n    return s.replace("<think>", "").replace("</think>", "")\n'
    assert clean(answer, "def strip(s):\n    return s\n") == answer


def test_a_region_that_starts_with_think_is_left_alone() -> None:
    original = "<think>old</think>\n<p>x</p>\n"
    answer = "<think>new</think>\n<p>x</p>\n"
    assert clean(answer, original) == answer


def test_a_source_line_that_is_exactly_a_marker_is_kept() -> None:
    original = 'HEREDOC = """\nREGION>>>\n"""\n'
    answer = 'HEREDOC = """\nREGION>>>\nmore\n"""\n'
    assert clean(answer, original) == answer
    original = "<<<REGION\nx = 1\n"  # a region that starts with one
    assert clean("<<<REGION\nx = 2\n", original) == "<<<REGION\nx = 2\n"


def test_code_that_mentions_fences_and_markers_in_strings_is_kept() -> None:
    original = "def f():\n    return 1\n"
    answer = 'def f():\n    print("```python")\n    print("REGION>>>")\n    return 1\n'
    assert clean(answer, original) == answer


# -- answers that carry on past the region: refused, never applied -------------------------------

FILE_BEFORE = "import os\nimport sys\n\nCONSTANT_VALUE = 42\n\n\n"
FILE_AFTER = "\n\ndef other(values):\n    total = sum(values)\n    return total / len(values)\n"


def test_an_answer_that_echoes_the_whole_file_between_the_markers_is_refused() -> None:
    raw = f"{FILE_BEFORE}<<<REGION\n{ANSWER}REGION>>>\n{FILE_AFTER}"
    message = refusal_around(raw)
    assert "region markers" in message and "nothing was applied" in message


def test_an_answer_that_carries_on_with_the_rest_of_the_file_is_refused() -> None:
    message = refusal_around(ANSWER + FILE_AFTER)
    assert "carries on past the region" in message


def test_an_answer_that_starts_with_the_text_before_the_region_is_refused() -> None:
    message = refusal_around(FILE_BEFORE + ANSWER)
    assert "carries on past the region" in message


def test_short_common_lines_next_to_the_region_are_not_taken_for_an_echo() -> None:
    original = "    if x:\n        return 1\n"
    answer = "    if x:\n        return 2\n    return None\n"
    assert clean_output(answer, original, "stop", before="def f(x):\n", after="    return None\n") == answer


def test_an_echo_of_short_neighbouring_lines_is_refused_too() -> None:
    # Ruby's neighbours: three lines of 9 characters in all; more are read until they say enough.
    original, before = "  def a\n    1\n  end\n", "class A\n"
    after = "\n  def b\n    2\n  end\nend\n\nputs A.new.a\n"
    answer = "  def a\n    10\n  end\n"
    assert clean_output(answer, original, "stop", before=before, after=after) == answer
    with pytest.raises(UnusableOutput) as info:
        clean_output(answer + after, original, "stop", before=before, after=after)
    assert "carries on past the region" in str(info.value)


@pytest.mark.parametrize(
    "tail",
    [
        "This version adds type annotations to both parameters.",
        "I added type hints to the parameters and the return value.",
        "Note: the function behaves exactly as before.",
        "Explanation: the parameters are now annotated as int.",
    ],
)
def test_prose_after_the_code_is_refused(tail: str) -> None:
    message = refusal(f"{ANSWER}\n{tail}\n")
    assert "explanation after its code" in message and tail[:30] in message


def test_a_trailing_comment_is_code_not_prose() -> None:
    answer = ANSWER + "\n# This version adds type annotations to both parameters.\n"
    assert clean(answer) == answer


def refusal_around(raw: str) -> str:
    with pytest.raises(UnusableOutput) as info:
        clean_output(raw, ORIGINAL, "stop", before=FILE_BEFORE, after=FILE_AFTER)
    return str(info.value)


# -- the answer is complete only when the stream said "stop" -------------------------------------


@pytest.mark.parametrize("reason", [None, "", "tool_calls", "abort"])
def test_any_end_but_stop_is_refused(reason: str | None) -> None:
    message = refusal(ANSWER, finish_reason=reason)
    assert "nothing was applied" in message
    if reason is None:
        assert "no finish_reason" in message


def test_a_fence_opened_and_never_closed_with_more_fences_inside_is_refused() -> None:
    assert "nothing was applied" in refusal(f"```python\n{DOCSTRING_ANSWER}", DOCSTRING_ORIGINAL)
    assert "does not close" in refusal("```python\ndef f():\n    x = 1\n```js\n", DOCSTRING_ORIGINAL)


def test_byte_order_mark_is_kept_when_the_model_drops_it() -> None:
    original = "\ufeff" + ORIGINAL
    assert clean(ANSWER, original) == "\ufeff" + ANSWER
    assert clean("\ufeff" + ANSWER, original) == "\ufeff" + ANSWER


def test_final_newline_is_kept_when_the_model_drops_it() -> None:
    assert clean(ANSWER.rstrip("\n"), ORIGINAL) == ANSWER
    assert clean(ANSWER.rstrip("\n").replace("\n", "\r\n"), ORIGINAL.replace("\n", "\r\n")) == ANSWER.replace(
        "\n", "\r\n"
    )


def test_nearest_lines_of_a_long_file_are_those_of_the_whole_split() -> None:
    """The echo check reads only the lines next to the region (a window at that edge, grown as needed):
    it must find exactly the lines a full split finds, whatever the window cuts (a \\r\\n, blank runs)."""
    from lsp_server.formats.hygiene import _nearest_lines, _outside_run
    from lsp_server.text import split_lines

    rng = random.Random(7)
    pieces = ["x = 1", "", "    ", "}", "def f(a, b):", "return a + b  # " + "z" * 300, "\t"]
    for _ in range(300):
        ending = rng.choice(["\n", "\r\n", "\r"])
        lines = [rng.choice(pieces) for _ in range(rng.randrange(0, 400))]
        text = ending.join(lines) + rng.choice(["", ending])
        full = [line.rstrip("\r\n") for line in split_lines(text)]
        assert _outside_run(_nearest_lines(text, at_end=False)) == _outside_run(full)
        assert _outside_run(_nearest_lines(text, at_end=True)) == _outside_run(full[::-1])
