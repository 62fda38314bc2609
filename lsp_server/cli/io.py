"""What the command line's subcommands share: exit codes, error lines, the config near a file, the
source files they read, and the diffs they print (main.py for one refactor, batch.py for many)."""

from __future__ import annotations

import contextlib
import difflib
import enum
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from ..config.layers import editor_layer, user_layer
from ..config.load import LoadedConfig, load_config
from ..config.schema import WORKSPACE_FILE, ConfigError
from ..files.safe_write import WriteRefused, writable_target
from ..text import Screen, count_of


class Exit(enum.IntEnum):
    """The exit codes, every subcommand alike (docs/cli.md, "Exit codes")."""

    OK = 0
    FAILED = 1
    USAGE = 2
    # `apply`'s own: an agent tells what to do next from the code alone.
    REFUSED = 3
    NOT_PLACED = 4
    STALE = 5
    INTERRUPTED = 130  # Ctrl-C, what a shell reports for SIGINT
    TERMINATED = 143  # SIGTERM taken by `bench` (it keeps what it measured), what a shell reports for it
    PIPE = 141  # stdout closed before the output ended: what a shell reports for a tool SIGPIPE ended


@contextlib.contextmanager
def on_screen() -> Iterator[None]:
    """The command's streams as a person's screen shows them: stderr always, stdout when it is a
    terminal (a pipe or a file gets the code's own bytes: a patch must still apply). What a repository,
    a backend or a model wrote is shown, never obeyed: text.on_terminal."""
    streams = sys.stdout, sys.stderr
    sys.stderr = Screen(sys.stderr)
    if sys.stdout.isatty():
        sys.stdout = Screen(sys.stdout)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = streams


def error(message: str) -> None:
    print(f"refactor-lsp: {message}", file=sys.stderr)


def write_refusal(paths: list[Path]) -> str | None:
    """Why `--write` may not write one of `paths`, asked before the model runs, not after; None: it may."""
    try:
        for path in paths:
            writable_target(path)
    except WriteRefused as exc:
        return str(exc)
    return None


def stdout_closed() -> int:
    """The reader of stdout went away (`check | head -1`): stop quietly, as a tool that SIGPIPE ends, and
    keep the interpreter's last flush from failing again on the closed pipe."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return Exit.PIPE


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
    from ..regions import line_span, split_lines

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


def read_stdin_text(max_chars: int, what: str, setting: str) -> str:
    """Standard input as UTF-8 text of at most `max_chars` characters, bounded before it is decoded: input
    past the bound is "over the limit" whatever it holds (a bound that cut a character in two says
    nothing about the encoding), and only input within it is judged as UTF-8. Raises ValueError."""
    from ..files.safe_read import ReadRefused, read_stream

    over = f"{what} is over {max_chars:,} characters ({setting})"
    try:  # UTF-8 takes at most 4 bytes a character: past that, the input is too large whatever it holds
        data = read_stream(sys.stdin.buffer, 4 * max_chars)
    except ReadRefused:
        raise ValueError(over) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} is not UTF-8 text (byte {exc.start})") from None
    if len(text) > max_chars:
        raise ValueError(over)
    return text


def print_diff(path: Path, text: str, new_text: str) -> None:
    """The unified diff of one file on stdout, `a/` and `b/` before a relative path."""
    from ..regions import split_lines

    before, after = (str(path), str(path)) if path.is_absolute() else (f"a/{path}", f"b/{path}")
    diff = difflib.unified_diff(split_lines(text), split_lines(new_text), before, after)
    sys.stdout.writelines(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
