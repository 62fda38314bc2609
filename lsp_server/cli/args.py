"""The command line's arguments: the subcommands, their options and help (main.py runs them)."""

from __future__ import annotations

import argparse
import difflib
from typing import Any, NoReturn

from .. import __version__


class UsageError(Exception):
    """Bad usage found by the parser: the parser that found it (a subcommand's, whose usage is shown)
    and the problem; main.py says it and exits 2 (under --json, with the one JSON object too)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class Parser(argparse.ArgumentParser):
    """argparse's parser, raising UsageError rather than exiting, so that every usage error is said the
    same way, by the subcommand it belongs to."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The arguments; an unknown one is told by the subcommand it was given to, with the closest of its
    options (`--jsn`: did you mean --json?). Raises UsageError."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if not extras:
        return args
    owner = _subcommand(parser, args.command) or parser
    known = [option for action in owner._actions for option in action.option_strings]
    close = difflib.get_close_matches(extras[0].split("=", 1)[0], known, n=1, cutoff=0.7)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise UsageError(owner, f"unrecognized arguments: {' '.join(extras)}{hint}")


def _subcommand(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return None


def _logging_options(defaults: bool) -> Parser:
    """-v and --log-file, accepted before or after the subcommand. A subcommand's copies default to
    "not given" (SUPPRESS), so flags given before the subcommand are not overwritten by defaults."""
    options = Parser(add_help=False)
    unset: dict[str, Any] = {} if defaults else {"default": argparse.SUPPRESS}
    options.add_argument(
        "--log-file", help="also write the log to this file (user-only permissions)", **({"default": None} | unset)
    )
    options.add_argument(
        "-v", "--verbose", action="count", help="more logging (-vv for debug)", **({"default": 0} | unset)
    )
    return options


# `--json`'s object, the same keys for `refactor`, `refactor --each` and `apply` (docs/cli.md, "--json").
JSON_HELP = (
    'print one JSON object, the same keys for every outcome and kind (a usage error too): {"kind", "outcome", '
    '"reason", "new_text", "answer" (a refused answer), "answer_file" (where it was kept), "repaired", "error" '
    '(what the check found), "stats", "targets" (each definition\'s record), "totals", "changes" (each change, its '
    "label and, with --review, whether it was kept)} (docs/cli.md)"
)


def _request_options(parser: argparse.ArgumentParser, written: str) -> None:
    """The options every kind of request takes (`refactor`, `refactor --each`, `apply`)."""
    parser.add_argument("--backend", help="a backend name from the config (default: default_backend)")
    parser.add_argument("--no-prediction", action="store_true", help="do not send the prediction")
    parser.add_argument(
        "--edit-format",
        choices=("auto", "region", "hunks"),
        help=f"region: the model writes {written}; hunks: SEARCH/REPLACE blocks; auto (default: the config's)",
    )
    parser.add_argument("--config", help="the user config file (default: $REFACTOR_LSP_CONFIG or XDG)")
    parser.add_argument("--write", action="store_true", help="rewrite the file instead of printing a diff")
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    parser.add_argument(
        "--review",
        action="store_true",
        help="ask about each change of the answers on the terminal, as git add -p does (y, n, a, d, q, ?); "
        "only the kept changes are written or shown, and they are checked first",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="refactor-lsp",
        description="Language server for fast, safe refactors with predicted outputs. "
        "With no subcommand it serves LSP on stdin/stdout.",
        parents=[_logging_options(defaults=True)],
    )
    parser.add_argument("--version", action="version", version=f"refactor-lsp {__version__}")
    parser.add_argument("--stdio", action="store_true", help="serve on stdio (the default; accepted for editors)")
    sub = parser.add_subparsers(dest="command")
    common = [_logging_options(defaults=False)]
    _serve_parser(sub, common)
    _refactor_parser(sub, common)
    _apply_parser(sub, common)
    _check_parser(sub, common)
    _bench_parser(sub, common)
    return parser


def _serve_parser(sub: argparse._SubParsersAction[Parser], common: list[Parser]) -> None:
    """`serve`: the language server."""
    serve = sub.add_parser("serve", help="run the language server on stdio (the default)", parents=common)
    serve.add_argument("--stdio", action="store_true", help="serve on stdio (the default; accepted for editors)")


def _refactor_parser(sub: argparse._SubParsersAction[Parser], common: list[Parser]) -> None:
    """`refactor`: one definition (a cursor, lines, the file), or `--each definition` of one file or several."""
    refactor = sub.add_parser(
        "refactor", help="rewrite part of a file and print the diff and the speed", parents=common
    )
    refactor.add_argument("path")
    refactor.add_argument(
        "more_paths", nargs="*", metavar="PATH", help="more files, with --each definition (one batch for all)"
    )
    refactor.add_argument("--instruction", "-i", required=True, help="what to do, in words")
    refactor.add_argument(
        "--each",
        choices=("definition",),
        help="the same instruction for each definition, as one batch run at once: each top-level definition of "
        "every file, or with --lines each definition those lines touch (docs/cli.md)",
    )
    refactor.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="with --each: refactors in flight at once (default: refactor.concurrency, 4)",
    )
    refactor.add_argument("--lines", help="START:END, 1-based and inclusive (default: the scope rule)")
    refactor.add_argument(
        "--at", type=int, help="a cursor line (1-based): rewrite the enclosing definition (not with --lines)"
    )
    _request_options(refactor, "the region")


def _apply_parser(sub: argparse._SubParsersAction[Parser], common: list[Parser]) -> None:
    """`apply`: a snippet merged into the definitions it names."""
    apply = sub.add_parser(
        "apply",
        help="merge a snippet (from a chat or an agent, lazy markers and all) into FILE, the definitions it names "
        "as the prediction",
        parents=common,
        description="Merge SNIPPET into FILE: the definitions it names are found in FILE and merged, each with its "
        "current text as the prediction; `# ... existing code ...` and the like keep the original there. Exit "
        "codes, as for refactor: 0 merged (or nothing to change), 1 failed, 2 usage, 3 the model's merge was refused, "
        "4 the snippet could not be placed (point at the place with --lines), 5 FILE changed meanwhile (docs/cli.md).",
    )
    apply.add_argument("path", metavar="FILE")
    apply.add_argument("snippet", metavar="SNIPPET", help="a file holding the snippet, or - to read it from stdin")
    apply.add_argument(
        "--lines",
        help="where the snippet goes when it names no definition of FILE (or one FILE has twice): START:END "
        "(1-based, inclusive) replaces those lines, N is a cursor on line N (its definition)",
    )
    _request_options(apply, "the merged definition")
    apply.add_argument(
        "--merge-with-model",
        action="store_true",
        help="ask the model to merge even a complete snippet (no lazy marker, its definitions whole), which is "
        "otherwise spliced as written, without a request",
    )


def _check_parser(sub: argparse._SubParsersAction[Parser], common: list[Parser]) -> None:
    """`check`: the config and the backend."""
    check = sub.add_parser("check", help="validate the config and reach the backend", parents=common)
    check.add_argument("--backend", help="the backend to check, by its name in the config (default: default_backend)")
    check.add_argument("--config", help="the user config file (default: $REFACTOR_LSP_CONFIG or XDG)")
    check.add_argument(
        "--settings",
        help="editor settings as JSON (the refactorLsp section), over the config files; `-` reads them from stdin "
        "(a command line is visible to other users, and settings may hold a token in `headers`)",
    )
    check.add_argument(
        "--workspace",
        metavar="FOLDER",
        help="the folder whose .refactor-lsp.toml applies, as for a file in it (default: the current folder)",
    )


def _bench_parser(sub: argparse._SubParsersAction[Parser], common: list[Parser]) -> None:
    """`bench`: the same edits with and without prediction."""
    bench = sub.add_parser("bench", help="measure the same edits with and without prediction", parents=common)
    bench.add_argument("--backend", help="the backend to measure, by its name in the config (default: default_backend)")
    bench.add_argument("--baseline-backend", help="the same model without speculative decoding (vLLM, llama.cpp)")
    bench.add_argument(
        "--kind",
        choices=("refactor", "apply"),
        default="refactor",
        help="refactor (default): each task's instruction with and without prediction; apply: each task's change "
        "as a snippet with lazy markers, merged into the definitions it names with and without prediction, and "
        "into the whole file (what an editor that rewrites the file does)",
    )
    bench.add_argument(
        "--tasks",
        help="a task folder (default: the corpus installed with refactor-lsp; benchmarks/tasks in a checkout)",
    )
    bench.add_argument("--task", action="append", help="run only these task names (repeatable)")
    bench.add_argument(
        "--repeat", type=int, default=3, help="runs of each task in each mode, alternating (default 3); medians shown"
    )
    bench.add_argument("--markdown", help="write the report as Markdown to this file")
    bench.add_argument("--json", help="write the full results as JSON to this file")
    bench.add_argument("--max-tokens", type=int, default=0, help="cap each answer (0: from the region size)")
    bench.add_argument(
        "--concurrency",
        default="1",
        metavar="N[,N...]",
        help="requests in flight at once, one level or several (1,2,4): each task runs as N identical requests "
        "together with prediction, then N without, and the report adds a row per level (default 1: one at a time)",
    )
    bench.add_argument(
        "--edit-format",
        metavar="FORMAT[,FORMAT...]",
        help="compare edit formats side by side, against each task's ideal time: region (with and without the "
        "prediction), hunks, hunks+prediction (hunks with the region sent as the prediction field all the same, "
        "for a backend that takes it), auto; one or several (region,hunks,auto). The region format without "
        "prediction always runs: the ideal is measured from it (default: the region format with and without "
        "prediction only)",
    )
    bench.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help='batch tasks (kind = "batch", run when named with --task): each runs one at a time, then N at once '
        "(default: refactor.concurrency, 4)",
    )
    bench.add_argument("--note", help="a line for the report's header (server settings it cannot read itself)")
    bench.add_argument(
        "--record-history",
        action="store_true",
        help="add every measured run to the refactor history, which the editor's and the CLI's `auto` (edit "
        "format, prediction) learn from (default: the bench leaves the history alone)",
    )
    bench.add_argument("--config", help="the user config file (default: $REFACTOR_LSP_CONFIG or XDG)")
