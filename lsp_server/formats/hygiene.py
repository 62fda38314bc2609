"""Output hygiene: turn what the model said into the region's new text, or refuse with a reason.

Hygiene never edits a correct answer: it strips only what wraps the WHOLE answer (a `<think>`
block at its very start, a markdown fence around all of it, the region markers as its first and
last lines) and refuses what it cannot separate from the code (prose after it, text from outside
the region). Refusing is always safe: nothing is applied and the user is told why.

`refuse_mass_deletion` is the one rule on deletions, applied by the engine to the region's new text
whatever the edit format: an answer that empties the region or deletes most of it is refused unless
the instruction asks for removal.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..config.schema import HunksForm
from ..regions import is_instruction_comment
from ..text import clip, split_lines
from .hunks import HunksResult, apply_hunks
from .hunks_diff import parse_answer
from .prompt import REGION_END, REGION_START


class UnusableOutput(Exception):
    """The model's output must not be applied; the message says why and what to do."""


_INCOMPLETE = {
    None: (
        "the backend's answer ended without saying it was complete (no finish_reason): a proxy or the server "
        "may have cut it off, so nothing was applied — run it again"
    ),
    # The engine refuses these before hygiene, with advice that fits the region and the cap
    # (refactor.cut_off_message); here for callers that clean an answer on their own.
    "length": "the model's answer was cut off at its token limit, so nothing was applied",
    "content_filter": "the backend's content filter stopped the answer; nothing was applied",
}
_FENCE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[ \t]*")
_PROSE_START = re.compile(
    r"^\s*(?:Sure|Certainly|Of course|Here(?:'s| is| are)|I (?:can|cannot|can't|am|'m|have|would|will)|I'm|"
    r"Sorry|Unfortunately|As an AI|The (?:code|function|region|instruction)|This (?:code|function|region)|"
    r"To (?:do|make|refactor)|Note:)\b",
)
# A sentence of explanation after the code: "This version ...", "I renamed ...", "Note: ...".
_PROSE_AFTER = re.compile(
    r"^(?:This|These|The|I|I've|I have|Note|Explanation|Changes|Here|In this|Let me|Hope|Feel free|Now|We|"
    r"It|Sure|Summary)\b[ ,:'][^\n]*[.:!]\s*$"
)
_QUOTED_CHARS = 80  # of the model's prose, quoted in the message that refuses it
_OUTSIDE_RUN = 3  # lines of the file next to the region that, found in the answer, show it echoed them
_OUTSIDE_MIN_CHARS = 20  # together; short lines ("}", "end") are taken until there are this many
_OUTSIDE_MAX_RUN = 8


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def _stripped_lines(text: str) -> set[str]:
    """The text's lines without their indentation and endings: what an answer line is compared with."""
    return {_content(line).strip() for line in split_lines(text)}


def strip_think(text: str, original: str) -> str:
    """Remove a `<think>...</think>` block that opens the answer (and only there)."""
    stripped = text.lstrip()
    if not stripped.startswith("<think>") or original.lstrip().startswith("<think>"):
        return text
    end = stripped.find("</think>")
    if end < 0:
        return ""  # the model never finished thinking: there is no answer
    return re.sub(r"^(?:[ \t]*\r?\n|[ \t]*\r)+", "", stripped[end + len("</think>") :])


def _closes(line: str, fence: str) -> bool:
    """A closing fence for `fence`: the same character, at least as long, nothing after it."""
    match = _FENCE.fullmatch(_content(line))
    return bool(match and not match["info"] and match["fence"][0] == fence[0] and len(match["fence"]) >= len(fence))


def strip_fence(text: str, original: str) -> str:
    """Remove a markdown fence that wraps the whole answer (optionally after one introducing line).

    A fence anywhere else (a docstring's example) is content. A region that itself starts with a
    fence (a markdown file) is left alone.
    """
    first_original = next((line for line in split_lines(original) if line.strip()), "")
    if _FENCE.fullmatch(_content(first_original)):
        return text
    lines = split_lines(text)
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return text
    opening = 0
    if _content(lines[0]).rstrip().endswith(":") and _content(lines[0]).strip() not in _stripped_lines(original):
        opening = 1  # "Here is the updated code:" then the fence
        while opening < len(lines) and not lines[opening].strip():
            opening += 1
    match = _FENCE.fullmatch(_content(lines[opening])) if opening < len(lines) else None
    if match is None or (opening and _FENCE.fullmatch(_content(lines[0]))):
        return text
    fence = match["fence"]
    closing = [i for i in range(opening + 1, len(lines)) if _closes(lines[i], fence)]
    if not closing:
        if opening == 0 and not any(_FENCE.fullmatch(_content(line)) for line in lines[1:]):
            # The closing fence was left off, or glued to the last line: the fence still wraps it all.
            body = lines[1:]
            glued = _content(body[-1]).rstrip() if body else ""
            if glued.endswith(fence) and not original.rstrip().endswith(fence):
                body[-1] = glued[: -len(fence)].rstrip() + "\n"
            return "".join(body)
        raise UnusableOutput(
            "the model's answer opens a markdown block that it does not close, so it is unclear where the code "
            "ends; nothing was applied — run it again"
        )
    if closing[-1] != len(lines) - 1:
        went_on = next(_content(line).strip() for line in lines[closing[-1] + 1 :] if line.strip())
        raise UnusableOutput(
            "the model wrote text after its code block, so nothing was applied — run it again or rephrase the "
            f'instruction (it went on: "{_quoted(went_on)}")'
        )
    body = lines[opening + 1 : closing[-1]]
    if body and not body[-1].endswith(("\n", "\r")):
        body[-1] += "\n"  # the line before the closing fence always ended; its break is the answer's
    return "".join(body)


def strip_markers(text: str, original: str) -> str:
    """Remove the region markers where the prompt put them: the answer's first and last lines."""
    lines = split_lines(text)
    original_lines = [_content(line).strip() for line in split_lines(original)]
    if lines and _content(lines[0]).strip() == REGION_START and original_lines[:1] != [REGION_START]:
        lines = lines[1:]
    if lines and _content(lines[-1]).strip() == REGION_END and original_lines[-1:] != [REGION_END]:
        lines = lines[:-1]
    markers = (REGION_START, REGION_END)
    if sum(_content(line).strip() in markers for line in lines) > sum(line in markers for line in original_lines):
        raise UnusableOutput(
            "the model's answer repeats the file around the region (it contains the region markers), so nothing "
            "was applied — run it again or select the code to rewrite"
        )
    return "".join(lines)


_NEWLINES = re.compile(r"\r\n|\r|\n")


def _min_indent(lines: list[str]) -> str:
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in lines if line.strip()]
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


def keep_byte_order_mark(text: str, original: str) -> str:
    """A region that starts the file with a BOM keeps it, whether or not the model copied it."""
    if original.startswith("\ufeff") and not text.startswith("\ufeff"):
        return "\ufeff" + text
    return text


def looks_like_prose(text: str, original: str) -> bool:
    """An explanation instead of code: starts like chat and shares no line with the region."""
    if not _PROSE_START.match(text):
        return False
    if _PROSE_START.match(original):
        return False
    original_lines = {line.strip() for line in split_lines(original) if len(line.strip()) > 3}
    shared = sum(1 for line in split_lines(text) if line.strip() in original_lines)
    return shared == 0


def prose_after_code(text: str, original: str) -> str | None:
    """The first line of an explanation the model wrote after the code, if it did."""
    lines = [_content(line) for line in split_lines(text)]
    while lines and not lines[-1].strip():
        lines.pop()
    # The answer's last paragraph: after its last blank line.
    start = max((i + 1 for i, line in enumerate(lines) if not line.strip()), default=0)
    if start == 0:
        return None
    first = lines[start]
    if first.strip() in _stripped_lines(original) or first[:1].isspace() or len(first.split()) < 4:
        return None
    return first if _PROSE_AFTER.match(first) else None


def _outside_run(lines: list[str]) -> list[str]:
    """The first _OUTSIDE_RUN non-blank lines, more (up to _OUTSIDE_MAX_RUN) while they are short: long
    enough together that meeting them by chance is unlikely; none if the file has too little there."""
    run: list[str] = []
    for line in lines:
        if line.strip():
            run.append(line)
            chars = sum(len(kept.strip()) for kept in run)
            if len(run) >= _OUTSIDE_MAX_RUN or (len(run) >= _OUTSIDE_RUN and chars >= _OUTSIDE_MIN_CHARS):
                break
    return run if sum(len(line.strip()) for line in run) >= _OUTSIDE_MIN_CHARS else []


def _contains_run(lines: list[str], run: list[str]) -> bool:
    if not run:
        return False
    body = [line.strip() for line in lines if line.strip()]
    want = [line.strip() for line in run]
    return any(body[i : i + len(want)] == want for i in range(len(body) - len(want) + 1))


def _nearest_lines(text: str, at_end: bool) -> list[str]:
    """The lines of `text` nearest the region, nearest first (`at_end`: `text` comes before it), enough
    for `_outside_run`: split from a window at that edge, not the whole rest of a long file."""
    size = 2048
    while True:
        whole = size >= len(text)
        window = text if whole else text[-size:] if at_end else text[:size]
        lines = [_content(line) for line in split_lines(window)]
        if not whole:
            lines = lines[1:] if at_end else lines[:-1]  # the line the window cut (or a \r\n it split)
        if at_end:
            lines.reverse()
        if whole or sum(1 for line in lines if line.strip()) >= _OUTSIDE_MAX_RUN:
            return lines
        size *= 4


def echoes_outside(text: str, original: str, before: str, after: str) -> bool:
    """The answer repeats the lines right before or after the region (it echoed the file)."""
    answer = [_content(line) for line in split_lines(text)]
    region = [_content(line) for line in split_lines(original)]
    for run in (
        _outside_run(_nearest_lines(after, at_end=False)),
        _outside_run(_nearest_lines(before, at_end=True))[::-1],
    ):
        if _contains_run(answer, run) and not _contains_run(region, run):
            return True
    return False


def _without_instruction_comments(text: str) -> str:
    return "".join(line for line in split_lines(text) if not is_instruction_comment(line))


def _quoted(text: str) -> str:
    """The model's words as a refusal quotes them."""
    return clip(text.strip(), _QUOTED_CHARS)


def _complete_answer(raw: str, original: str, finish_reason: str | None) -> str:
    """The answer less its `<think>` block, when the stream said it is complete and it is valid text."""
    if finish_reason != "stop":
        raise UnusableOutput(
            _INCOMPLETE.get(finish_reason)
            or f'the model\'s answer ended with finish_reason "{_quoted(str(finish_reason))}", not "stop", so nothing '
            "was applied — run it again or try another model"
        )
    if "\ufffd" in raw and "\ufffd" not in original:
        raise UnusableOutput(
            "the backend sent text that is not valid UTF-8 (replacement characters), so nothing was applied — "
            "run it again or check the backend"
        )
    if "</think>" not in raw and raw.lstrip().startswith("<think>") and not original.lstrip().startswith("<think>"):
        # No answer at all: never read as an empty one, which a removal instruction would apply.
        raise UnusableOutput(
            "the model's answer is only its reasoning (its <think> block never ends), so nothing was applied — "
            "run it again or try another model"
        )
    return strip_think(raw, original)


def clean_hunks_output(
    raw: str,
    original: str,
    finish_reason: str | None,
    *,
    drop_instruction_comments: bool = False,
    form: HunksForm = "search-replace",
) -> HunksResult:
    """The region with a hunks answer applied: read in the `form` asked for, or the other form when the
    model slipped into it (`hunks_diff.parse_answer`). Raises UnusableOutput for an incomplete answer,
    HunksError for hunks that cannot be applied exactly (nothing is applied)."""
    answer = parse_answer(_complete_answer(raw, original, finish_reason), form)
    result = apply_hunks(original, answer.hunks, form=answer.form)
    result = replace(result, notes=[*answer.notes, *result.notes])
    if drop_instruction_comments:
        text = _without_instruction_comments(result.text)
        result = replace(result, text=text, changed=text != original)
    return result


def clean_output(
    raw: str,
    original: str,
    finish_reason: str | None,
    *,
    before: str = "",
    after: str = "",
    drop_instruction_comments: bool = False,
) -> str:
    """The new region text. Raises UnusableOutput when it must not be applied.

    `before` and `after` are the document's text around the region: an answer that repeats them
    carried on past the region and is refused. A blank answer is returned as it is: the caller
    judges it with `refuse_mass_deletion`, as it judges a hunks answer that deletes the region.
    """
    text = strip_markers(strip_fence(_complete_answer(raw, original, finish_reason), original), original)
    if drop_instruction_comments:
        text = _without_instruction_comments(text)
    if not text.strip():
        return text  # whether the region may be emptied is `refuse_mass_deletion`'s to say, in both formats
    if looks_like_prose(text, original):
        first = text.strip().splitlines()[0]
        raise UnusableOutput(
            f'the model answered with an explanation instead of code ("{_quoted(first)}"), so nothing was applied '
            "— rephrase the instruction or try another model"
        )
    first_line = _content(split_lines(text.lstrip("\r\n"))[0])
    if _PROSE_START.match(first_line) and first_line.strip() not in _stripped_lines(original):
        raise UnusableOutput(
            f'the model wrote an explanation before its code ("{_quoted(first_line)}"), so nothing was '
            "applied — run it again or rephrase the instruction"
        )
    tail = prose_after_code(text, original)
    if tail is not None:
        raise UnusableOutput(
            f'the model wrote an explanation after its code ("{_quoted(tail)}"), so nothing was applied — '
            "run it again or rephrase the instruction"
        )
    if echoes_outside(text, original, before, after):
        raise UnusableOutput(
            "the model's answer carries on past the region (it repeats the code around it), so nothing was "
            "applied — run it again or select the code to rewrite"
        )
    return keep_byte_order_mark(match_newlines(restore_indentation(text, original), original), original)


# -- the deletion guard, one rule for both edit formats --------------------------------------------

# An answer keeping fewer than a quarter of a region's non-blank lines, on a region of 8 or more, is a
# deletion no ordinary refactor makes: on the benchmark corpus's 27 expected results the least kept
# is 67 % (loops into comprehensions), and of 4,194 definitions of 8+ lines changed in 1,500 commits
# of pallets/click, 2 kept under a quarter (code moved to another file, which one region's answer
# cannot do). Below 8 lines a simplification may rightly keep 1 line of 5; only emptying is refused.
_GUARDED_FROM_LINES = 8
_KEPT_AT_LEAST = 0.25
# A free-text instruction asking for removal, by its verb (or noun): what a user writes to delete
# code. A preset says so with `removes_code` instead: the built-in "simplify" says "remove
# duplication", which names what to fold together, not code to drop wholesale.
_REMOVAL = re.compile(
    r"\b(?:remov(?:e|es|ed|ing|al)|delet(?:e|es|ed|ing|ion)|drop(?:s|ped|ping)?|strip(?:s|ped|ping)?|"
    r"eliminat(?:e|es|ed|ing|ion)|eras(?:e|es|ed|ing)|(?:get|gets|getting|got) rid of)\b",
    re.IGNORECASE,
)
# "do not remove", "without deleting", "never drop any": the verb is negated within two words.
_NEGATED = re.compile(r"\b(?:not|never|no|without|don't|doesn't|nothing)\W+(?:\w+\W+){0,2}$", re.IGNORECASE)


def asks_for_removal(instruction: str) -> bool:
    """True when a free-text instruction asks for code to be removed (a removal verb, not negated)."""
    return any(not _NEGATED.search(instruction[: m.start()]) for m in _REMOVAL.finditer(instruction))


def _code_lines(text: str) -> int:
    return sum(1 for line in split_lines(text) if line.strip())


def refuse_mass_deletion(original: str, new: str, *, removal_asked: bool) -> None:
    """Raise UnusableOutput when the region's new text, in either edit format, has no code left, or
    keeps under a quarter of the region's non-blank lines, and the instruction did not ask for removal.

    The region format's empty answer and a hunks block whose empty REPLACE deletes the whole region
    are the same answer for the user, so they are refused with the same message, here.
    """
    if removal_asked:
        return
    before = _code_lines(original)
    after = _code_lines(new)
    if before == 0 or (after and (before < _GUARDED_FROM_LINES or after >= before * _KEPT_AT_LEAST)):
        return
    what = (
        f"leaves no code in the region (it deletes all {before} of its non-blank lines)"
        if not after
        else f"deletes {before - after} of the region's {before} non-blank lines"
    )
    raise UnusableOutput(
        f"the model's answer {what}, which the instruction does not ask for; nothing was applied — run it "
        "again, or say in the instruction that the code should be removed"
    )
