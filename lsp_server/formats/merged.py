"""A merged answer (a snippet applied to its region) judged on what merging must keep.

Two refusals of their own, after the hygiene every answer gets:
- a lazy marker the model copied (`# ... existing code ...` in the answer, where the region had no
  such line): the model wrote the marker instead of the code it stands for, and applying it would
  delete that code (`LazyMarkerLeft`, the problem and the marker line kept apart for a repair);
- the deletion guard, on what the snippet allows: a snippet with lazy markers keeps the region's
  code, so the merge is held to the region as a refactor is; a snippet without markers is the whole
  new code, so the merge may remove what the snippet leaves out, but not leave less than a quarter
  of the snippet itself (or nothing).
"""

from __future__ import annotations

from collections import Counter

from ..placement.lazy import marker_lines
from ..text import clip, split_lines
from .hygiene import UnusableOutput, refuse_mass_deletion


class LazyMarkerLeft(UnusableOutput):
    """The merged answer still holds a lazy marker line of the snippet."""

    def __init__(self, message: str, problem: str, line: int, marker: str) -> None:
        super().__init__(message)
        self.problem = problem  # what is wrong, without the advice (a repair's prompt says it)
        self.line = line  # 1-based, in the answer
        self.marker = marker


def copied_markers(answer: str, original: str, snippet: str, language: str | None) -> list[tuple[int, str]]:
    """(line, text) of the answer's marker lines that the region did not have as many times: the
    markers the model copied. Matched on the stripped line; read in the file's comment syntax and,
    leniently, in any (a `// ...` left in Python is no Python code either)."""
    lines = split_lines(answer)
    found = marker_lines(lines, language, lenient=True)
    if not found:
        return []
    original_lines = split_lines(original)
    kept = Counter(original_lines[i].strip() for i in marker_lines(original_lines, language, lenient=True))
    snippet_lines = split_lines(snippet)
    shown = {snippet_lines[i].strip() for i in marker_lines(snippet_lines, language, lenient=True)}
    copied = []
    for index in found:
        text = lines[index].strip()
        if kept[text] > 0:
            kept[text] -= 1
            continue
        if text in shown or marker_lines([lines[index]], language) == [0]:
            copied.append((index + 1, text))
    return copied


def check_merged(answer: str, original: str, snippet: str, language: str | None) -> None:
    """Raise LazyMarkerLeft or UnusableOutput when the merged region must not be applied."""
    copied = copied_markers(answer, original, snippet, language)
    if copied:
        line, marker = copied[0]
        more = f" (and {len(copied) - 1} more)" if len(copied) > 1 else ""
        problem = (
            f"the merged answer still holds the lazy marker `{clip(marker, 80)}` on its line {line}{more}: the "
            "model copied the marker instead of the code it stands for"
        )
        raise LazyMarkerLeft(
            f"{problem}, so nothing was applied — run it again, or give the snippet with the code in place of "
            "its markers",
            problem,
            line,
            marker,
        )
    snippet_lines = split_lines(snippet)
    lazy = bool(marker_lines(snippet_lines, language, lenient=True))
    try:
        refuse_mass_deletion(original if lazy else snippet, answer, removal_asked=False)
    except UnusableOutput:
        reference = "the region" if lazy else "the snippet"
        why = (
            "the snippet's lazy markers stand for that code"
            if lazy
            else "a merge keeps at least the snippet's own code"
        )
        raise UnusableOutput(
            f"the merged answer leaves out most of {reference} ({why}), so nothing was applied — run it again"
        ) from None
