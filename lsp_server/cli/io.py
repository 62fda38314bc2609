"""What the command line's subcommands share: exit codes, error lines, the config near a file, the
source files they read, the diffs they print (main.py for one refactor, batch.py for many), and how a
bench's report is shown and written (`measure_and_show`)."""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..config.layers import editor_layer, user_layer
from ..config.load import LoadedConfig, load_config
from ..config.schema import WORKSPACE_FILE, ConfigError
from ..text import count_of

if TYPE_CHECKING:
    from ..pipeline.engine import Engine

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# `apply`'s own (docs/cli.md, "Exit codes"): an agent tells what to do next from the code alone.
EXIT_REFUSED, EXIT_NOT_PLACED, EXIT_STALE = 3, 4, 5


def error(message: str) -> None:
    print(f"refactor-lsp: {message}", file=sys.stderr)


def find_workspace(path: Path) -> Path | None:
    """The nearest folder above `path` holding a workspace file."""
    for folder in [path if path.is_dir() else path.parent, *path.resolve().parents]:
        if (folder / WORKSPACE_FILE).is_file():
            return folder
    return None


def load_cli_config(config_file: str | None, near: Path | None, settings: str | None = None) -> LoadedConfig:
    """The config files' layers, plus an editor's settings (JSON, the `refactorLsp` section) when given."""
    user = user_layer(Path(config_file).expanduser() if config_file else None)
    editor = []
    if settings:
        try:
            editor.append(editor_layer(json.loads(settings)))
        except json.JSONDecodeError as exc:
            raise ConfigError("--settings", "refactorLsp", f"is not valid JSON ({exc.msg})") from None
    # Absolute: the folder is compared with trusted_workspaces, and the message says what to add there.
    loaded = load_config(user, editor, find_workspace(near.absolute()) if near else None)
    for problem in loaded.problems:
        error(problem)
    return loaded


def parse_lines(spec: str, text: str) -> tuple[int, int]:
    """--lines START:END (1-based, inclusive) as offsets into `text`. Raises ValueError."""
    from ..scope import line_span, split_lines

    try:
        first, _, last = spec.partition(":")
        start, end = int(first), int(last or first)
    except ValueError:
        raise ValueError(f"--lines must be START:END (1-based, inclusive), not {spec!r}") from None
    count = len(split_lines(text))  # as LSP counts: a form feed or U+2028 inside a line does not end it
    if start > end:
        raise ValueError(f"--lines {spec} is reversed: give the first line, then the last ({end}:{start})")
    if not start >= 1 or end > max(count, 1):
        raise ValueError(f"--lines {spec} is outside the file's {count_of(count, 'line')}")
    return line_span(text, start - 1, end - 1)


def read_source(path: Path, max_chars: int) -> str:
    """The file to refactor: a regular UTF-8 file of at most `max_chars` characters (refactor.max_file_chars)."""
    from ..files.safe_read import read_regular_file

    # UTF-8 takes at most 4 bytes a character: past that, the file is too large whatever it holds.
    data = read_regular_file(path, 4 * max_chars, limit_name=f"4 × refactor.max_file_chars = {max_chars:,} characters")
    try:
        # newline="" semantics: keep \r\n as it is, so edits preserve every byte.
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text (byte {exc.start}); refactor-lsp edits UTF-8 files only") from None
    if len(text) > max_chars:
        raise ValueError(
            f"{path} has {len(text):,} characters, more than refactor.max_file_chars ({max_chars:,}); "
            "nothing was sent — raise refactor.max_file_chars in your config to refactor it"
        )
    return text


def print_diff(path: Path, text: str, new_text: str) -> None:
    """The unified diff of one file on stdout, `a/` and `b/` before a relative path."""
    from ..scope import split_lines

    before, after = (str(path), str(path)) if path.is_absolute() else (f"a/{path}", f"b/{path}")
    diff = difflib.unified_diff(split_lines(text), split_lines(new_text), before, after)
    sys.stdout.writelines(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)


def write_report(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


class _Report(Protocol):
    def to_json(self) -> str: ...


ReportT = TypeVar("ReportT", bound=_Report)


async def measure_and_show(
    args: argparse.Namespace,
    measuring: Callable[[Engine], Awaitable[ReportT]],
    terminal: Callable[[ReportT], str],
    markdown: Callable[[ReportT], str],
) -> ReportT | None:
    """Run a bench on an engine of its own, print its table, write --markdown and --json; None when it
    could not run (said). The user's history must not steer `auto` in a measurement: the size rule decides."""
    from ..bench import BenchError, SizeRuleOnly
    from ..pipeline.engine import Engine

    engine = Engine(SizeRuleOnly())
    try:
        report = await measuring(engine)
    except BenchError as exc:
        error(str(exc))
        return None
    finally:
        await engine.close()
    sys.stdout.write(terminal(report))
    if args.markdown:
        write_report(args.markdown, markdown(report))
    if args.json:
        write_report(args.json, report.to_json())
    return report
