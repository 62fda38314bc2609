"""Where the log goes: a user-only file, and stderr for the command-line subcommands.

The language server adds its own handler that forwards to the editor (`window/logMessage`);
nothing is ever printed to stdout by the server (it is the protocol stream).
"""

from __future__ import annotations

import logging
import os
import sys

PACKAGE = "lsp_server"
# Of an exception's message, on a log line without its traceback.
_EXCEPTION_CHARS = 300


def level_for(verbose: int) -> int:
    return logging.DEBUG if verbose >= 2 else logging.INFO if verbose == 1 else logging.WARNING


class OneLineFormatter(logging.Formatter):
    """A record as one line: an exception it carries as its type and message; the traceback only when
    `tracebacks` (at debug level, -vv). For the editor's log and stderr, which a person reads; the log
    file keeps every traceback."""

    def __init__(self, fmt: str, tracebacks: bool) -> None:
        super().__init__(fmt)
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        if self.tracebacks or not (record.exc_info or record.stack_info):
            return super().format(record)
        exc = record.exc_info[1] if record.exc_info else None
        # The record is shared with the other handlers (the log file's): what is taken is put back.
        kept = record.exc_info, record.exc_text, record.stack_info
        record.exc_info = record.exc_text = record.stack_info = None
        try:
            text = super().format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = kept
        if exc is None:
            return text
        said = " ".join(f"{type(exc).__name__}: {exc}".split())
        return f"{text} ({said[:_EXCEPTION_CHARS]})"


def file_handler(path: str) -> logging.Handler:
    """Append to `path`, created readable by the user only (the log may hold code)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    return handler


def configure_cli_logging(verbose: int, log_file: str | None) -> None:
    """`refactor`, `check`, `bench`: warnings to stderr (-v info, -vv debug), and the file if asked."""
    package_log = logging.getLogger(PACKAGE)
    package_log.setLevel(min(level_for(verbose), logging.INFO) if log_file else level_for(verbose))
    package_log.propagate = False
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(level_for(verbose))
    stderr.setFormatter(OneLineFormatter("refactor-lsp: %(levelname)s %(name)s: %(message)s", tracebacks=verbose >= 2))
    package_log.addHandler(stderr)
    if log_file:
        package_log.addHandler(file_handler(log_file))
