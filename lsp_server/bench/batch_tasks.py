"""Batch tasks (benchmarks/tasks/README.md, "Batch tasks"): one file, one instruction, every top-level
definition of the file a target, found as `refactor --each definition` finds them
(`regions.targets.top_level_definitions`), each with its expected rewrite in the expected file.

A batch edits only its definitions, so the expected file must have the same definitions, by name and
in order, and the same text between and around them, byte for byte: each target's expected answer is
then the expected file's region of the same definition. Loading checks all of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..languages.identify import language_of
from ..pipeline.plan import RefactorRequest
from ..pipeline.runner import MAX_TARGETS
from ..regions import ScopeCache
from ..regions.targets import Target, top_level_definitions
from .tasks import BATCH_KIND, BenchError, is_batch_task, read_task_toml, read_utf8, task_names


@dataclass(frozen=True)
class BatchTask:
    name: str
    folder: Path
    file: str
    instruction: str
    language: str
    source: str
    expected: str
    targets: tuple[Target, ...]  # in the source, in order
    expected_regions: tuple[str, ...]  # each target's region as the expected file has it

    @property
    def language_id(self) -> str:
        """The language as an editor would name it (the task's), for the scope and the prompt."""
        return language_of(self.file, self.language)

    def request(
        self, backend: str, prediction: bool | None, cache_salt: str, max_tokens_setting: str
    ) -> RefactorRequest:
        """The request each target's refactor starts from (request.definition_items puts the cursor on it): the
        whole file, the instruction, the region format (as the bench's pairs), one prompt-cache salt
        for the batch's targets, which share the file as a real batch does."""
        return RefactorRequest(
            path=str(self.folder / self.file),
            text=self.source,
            start=0,
            end=0,
            instruction=self.instruction,
            backend=backend,
            prediction=prediction,
            language_id=self.language_id,
            edit_format="region",
            cache_salt=cache_salt,
            max_tokens_setting=max_tokens_setting,
        )

    def answers(self) -> dict[str, str]:
        """Each target's region → its expected region: what a perfect model answers."""
        return {self.source[t.start : t.end]: e for t, e in zip(self.targets, self.expected_regions, strict=True)}


def _gaps(text: str, targets: Iterable[Target]) -> list[str]:
    """The text before, between and after the targets."""
    gaps, at = [], 0
    for target in targets:
        gaps.append(text[at : target.start])
        at = target.end
    return [*gaps, text[at:]]


def load_batch_task(folder: Path) -> BatchTask:
    """A batch task, checked: its kind, no `lines` or `at`, two definitions or more, and an expected
    file that changes only inside them. Raises BenchError naming the file and what to fix."""
    path = folder / "task.toml"
    data = read_task_toml(folder)
    if data["kind"] != BATCH_KIND:
        raise BenchError(f'{path}: not a batch task (kind = "{data["kind"]}", not "{BATCH_KIND}")')
    given = [key for key in ("lines", "at") if key in data]
    if given:
        raise BenchError(
            f"{path}: a batch task's targets are every top-level definition of its file: leave out "
            f"{' and '.join(f'`{key}`' for key in given)}"
        )
    file, expected_file = data["file"], data["expected"]
    source, expected = read_utf8(folder / file), read_utf8(folder / expected_file)
    language = language_of(file, data["language"])
    targets = top_level_definitions(source, language, ScopeCache())
    if len(targets) < 2:
        raise BenchError(
            f"{path}: {file} has {len(targets)} top-level definition(s) ({language}); a batch task needs 2 or more"
        )
    if len(targets) > MAX_TARGETS:
        raise BenchError(f"{path}: {file} has {len(targets)} definitions; one batch takes at most {MAX_TARGETS}")
    after = top_level_definitions(expected, language, ScopeCache())
    names, expected_names = [t.name for t in targets], [t.name for t in after]
    if names != expected_names:
        raise BenchError(
            f"{path}: {expected_file} must have the definitions of {file}, in the same order (a batch rewrites "
            f"each, it adds or removes none): {file} has {', '.join(names)}; {expected_file} has "
            f"{', '.join(expected_names) or 'none'}"
        )
    for index, (gap, expected_gap) in enumerate(zip(_gaps(source, targets), _gaps(expected, after), strict=True)):
        if gap != expected_gap:
            where = (
                f"before `{names[0]}`"
                if index == 0
                else f"after `{names[-1]}`"
                if index == len(names)
                else f"between `{names[index - 1]}` and `{names[index]}`"
            )
            raise BenchError(
                f"{path}: {expected_file} differs from {file} {where}, outside every definition; a batch edits "
                "only its definitions: keep the text outside them byte for byte"
            )
    return BatchTask(
        name=folder.name,
        folder=folder,
        file=file,
        instruction=data["instruction"].strip(),
        language=data["language"],
        source=source,
        expected=expected,
        targets=tuple(targets),
        expected_regions=tuple(expected[t.start : t.end] for t in after),
    )


def split_tasks(folder: Path, names: Iterable[str] | None) -> tuple[list[str], list[str]]:
    """(the single-region tasks, the batch tasks) among those named, or of the folder when none is."""
    chosen = task_names(folder, names)
    batches = [name for name in chosen if is_batch_task(folder / name)]
    return [name for name in chosen if name not in batches], batches


def load_batch_tasks(folder: Path, names: Iterable[str] | None = None) -> list[BatchTask]:
    """The batch tasks named, or every one of the folder."""
    return [load_batch_task(folder / name) for name in split_tasks(folder, names)[1]]
