"""Apply tasks (`bench --kind apply`): each task of the corpus made into a snippet to merge, as a chat
model writes one: the definitions the expected file changes, whole, inside the headers of the
definitions around them, with a lazy marker (`# ... existing code ...`, in the file's comment
syntax) for every other stretch of code. Besides the corpus' refactor tasks, tasks of
`kind = "apply"` exist for this bench alone (a 2,000-line file, say), built the same way.

Where each part of the snippet goes is found by the product's own placement (placement/where.py),
in the source and in the expected file alike; the expected answer of each part is the expected
file's text there, checked: the parts' answers put in place give the expected file. A task whose
snippet does not place so (a renamed definition, a change outside every definition in a long file)
is left out, said in the report with why.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..languages.identify import language_of
from ..placement.lazy import comment_openers
from ..placement.snippet import CLOSING_LINE, LEAF_KINDS, header_end
from ..placement.where import NotPlaced, SnippetTarget, enclosing_definitions, place_snippet
from ..regions import ScopeCache
from ..regions.definition import Definition
from ..regions.region import definition_at
from ..text import split_lines
from .tasks import APPLY_KIND, BATCH_KIND, BenchError, Task, load_task, read_task_toml, task_names

MARKER_TEXT = "... existing code ..."


@dataclass(frozen=True)
class ApplyTask:
    name: str
    folder: Path
    file: str
    language: str  # as an editor names it (the scope and the prompt read it)
    source: str
    expected: str
    snippet: str
    parts: tuple[str, ...]  # where each part goes, described ("method `Foo.bar` (lines 3-9)")
    answers: tuple[tuple[str, str], ...]  # each part's region in the source → in the expected file

    @property
    def lines(self) -> int:
        return len(split_lines(self.source))

    def answer_map(self) -> dict[str, str]:
        """What a perfect model answers: each part's region, and the whole file (a whole-file merge)."""
        return dict(self.answers) | {self.source: self.expected}


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str


def _changed_definitions(source: str, expected: str, language: str) -> list[Definition] | None:
    """The outermost of the innermost named definitions of `expected` holding a changed line; None when
    a change lies outside every definition."""
    cache = ScopeCache()
    before, after = split_lines(source), split_lines(expected)
    found: dict[tuple[int, int], Definition] = {}
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for line in range(max(j1 - (j1 == j2), 0), max(j2, j1 + (j1 == j2))):
            line = min(line, len(after) - 1)
            if any(d.kind in LEAF_KINDS and d.first_line <= line <= d.last_line for d in found.values()):
                continue  # inside a function already found: the function is the change
            definition = definition_at(expected, line, language, cache)
            if definition is None or not definition.name:
                return None
            found.setdefault((definition.first_line, definition.last_line), definition)
    ordered = sorted(found.values(), key=lambda d: (d.first_line, -d.last_line))
    outermost: list[Definition] = []
    for definition in ordered:
        if not outermost or definition.first_line > outermost[-1].last_line:
            outermost.append(definition)
    return outermost


def make_snippet(expected: str, changed: Iterable[Definition], language: str) -> str:
    """The changed definitions whole, the headers (and closing lines) of the definitions around them,
    and a lazy marker for each other stretch of code: the snippet a chat model writes."""
    lines = split_lines(expected)
    shown: set[int] = set()
    for definition in changed:
        shown.update(range(definition.first_line, definition.last_line + 1))
        for around in enclosing_definitions(expected, definition, language):
            shown.update(range(around.first_line, header_end(lines, around.first_line, around.last_line) + 1))
            if CLOSING_LINE.fullmatch(lines[around.last_line].strip()):
                shown.add(around.last_line)
    opener = comment_openers(language)[0]
    closer = {"/*": " */", "<!--": " -->", "(*": " *)"}.get(opener, "")
    out: list[str] = []
    hidden: list[str] = []

    def flush() -> None:
        code = [line for line in hidden if line.strip()]
        if code:
            indent = code[0][: len(code[0]) - len(code[0].lstrip())]
            out.append(f"{indent}{opener} {MARKER_TEXT}{closer}\n")
        elif hidden and out:
            out.append("\n")
        hidden.clear()

    for index, line in enumerate(lines):
        if index in shown:
            flush()
            out.append(line if line.endswith(("\n", "\r")) else line + "\n")
        else:
            hidden.append(line)
    flush()
    return "".join(out)


def apply_task(task: Task) -> ApplyTask | Skipped:
    """The task as a snippet to merge, or why it cannot be one."""
    language = language_of(task.file, task.language)
    changed = _changed_definitions(task.source, task.expected, language)
    if changed is None:
        return Skipped(task.name, "a change lies outside every definition")
    if not changed:
        return Skipped(task.name, "the expected file changes nothing")
    snippet = make_snippet(task.expected, changed, language)
    try:
        here = place_snippet(task.source, snippet, language, None, ScopeCache())
    except NotPlaced as exc:
        return Skipped(task.name, f"the snippet does not place: {exc}")
    answers = _answers(task.source, task.expected, here)
    if answers is None:
        return Skipped(task.name, "its parts do not give the expected file (a change outside the regions placed)")
    return ApplyTask(
        name=task.name,
        folder=task.folder,
        file=task.file,
        language=language,
        source=task.source,
        expected=task.expected,
        snippet=snippet,
        parts=tuple(p.target.describe() for p in here),
        answers=answers,
    )


def _answers(source: str, expected: str, here: list[SnippetTarget]) -> tuple[tuple[str, str], ...] | None:
    """Each part's region in the source with the expected file's lines between the same unchanged lines
    around it, when together they give the expected file."""
    before, after = split_lines(source), split_lines(expected)
    same: dict[int, int] = {}  # a source line → the expected line it is, where the files agree
    for tag, i1, i2, j1, _j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            same.update((i1 + k, j1 + k) for k in range(i2 - i1))
    starts = [0, *itertools.accumulate(len(line) for line in after)]
    pairs: list[tuple[str, str]] = []
    for part in here:
        first, last = part.target.first_line, part.target.last_line
        above = same.get(first - 1) if first > 0 else -1
        below = same.get(last + 1) if last + 1 < len(before) else len(after)
        if above is None or below is None or below <= above:
            return None
        pairs.append((source[part.target.start : part.target.end], expected[starts[above + 1] : starts[below]]))
    merged, at = [], 0
    for part, (_, answer) in zip(here, pairs, strict=True):
        merged += [source[at : part.target.start], answer]
        at = part.target.end
    return tuple(pairs) if "".join([*merged, source[at:]]) == expected else None


def load_apply_tasks(folder: Path, names: Iterable[str] | None = None) -> tuple[list[ApplyTask], list[Skipped]]:
    """The corpus' tasks named (or all of them), each as an apply task, and those that cannot be one.
    Batch tasks are left out (their change is every definition: no snippet to speak of)."""
    tasks: list[ApplyTask] = []
    skipped: list[Skipped] = []
    for name in task_names(folder, names):
        kind = read_task_toml(folder / name)["kind"]
        if kind == BATCH_KIND:
            if names:
                raise BenchError(f"{name}: a batch task, which is no snippet to apply (bench --task {name})")
            continue
        made = apply_task(load_task(folder / name, allow=(APPLY_KIND,)))
        if isinstance(made, ApplyTask):
            tasks.append(made)
        else:
            skipped.append(made)
    if not tasks:
        raise BenchError(
            "no task of the corpus makes a snippet to apply: " + "; ".join(f"{s.name}: {s.reason}" for s in skipped)
        )
    return tasks, skipped
