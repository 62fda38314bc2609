"""The command-line test harness: one way to run `refactor-lsp ARGS`, in this process or as a real one.

- `run_cli(*args, config=..., cwd=...)`: `lsp_server.cli.main.main(args)` called here, with the cwd,
  environment, stdin and outputs a child would have, and returns what `subprocess.run` would
  (`returncode`, `stdout`, `stderr`). A child pays ~1 s of CPU importing the SDK before it reads its
  first argument; most CLI tests check what the function decides, which a call proves as well.
- `run_process(*args, ...)`: the same as a real child (`python -m lsp_server`), for what only a
  process shows: its exit status, pipes on stdin and stdout, start-up, BrokenPipe, signals. Each
  subcommand keeps a few tests of this kind (docs/development.md, "The command line in tests").

What a call here could leak into the next test is put back after it: the environment, the cwd, the
standard streams, the package logger's handlers (`-v`, `--log-file`); asyncio's loop lives and dies in
a thread of its own, so the test's loop and signal handlers are never touched.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

from lsp_server.logs import PACKAGE
from lsp_server.text import Screen

Completed = subprocess.CompletedProcess
CONFIG_VARIABLE = "REFACTOR_LSP_CONFIG"


def cli_env(config: Path | None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a run sees: this test's (already isolated: XDG folders under a temporary one),
    the user config `config` (or none), and `env` on top."""
    environment = {k: v for k, v in os.environ.items() if k != CONFIG_VARIABLE}
    if config is not None:
        environment[CONFIG_VARIABLE] = str(config)
    environment.update(env or {})
    return environment


def run_process(
    *args: str, config: Path | None, cwd: Path, env: Mapping[str, str] | None = None, stdin: str | None = None
) -> Completed[str]:
    """`python -m lsp_server ARGS` as a child process, its outputs on pipes (and `stdin` on one)."""
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd,
        env=cli_env(config, env),
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )


def run_cli(
    *args: str, config: Path | None, cwd: Path, env: Mapping[str, str] | None = None, stdin: str | None = None
) -> Completed[str]:
    """`refactor-lsp ARGS` in this process, as `run_process` runs it: a traceback is printed on stderr
    and exits 1, as the interpreter does; an empty stdin unless `stdin` is given."""
    streams = _Streams((stdin or "").encode("utf-8"))
    saved_env, saved_cwd, environment = dict(os.environ), os.getcwd(), cli_env(config, env)
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    try:
        with package_logging_kept(streams.stdout, streams.stderr), streams:
            code = _in_thread(list(args))
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return Completed(["refactor-lsp", *args], code, streams.text("stdout"), streams.text("stderr"))


def _in_thread(argv: list[str]) -> int:
    """main(argv) on a thread of its own: `asyncio.run` there never meets the test's loop."""
    from lsp_server.cli.main import main

    result: list[int] = []

    def target() -> None:
        try:
            result.append(main(argv))
        except SystemExit as exc:  # argparse: --help, a usage error
            result.append(exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1)
        except Exception:  # what the interpreter does with an uncaught exception: a traceback, status 1
            sys.stderr.write(traceback.format_exc())
            result.append(1)

    thread = threading.Thread(target=target, name="refactor-lsp-cli")
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), f"refactor-lsp {' '.join(argv)} did not end in 60 s"
    return result[0]


class _Streams:
    """stdin, stdout and stderr as a child's on pipes: bytes in UTF-8, stdout strict and stderr
    backslash-replacing as Python's own, no terminal (`isatty()` is false and `shutil.get_terminal_size`
    falls back, as it does on a pipe)."""

    NAMES = ("stdin", "stdout", "stderr", "__stdout__")

    def __init__(self, stdin: bytes) -> None:
        self.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
        self.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
        self.stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
        self.saved: dict[str, object] = {}

    def __enter__(self) -> None:
        self.saved = {name: getattr(sys, name) for name in self.NAMES}
        sys.stdin, sys.stdout, sys.stderr = self.stdin, self.stdout, self.stderr
        sys.__stdout__ = self.stdout  # type: ignore[misc]  # what get_terminal_size asks for a terminal

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdout, self.stderr):
            stream.flush()
        for name, value in self.saved.items():
            setattr(sys, name, value)

    def text(self, name: str) -> str:
        """What was written, decoded as `subprocess.run(text=True)` does (universal newlines)."""
        stream = getattr(self, name)
        data = stream.buffer.getvalue().decode("utf-8")
        return data.replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def package_logging_kept(*keep_open: object) -> Iterator[None]:
    """The package logger as it was before: a handler added meanwhile (`configure_cli_logging`) is
    removed, and the log file it wrote closed (a child's closes at its exit); the standard streams and
    `keep_open` are left open."""
    logger = logging.getLogger(PACKAGE)
    handlers, level, propagate = logger.handlers[:], logger.level, logger.propagate
    before = _standard_streams()
    try:
        yield
    finally:
        kept = (*keep_open, *before, *_standard_streams())
        for handler in logger.handlers[:]:
            # pytest attaches its own (subclasses) to a logger that does not propagate: those are its.
            if handler in handlers or type(handler) is not logging.StreamHandler:
                continue
            logger.removeHandler(handler)
            stream = getattr(handler, "stream", None)
            if isinstance(stream, Screen):  # a view of a standard stream (cli/io.on_screen), not a log file
                stream = stream.under
            if stream is not None and not any(stream is other for other in kept):
                stream.close()
            handler.close()
        logger.setLevel(level)
        logger.propagate = propagate


def _standard_streams() -> tuple[object, ...]:
    return sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__
