"""Output hygiene: what the model said becomes the region's new text, or is refused with a reason."""

from __future__ import annotations

import pytest

from lsp_server.hygiene import UnusableOutput, clean_output

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


def test_chatter_around_the_fence_is_stripped() -> None:
    raw = f"Here is the updated code:\n\n```python\n{ANSWER}```\n\nI added type hints to both parameters."
    assert clean(raw) == ANSWER


def test_fence_cut_off_before_its_end_still_gives_the_code() -> None:
    assert clean(f"```python\n{ANSWER}") == ANSWER


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
    assert "returned no code" in message
    assert "nothing was applied" in message


@pytest.mark.parametrize("raw", ["", "   \n\n"])
def test_empty_answer_is_refused(raw: str) -> None:
    message = refusal(raw)
    assert "returned no code" in message and "nothing was applied" in message


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
    original = "    return a + b\n"
    raw = "The code below\n    return a + b\n"  # odd, but it shares a line with the region: not prose
    assert clean(raw, original).endswith("    return a + b\n")


def test_answer_cut_off_at_the_token_limit_is_refused() -> None:
    message = refusal(ANSWER[:20], finish_reason="length")
    assert "cut off" in message
    assert "smaller region" in message
    assert "max_tokens" in message


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
