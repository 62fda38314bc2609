"""The task corpus (benchmarks/tasks/, format in its README): one folder per task, loaded and checked."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.schema import EditFormat
from ..languages.identify import language_of
from ..pipeline.plan import RefactorRequest
from ..regions import choose_region, line_span, selection_lines
from ..text import split_lines

TASK_KINDS = ("mostly-unchanged", "heavy-rewrite")
# One instruction for every top-level definition of a file, run as a batch (bench/batch_tasks.py):
# `load_tasks` leaves these out unless named, and refuses them named; `batch_tasks` loads them.
BATCH_KIND = "batch"
# A change to merge as a snippet, for `bench --kind apply` alone (bench/apply_tasks.py): the other
# benches leave these out, as they do batch tasks.
APPLY_KIND = "apply"
OWN_BENCH_KINDS = (BATCH_KIND, APPLY_KIND)


class BenchError(Exception):
    """The bench cannot run; the message says what to fix."""


@dataclass(frozen=True)
class Task:
    name: str
    folder: Path
    file: str
    instruction: str
    lines: tuple[int, int] | None  # 1-based, inclusive; None: the whole file
    kind: str
    language: str
    source: str
    expected: str
    # A cursor line (1-based) the task names instead of lines: `lines` are then the ones the editor's
    # scope chose around it when the task was loaded.
    at: int | None = None

    def span(self) -> tuple[int, int]:
        if self.lines is None:
            return 0, len(self.source)
        return line_span(self.source, self.lines[0] - 1, self.lines[1] - 1)

    @property
    def region_lines(self) -> int:
        if self.lines is None:
            return len(split_lines(self.source))
        return self.lines[1] - self.lines[0] + 1

    def request(self, backend: str, prediction: bool | None, edit_format: EditFormat | None = None) -> RefactorRequest:
        """The request an editor would send: the task's lines selected, or the whole file.

        An `at` task's lines are the ones the scope chose at its cursor when the task was loaded:
        selecting them gives the model the region and the prompt the cursor would.
        """
        start, end = self.span() if self.lines else (0, 0)
        return RefactorRequest(
            path=str(self.folder / self.file),
            text=self.source,
            start=start,
            end=end,
            instruction=self.instruction,
            backend=backend,
            prediction=prediction,
            scope="selection" if self.lines else "file",
            edit_format=edit_format,
        )

    def expected_region(self) -> str:
        """The region as the expected file has it (benchmarks/tasks/README.md: prefix and suffix unchanged)."""
        if self.lines is None:
            return self.expected
        start, end = self.span()
        return self.expected[start : len(self.expected) - (len(self.source) - end)]


# Where the wheel puts benchmarks/tasks (pyproject.toml, force-include): `bench` runs after a plain install.
INSTALLED_CORPUS = Path(__file__).resolve().parent / "corpus"


def default_tasks_dir() -> Path | None:
    """The corpus of the checkout the package runs from (an editable install: the files as edited), else
    the one installed with the package (a wheel's site-packages is no checkout: it has no pyproject.toml)."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "benchmarks" / "tasks").is_dir():
        return checkout / "benchmarks" / "tasks"
    return INSTALLED_CORPUS if INSTALLED_CORPUS.is_dir() else None


def read_utf8(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise BenchError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BenchError(f"{path} is not UTF-8 text") from None


def read_task_toml(folder: Path) -> dict[str, Any]:
    """A task's task.toml with its required keys checked (non-empty strings). Raises BenchError."""
    path = folder / "task.toml"
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise BenchError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise BenchError(f"cannot read {path}: {exc.strerror}") from None
    for key in ("file", "instruction", "expected", "kind", "language"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise BenchError(f"{path}: `{key}` is required and must be a non-empty string")
    if data["kind"] not in (*TASK_KINDS, *OWN_BENCH_KINDS):
        kinds = ", ".join((*TASK_KINDS, *OWN_BENCH_KINDS))
        raise BenchError(f"{path}: `kind` must be one of {kinds}, not {data['kind']!r}")
    return data


def is_batch_task(folder: Path) -> bool:
    return read_task_toml(folder)["kind"] == BATCH_KIND


def load_task(folder: Path, allow: tuple[str, ...] = ()) -> Task:
    """A single-region task (or one of the kinds in `allow`), checked. Raises BenchError."""
    path = folder / "task.toml"
    data = read_task_toml(folder)
    if data["kind"] == BATCH_KIND:
        raise BenchError(f'{path}: a batch task (kind = "batch") runs as a batch: bench.batch_tasks loads it')
    if data["kind"] == APPLY_KIND and APPLY_KIND not in allow:
        raise BenchError(f'{path}: an apply task (kind = "apply") runs with `bench --kind apply`')
    source = read_utf8(folder / data["file"])
    expected = read_utf8(folder / data["expected"])
    lines: tuple[int, int] | None = None
    at: int | None = None
    if "lines" in data and "at" in data:
        raise BenchError(f"{path}: give `lines` or `at`, not both")
    if "at" in data:
        at, lines = _scope_lines(path, data["at"], source, data["file"], data["language"])
    if "lines" in data:
        spec = data["lines"]
        try:
            first, _, last = str(spec).partition(":")
            lines = (int(first), int(last or first))
        except ValueError:
            raise BenchError(f'{path}: `lines` must be "START:END" (1-based, inclusive), not {spec!r}') from None
        count = len(source.splitlines())
        if not 1 <= lines[0] <= lines[1] <= count:
            raise BenchError(f"{path}: `lines` {spec} is outside the {count} lines of {data['file']}")
    return Task(
        name=folder.name,
        folder=folder,
        file=data["file"],
        instruction=data["instruction"].strip(),
        lines=lines,
        kind=data["kind"],
        language=data["language"],
        source=source,
        expected=expected,
        at=at,
    )


def _scope_lines(path: Path, at: object, source: str, file: str, language: str) -> tuple[int, tuple[int, int] | None]:
    """(the cursor line, the lines the editor's scope chooses there; None: the whole file)."""
    count = len(source.splitlines())
    # bool is an int to Python, never a line number to a reader.
    if not isinstance(at, int) or isinstance(at, bool) or not 1 <= at <= count:
        raise BenchError(f"{path}: `at` must be a line number of {file} (1 to {count}), not {at!r}")
    offset, _ = line_span(source, at - 1, at - 1)
    # Mode and language as the server plans a cursor request: `auto`, the editor's languageId.
    region = choose_region(source, offset, offset, "auto", language_of(file, language))
    if region.kind == "file":
        return at, None
    first, last = selection_lines(source, region.start, region.end)
    return at, (first + 1, last + 1)


def task_names(folder: Path, names: Iterable[str] | None = None) -> list[str]:
    """The tasks named (each once, in order), checked against the folder; None or none: every task there."""
    if not folder.is_dir():
        raise BenchError(f"the task folder {folder} does not exist")
    available = sorted(p.name for p in folder.iterdir() if (p / "task.toml").is_file())
    if not available:
        raise BenchError(f"{folder} holds no tasks (folders with a task.toml; see benchmarks/tasks/README.md)")
    wanted = list(dict.fromkeys(names or []))
    unknown = [n for n in wanted if n not in available]
    if unknown:
        raise BenchError(f"no task named {', '.join(unknown)} in {folder} (there are: {', '.join(available)})")
    return wanted or available


def load_tasks(folder: Path, names: Iterable[str] | None = None) -> list[Task]:
    """The single-region tasks named, or every one of the folder (its batch and apply tasks left out)."""
    chosen = task_names(folder, names)
    batches = [name for name in chosen if is_batch_task(folder / name)]
    if names and batches:
        raise BenchError(f"{', '.join(batches)}: batch tasks, which run on their own (`bench --task NAME`)")
    applies = [name for name in chosen if read_task_toml(folder / name)["kind"] == APPLY_KIND]
    if names and applies:
        raise BenchError(f"{', '.join(applies)}: apply tasks, which run with `bench --kind apply`")
    return [load_task(folder / name) for name in chosen if name not in batches and name not in applies]


def task_lines(task: Task) -> str | None:
    """A task's lines as its summaries give them: "START:END", or None for the whole file."""
    return f"{task.lines[0]}:{task.lines[1]}" if task.lines else None
