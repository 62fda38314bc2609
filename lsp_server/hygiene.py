"""Output hygiene: turn what the model said into the region's new text, or refuse with a reason.

Refusing is always safe: nothing is applied and the user is told why.
"""

from __future__ import annotations

import re

from .prompt import REGION_END, REGION_START
from .scope import is_instruction_comment, split_lines


class UnusableOutput(Exception):
    """The model's output must not be applied; the message says why and what to do."""


_THINK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_FENCE_OPEN = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*[\w+#.-]*[ \t]*\r?\n", re.M)
_PROSE_START = re.compile(
    r"^\s*(?:Sure|Certainly|Of course|Here(?:'s| is| are)|I (?:can|cannot|can't|am|'m|have|would|will)|I'm|"
    r"Sorry|Unfortunately|As an AI|The (?:code|function|region|instruction)|This (?:code|function|region)|"
    r"To (?:do|make|refactor)|Note:)\b",
)


def strip_think(text: str) -> str:
    text = _THINK.sub("", text)
    if text.lstrip().startswith("<think>"):
        return ""  # the model never finished thinking: there is no answer
    return text


def strip_fence(text: str, original: str) -> str:
    """Remove a markdown fence around the answer, with any chatter outside it.

    A region that itself starts with a fence (a markdown file) is left alone.
    """
    if _FENCE_OPEN.match(original):
        return text
    stripped = text.strip("\r\n")
    match = _FENCE_OPEN.match(stripped)
    if match is None and not _FENCE_OPEN.search(original):
        # Chatter before the fence ("Here is the code:"). Only when the region has no fence line of its
        # own: a fence inside the code (a docstring's example) is content, not wrapping.
        match = _FENCE_OPEN.search(stripped)
    if not match:
        return text
    fence = match.group(1)
    opens = [m for m in re.finditer(rf"^[ \t]*{re.escape(fence)}[ \t]*[\w+#.-]*[ \t]*\r?$", stripped, re.M)]
    if len(opens) < 2:
        # An opening fence whose closing fence was cut off: take what follows it.
        if match.start() == 0:
            return stripped[match.end() :]
        return text
    body_start = stripped.find("\n", opens[0].start()) + 1
    body_end = opens[-1].start()
    return stripped[body_start:body_end]


def strip_markers(text: str) -> str:
    lines = split_lines(text)
    kept = [line for line in lines if line.strip() not in (REGION_START, REGION_END)]
    return "".join(kept) if len(kept) != len(lines) else text


_NEWLINES = re.compile(r"\r\n|\r|\n")


def _min_indent(lines: list[str]) -> str:
    indents = [re.match(r"[ \t]*", line).group(0) for line in lines if line.strip()]  # type: ignore[union-attr]
    if not indents:
        return ""
    return min(indents, key=len)


def restore_indentation(text: str, original: str) -> str:
    """A model that dropped the region's common indentation gets it back."""
    want = _min_indent(split_lines(original))
    lines = split_lines(text)
    have = _min_indent(lines)
    if not want or len(have) >= len(want):
        return text
    extra = want[len(have) :] if want.startswith(have) else want
    return "".join(extra + line if line.strip() else line for line in lines)


def match_newlines(text: str, original: str) -> str:
    """The region's newline convention, and its trailing newline (or lack of one).

    A region with one convention imposes it on the answer. A region with mixed endings leaves the
    answer as written: unchanged lines keep their own endings anyway (the diff compares content).
    """
    styles = set(_NEWLINES.findall(original))
    body = _NEWLINES.sub(styles.pop(), text) if len(styles) == 1 else text
    # The region's trailing newlines (and blank lines) stay as they were.
    trailing = original[len(original.rstrip("\r\n")) :]
    return body.rstrip("\r\n") + trailing if body.strip() else body


def looks_like_prose(text: str, original: str) -> bool:
    """An explanation instead of code: starts like chat and shares no line with the region."""
    if not _PROSE_START.match(text):
        return False
    if _PROSE_START.match(original):
        return False
    original_lines = {line.strip() for line in split_lines(original) if len(line.strip()) > 3}
    shared = sum(1 for line in split_lines(text) if line.strip() in original_lines)
    return shared == 0


def clean_output(
    raw: str,
    original: str,
    finish_reason: str | None,
    *,
    drop_instruction_comments: bool = False,
) -> str:
    """The new region text. Raises UnusableOutput when it must not be applied."""
    if finish_reason == "length":
        raise UnusableOutput(
            "the model's answer was cut off at its token limit, so nothing was applied — select a smaller "
            "region or raise refactor.max_tokens"
        )
    if finish_reason == "content_filter":
        raise UnusableOutput("the backend's content filter stopped the answer; nothing was applied")
    if "\ufffd" in raw and "\ufffd" not in original:
        raise UnusableOutput(
            "the backend sent text that is not valid UTF-8 (replacement characters), so nothing was applied — "
            "run it again or check the backend"
        )
    text = strip_markers(strip_fence(strip_think(raw), original))
    if drop_instruction_comments:
        text = "".join(line for line in split_lines(text) if not is_instruction_comment(line))
    if not text.strip():
        if original.strip():
            raise UnusableOutput(
                "the model returned no code, so nothing was applied — run it again or try another model"
            )
        return text
    if looks_like_prose(text, original):
        first = text.strip().splitlines()[0][:80]
        raise UnusableOutput(
            f'the model answered with an explanation instead of code ("{first}..."), so nothing was applied — '
            "rephrase the instruction or try another model"
        )
    return match_newlines(restore_indentation(text, original), original)
