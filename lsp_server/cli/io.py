"""What the command line's subcommands share: exit codes, error lines, the config near a file, the
source files they read, and the diffs they print (main.py for one refactor, batch.py for many)."""

from __future__ import annotations

import codecs
import contextlib
import difflib
import enum
import io
import json
import locale
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from ..config.layers import editor_layer, user_layer
from ..config.load import LoadedConfig, load_config
from ..config.schema import WORKSPACE_FILE, ConfigError
from ..files.safe_write import WriteRefused, writable_target
from ..text import Screen, count_of, spell


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
def interruptible() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt while the block runs. asyncio.run turns the first Ctrl-C into a
    cancel of its task, which code that waits without an await (a question blocked reading the terminal,
    a wait for a file's lock) never sees: the wait went on, and what came after it was written before the
    cancel landed."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def on_screen(command: Callable[[], int]) -> int:
    """`command` run with the streams as a person's screen shows them, and its end as an exit code.

    stderr always, and stdout when it is a terminal, show what a repository, a backend or a model wrote,
    never obey it (text.on_terminal); a pipe or a file gets the code's own bytes: a patch must still
    apply. Ctrl-C ends as 130; a reader gone (`| head`) as 141, quietly, as for a tool SIGPIPE ends; a
    standard stream closed (`>&-`, `2>&-`) reads or writes nothing, as does stderr once it cannot be
    written (`_Commentary`); a stdout that cannot be written is said,
    1; an unexpected error's traceback is shown spelt out like the rest, 1. A pipe or a file gets UTF-8
    whatever the locale says, stderr as stdout (`_for_reader`); a terminal that cannot show a character
    gets it spelt out, and the command says so once."""
    _closed_streams_opened()
    streams = sys.stdout, sys.stderr
    sys.stderr = _Commentary(_for_reader(sys.stderr))
    sys.stdout = Screen(_for_reader(sys.stdout)) if sys.stdout.isatty() else _for_reader(sys.stdout)
    try:
        code = command()
        sys.stdout.flush()  # a reader gone shows here, where it is answered, not in the interpreter's last flush
        if isinstance(sys.stdout, Screen) and sys.stdout.unshowable:
            error(_unshowable(sys.stdout))
        return code
    except KeyboardInterrupt:
        return Exit.INTERRUPTED
    except OSError as exc:
        lost = _lost_streams()
        if isinstance(exc, BrokenPipeError):
            return Exit.PIPE
        if not lost:
            return _crashed()
        if "stderr" not in lost:
            error(f"could not write to {' and '.join(lost)} ({exc.strerror or exc}): the output is incomplete")
        return Exit.FAILED
    except Exception:
        return _crashed()
    finally:
        sys.stdout, sys.stderr = streams


class _Commentary(Screen):
    """stderr: what the command says as it goes (a line a definition, a bench's progress). Once it cannot
    be written (its reader gone: `2>&1 >out.json | head -3`; a full disk: `2>/dev/full`; a descriptor
    open for reading only) it takes nothing more, and the work goes on, as `cp` and `ls` go on: a run
    of many definitions ended at that line, in an error of its own, with exit 1, no file written and no
    `--json` (and one gone while they were written had written some); a bench lost what it measured.
    stdout is the output itself: a reader gone from it ends the command (141)."""

    def write(self, text: str) -> int:
        with self._unwritable_quietly():
            super().write(text)
        return len(text)

    def frame(self, controls: str) -> None:
        with self._unwritable_quietly():
            super().frame(controls)

    def flush(self) -> None:
        with self._unwritable_quietly():
            super().flush()

    @contextlib.contextmanager
    def _unwritable_quietly(self) -> Iterator[None]:
        try:
            yield
        except OSError:
            _to_null(self.under)  # what the stream still buffers, and all that follows, goes nowhere


def _for_reader(stream: TextIO) -> TextIO:
    """A standard stream writing in an encoding its reader takes. A pipe or a file gets UTF-8: a diff is
    a patch of a UTF-8 file, whose lines must be the file's own bytes to apply (in latin-1 a `café` is
    another byte, a `中` no byte at all, and the output stopped there), `--json` is UTF-8 (RFC 8259), and
    stderr alike, for `2>&1` makes one stream of the two (a latin-1 stderr's `·` in a UTF-8 diff was
    neither). The locale's encoding, or PYTHONIOENCODING's, is for what a person reads: a terminal
    (Screen); but not one that writes ASCII as other bytes (UTF-16's NUL after each letter, UTF-8-sig's
    byte-order mark), which no terminal reads: it gets the locale's own, or UTF-8."""
    if not isinstance(stream, io.TextIOWrapper):
        return stream  # no encoding of its own (a test's buffer)
    wanted = "utf-8"
    if stream.isatty():
        if _ascii_as_ascii(stream.encoding):
            return stream
        wanted = locale.getencoding() if _ascii_as_ascii(locale.getencoding()) else "utf-8"
    if codecs.lookup(stream.encoding).name != codecs.lookup(wanted).name:
        stream.reconfigure(encoding=wanted, errors=stream.errors)
    return stream


def _ascii_as_ascii(encoding: str) -> bool:
    try:
        return "\n~ a".encode(encoding) == b"\n~ a"
    except LookupError:
        return False


def _unshowable(screen: Screen) -> str:
    return (
        f"{count_of(screen.unshowable, 'character')} of the output could not be shown in this terminal's "
        f"encoding ({screen.encoding}) and are spelt out as JSON spells them (\\uXXXX): set a UTF-8 locale "
        "(LANG=C.UTF-8) or PYTHONIOENCODING=utf-8 to see them, or send stdout to a file or a pipe, which get UTF-8"
    )


def _crashed() -> int:
    """What the interpreter does with an uncaught exception, through the Screen: a traceback quotes paths
    and messages we did not write."""
    with contextlib.suppress(OSError):
        traceback.print_exc(file=sys.stderr)
    return Exit.FAILED


def _lost_streams() -> list[str]:
    """The standard streams that can no longer be written (a reader gone, a descriptor not open for
    writing), each pointed at the null device: the interpreter's last flush would fail on them again,
    with a traceback of its own. A reader gone from a stream that tells nothing (a pipe takes an empty
    write, and the unwritten buffer is gone) is stdout's."""
    lost = [name for name in ("stdout", "stderr") if not _writable(getattr(sys, name))]
    if not lost and isinstance(sys.exc_info()[1], BrokenPipeError):
        _to_null(sys.stdout)
    for name in lost:
        _to_null(getattr(sys, name))
    return lost


def _writable(stream: TextIO) -> bool:
    try:
        stream.flush()
        fd = stream.fileno()
    except (OSError, ValueError) as exc:
        return isinstance(exc, io.UnsupportedOperation)  # no descriptor (a test's buffer): as written
    try:
        os.write(fd, b"")  # refused (EBADF) by a descriptor open for reading only
    except OSError:
        return False
    return True


def _to_null(stream: TextIO) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _closed_streams_opened() -> None:
    """A standard stream closed when the command started (`>&-`, `2>&-`, `<&-`): the interpreter has
    None for it, which print() skips but a write fails on; and the first file opened would take its
    descriptor, where a child process would write its output. The null device takes its place."""
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        if getattr(sys, name) is not None:
            continue
        null = os.open(os.devnull, flags)
        if null != fd and _closed(fd):
            os.dup2(null, fd)
            os.close(null)
            null = fd
        setattr(sys, name, open(null, "r" if fd == 0 else "w", encoding="utf-8", closefd=null != fd))  # noqa: SIM115


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def error(message: str) -> None:
    print(f"refactor-lsp: {message}", file=sys.stderr)


def print_json(value: object) -> None:
    """`--json`'s one object on stdout, one line of UTF-8 JSON, whatever it quotes: a file name that is not
    UTF-8 (`caf\\xe9.py`, read as a lone surrogate) is spelt `\\udce9`, which reads back as the same
    name; written as it was, it was no UTF-8 (a byte 0xe9 that no JSON reader takes) or a traceback."""
    text = json.dumps(value, ensure_ascii=False)
    print(_SURROGATE.sub(lambda found: spell(found.group()), text))


_SURROGATE = re.compile(r"[\ud800-\udfff]")  # only ever lone in a str: a character past U+FFFF is one


def write_refusal(paths: list[Path]) -> str | None:
    """Why `--write` may not write one of `paths`, asked before the model runs, not after; None: it may."""
    try:
        for path in paths:
            writable_target(path)
    except WriteRefused as exc:
        return str(exc)
    return None


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
    """The unified diff of one file on stdout, as git writes one: `a/` and `b/` before a relative path,
    each name as git writes it (`diff_name`); lines end at \\n alone, as patch and `git apply` read them
    (a file whose lines end in a lone \\r is one line to them, and applies so)."""
    before, after = (str(path), str(path)) if path.is_absolute() else (f"a/{path}", f"b/{path}")
    diff = difflib.unified_diff(_patch_lines(text), _patch_lines(new_text), diff_name(before), diff_name(after))
    sys.stdout.writelines(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)


def _patch_lines(text: str) -> list[str]:
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


# What git quotes in a name (quote.c, core.quotePath's default): a control character, a quote, a
# backslash, DEL and every byte of a character past ASCII; C's escapes for those that have one, else octal.
_GIT_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\"}


def diff_name(name: str) -> str:
    """A file's name in a `---`/`+++` line as git writes it: C-quoted (`"a/new\\nline"`) when it holds
    what could end the line or hide in it, and a tab after one with a space, where patch ends a name; a
    name in a repository cannot forge a line of the diff nor be read as another."""
    data = os.fsencode(name)  # a name that is not UTF-8 (a lone surrogate) as the bytes it was
    if any(byte < 0x20 or byte >= 0x7F or byte in (34, 92) for byte in data):
        name = '"' + "".join(_GIT_ESCAPES.get(b, chr(b) if 0x20 <= b < 0x7F else f"\\{b:03o}") for b in data) + '"'
    return name + "\t" if " " in name else name
