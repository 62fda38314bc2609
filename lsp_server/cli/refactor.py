"""`refactor`, `refactor --each definition` and `apply`: one command function for every kind of request.

Each goes the same way as in the server (pipeline/request.py, outcome.py): the files read and the
usage checked before anything is sent, the request's targets found, one run through the runner (a
line on stderr per target as it ends, when there are several), the targets settled, each file
written once (`--write`, refused when it changed meanwhile) or its diff printed, and the one outcome
recorded: the history, the refused answers kept, the speed line on stderr, `--json`'s one object
(the same keys for every kind, also for a usage error) and the exit code (io.Exit: the same table
for every kind).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.schema import ConfigError, ScopeMode
from ..text import count_of
from .ask import Reviewer, reviewed
from .io import (
    Exit,
    error,
    load_cli_config,
    parse_lines,
    print_json,
    read_source,
    read_stdin_text,
    write_refusal,
)
from .write import File, deliver, held, identity

if TYPE_CHECKING:
    from ..pipeline.engine import Engine
    from ..pipeline.outcome import Ended
    from ..pipeline.request import Request, RequestKind, Source
    from ..pipeline.runner import TargetOutcome
    from ..stats.history import History


class Usage(ValueError):
    """Bad usage, found before anything is sent: exit 2, and under --json one object that says so."""


def request_kind(args: argparse.Namespace) -> RequestKind:
    if args.command == "apply":
        return "apply"
    return "each" if args.each or args.more_paths else "refactor"


async def run_request(args: argparse.Namespace) -> int:
    """The command for `refactor`, `refactor --each definition` and `apply`: its exit code."""
    from ..pipeline.engine import Engine
    from ..stats.history import History

    kind = request_kind(args)
    try:
        files, sources = _sources(args, kind)
        reviewer = Reviewer.open() if args.review else None
    except (Usage, ValueError, ConfigError) as exc:
        return _refused(args, kind, "usage", str(exc), Exit.USAGE)
    # The same history as the server's: read once, `auto` (edit format, prediction) learns from it, and
    # every target is added to it. A one-off command does not try the other format (formats/choice.py).
    history = History()
    engine = Engine.from_history(history.read(), try_formats=False)
    try:
        try:
            request = _targets(args, kind, sources, engine)
        except _NoTargetsError as exc:
            return _refused(args, kind, exc.outcome, str(exc), exc.code)
        refusal = write_refusal([file.path for file in files]) if args.write else None
        if refusal is not None:
            return _refused(args, kind, "error", refusal, Exit.FAILED)
        for note in request.notes:
            error(note)
        _announce(args, request, files)
        ended, new_texts, changes = await _run(args, request, files, engine, history, reviewer)
    except asyncio.CancelledError:
        # Ctrl-C (asyncio.run cancels this task): it lands at an await, and every file is written after the
        # last one, so nothing was. Said once the engine is closed: a second Ctrl-C meanwhile is main's.
        interrupted = True
    else:
        interrupted = False
    finally:
        await engine.close()
        if reviewer is not None:
            reviewer.close()
    if interrupted:
        return _refused(args, kind, "interrupted", INTERRUPTED, Exit.INTERRUPTED)
    return _report(args, ended, files, new_texts, changes)


INTERRUPTED = "interrupted (Ctrl-C); nothing was written"


def _sources(args: argparse.Namespace, kind: RequestKind) -> tuple[list[File], list[Source]]:
    """The files read, each with its config and the request on it. Raises Usage, ValueError, ConfigError."""
    from ..pipeline.plan import RefactorRequest
    from ..pipeline.request import Source
    from ..regions import ScopeCache

    paths = [Path(args.path), *(Path(p) for p in getattr(args, "more_paths", []) or [])]
    _check_usage(args, kind, paths)
    files, sources = [], []
    for path in paths:
        config = load_cli_config(args.config, path).config
        config.backend(args.backend)  # an unknown name is a usage error, before the file is read
        target = os.path.realpath(path)
        text = read_source(path, config.refactor.max_file_chars)
        file = File(path, text, config, target)
        start, end, scope, selection = _where(args, kind, file)
        snippet = _snippet(args.snippet, config.refactor.max_region_chars) if kind == "apply" else None
        request = RefactorRequest(
            path=str(path),
            text=text,
            start=start,
            end=end,
            instruction=getattr(args, "instruction", None),
            backend=args.backend,
            prediction=False if args.no_prediction else None,
            scope=scope,
            edit_format=args.edit_format,
            snippet=snippet,
            merge_with_model=getattr(args, "merge_with_model", False),
        )
        files.append(file)
        sources.append(Source(str(path), request, config, ScopeCache(), selection))
    return files, sources


def _check_usage(args: argparse.Namespace, kind: RequestKind, paths: list[Path]) -> None:
    """What the flags cannot mean together. Raises Usage."""
    if kind == "apply":
        return
    if not args.instruction.strip():
        raise Usage('-i/--instruction is empty: say what to do in words, e.g. -i "add type hints"')
    if kind == "refactor":
        if args.at is not None and args.lines:
            raise Usage(
                "--at and --lines do not go together: --lines START:END rewrites those lines, --at LINE the "
                "definition around that line"
            )
        return
    if args.each is None:
        raise Usage("several files are one batch: add --each definition (the same instruction for each definition)")
    if args.at is not None:
        raise Usage("--at picks one definition; with --each, --lines START:END takes each definition those lines touch")
    if args.lines and len(paths) > 1:
        raise Usage("--lines names lines of one file: give one file with --lines, or drop --lines for every definition")
    if args.jobs is not None and args.jobs < 1:
        raise Usage(f"--jobs must be 1 or more, not {args.jobs}")
    seen: dict[object, Path] = {}
    for path in paths:
        first = seen.setdefault(identity(path), path)
        if first is not path:
            same = "" if first == path else f" ({first} is the same file)"
            raise Usage(f"{path} is named twice{same}: each file is refactored once")


def _where(
    args: argparse.Namespace, kind: RequestKind, file: File
) -> tuple[int, int, ScopeMode | None, tuple[int, int] | None]:
    """(start, end, scope, selection) of the request on `file`: --lines, --at, or neither. Raises ValueError."""
    from ..regions import line_span, split_lines

    if args.lines:
        start, end = parse_lines(args.lines, file.text)
        if kind == "apply" and ":" not in args.lines:
            return 0, 0, None, (start, start)  # --lines N: a cursor on line N
        return start, end, "selection", (start, end)
    if kind == "refactor" and args.at is not None:
        count = len(split_lines(file.text))
        if not 1 <= args.at <= max(count, 1):
            raise ValueError(f"--at {args.at} is outside the file's {count_of(count, 'line')}")
        start, _ = line_span(file.text, args.at - 1, args.at - 1)
        return start, start, "auto", None
    if kind == "refactor" and file.config.refactor.scope == "auto":
        return 0, 0, "file", None  # no selection and no cursor: the whole file
    return 0, 0, None, None


class _NoTargetsError(Exception):
    def __init__(self, message: str, outcome: str, code: int) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.code = code


# A request with nothing to run, by its reason: exit code.
_NO_TARGETS_EXIT = {"not placed": Exit.NOT_PLACED, "usage": Exit.USAGE}


def _targets(args: argparse.Namespace, kind: RequestKind, sources: list[Source], engine: Engine) -> Request:
    """The request's targets (pipeline/request.py's KINDS). Raises _NoTargetsError."""
    from ..pipeline.request import KINDS, NoTargets

    try:
        return KINDS[kind].find(engine, sources)
    except NoTargets as exc:
        raise _NoTargetsError(str(exc), exc.outcome, _NO_TARGETS_EXIT.get(exc.outcome, Exit.FAILED)) from None


def _snippet(spec: str, limit: int) -> str:
    """`apply`'s SNIPPET: a file, or `-` for stdin, UTF-8 of at most `limit` characters. Raises ValueError."""
    text = (
        read_stdin_text(limit, "the snippet on stdin", "refactor.max_region_chars")
        if spec == "-"
        else read_source(Path(spec), limit)
    )
    if not text.lstrip("\ufeff").strip():  # nothing to place: a usage error, not a snippet placed nowhere
        raise ValueError(f"the snippet ({'stdin' if spec == '-' else spec}) is empty: give the code to apply")
    return text


def _announce(args: argparse.Namespace, request: Request, files: list[File]) -> None:
    """What is about to run, on stderr before the wait: a whole file or an oversized region, the
    definitions a snippet goes to, how many definitions run at once."""
    if request.kind == "refactor":
        plan = request.items[0].plan
        if plan is not None and plan.region.oversized_note():  # said whatever the output: --json too
            region = plan.region
            where = ""
            if args.at is not None and region.kind == "file":
                around = region.definition
                where = (
                    f" (--at {args.at} is in {around.describe()}, which spans the whole file)"
                    if around is not None and around.line_count >= region.lines
                    else f" (--at {args.at} is outside every definition)"
                )
            error(f"rewriting {region.describe()}{where}; --lines START:END rewrites less")
    elif request.kind == "apply":
        where = f"{request.describe()} of {files[0].path}"
        if all(item.splice is not None for item in request.items):
            line = f"splicing into {where}: the snippet is complete (no lazy marker), so no model is asked"
        else:
            line = f"merging into {where}"
        print(line, file=sys.stderr, flush=True)
    else:
        jobs = args.jobs or min(file.config.refactor.concurrency for file in files)
        at_once = min(jobs, len(request.items))
        print(
            f"refactoring {count_of(len(request.items), 'definition')} in {count_of(len(files), 'file')}, "
            f"{at_once} at a time",
            file=sys.stderr,
            flush=True,
        )


async def _run(
    args: argparse.Namespace,
    request: Request,
    files: list[File],
    engine: Engine,
    history: History,
    reviewer: Reviewer | None,
) -> tuple[Ended, dict[Path, str], list[dict[str, Any]]]:
    """The request through the runner, settled, reviewed (`--review`), each file written or shown,
    recorded; and every change of the answers, for `--json`."""
    from ..pipeline.outcome import end_request, settle
    from ..pipeline.runner import Runner

    jobs = getattr(args, "jobs", None) or min(file.config.refactor.concurrency for file in files)

    def done(outcome: TargetOutcome) -> None:
        print(outcome.line(), file=sys.stderr, flush=True)

    run = Runner(engine, request.items, jobs, on_done=None if request.one else done)
    settled = settle(request, await run.run())
    settled, changes = await reviewed(settled, reviewer)
    outcomes = list(settled.outcomes)
    new_texts: dict[Path, str] = {}
    by_document = settled.by_document()
    with contextlib.ExitStack() as locks:
        written = [file for file in files if by_document.get(str(file.path))] if args.write else []
        refused = held(locks, written)
        for file in files:
            indexes = by_document.get(str(file.path), [])
            new_text, ended_as, reason = deliver(
                file, settled, indexes, args.write, not args.json, request.kind != "refactor", refused.get(file.path)
            )
            new_texts[file.path] = new_text
            for index in indexes:
                outcomes[index] = outcomes[index].ended(ended_as, reason)

    def uri_of(document: str) -> str:
        return str(Path(document).resolve())

    ended = end_request(request, settled, outcomes, run.wall_ms, run.concurrency, history, uri_of)
    return ended, new_texts, changes


def _report(
    args: argparse.Namespace, ended: Ended, files: list[File], new_texts: dict[Path, str], changes: list[dict[str, Any]]
) -> int:
    """The outcome on stderr (the failure, the speed line, the notes) and `--json`'s object; the exit code."""
    request = ended.request
    one = ended.one
    if ended.failure is not None:
        lead = "" if request.one or request.whole else "every definition failed: "
        error(lead + ended.refusal())
    elif one is not None and one.outcome in ("stale", "error"):  # the file, not the model: its one line
        error(one.reason or "nothing was written")
        return _json_and_exit(args, ended, files, new_texts, changes)
    elif one is not None and one.outcome == "unchanged":
        unchanged = (
            "the file already holds the snippet's code"
            if request.kind == "apply"
            else ("the model's answer equals the region")
        )
        print(f"no changes: {unchanged}", file=sys.stderr)
    line = ended.message() if not request.one else ended.line()
    if line:
        print(line, file=sys.stderr)
    stats = ended.stats
    if stats is not None and stats.notes:  # what the line cannot say: a retry, a fallback, a prompt fitted
        print("notes: " + "; ".join(stats.notes), file=sys.stderr)
    return _json_and_exit(args, ended, files, new_texts, changes)


def _json_and_exit(
    args: argparse.Namespace, ended: Ended, files: list[File], new_texts: dict[Path, str], changes: list[dict[str, Any]]
) -> int:
    if args.json:
        one_file = files[0] if len(files) == 1 else None
        new_text = new_texts.get(one_file.path) if one_file is not None and ended.failure is None else None
        uri = str(one_file.path.resolve()) if one_file is not None else ""
        print_json(ended.to_json(uri, new_text) | {"changes": changes})
    return exit_code(ended)


def exit_code(ended: Ended) -> int:
    """0 when every target succeeded; 3 when every failure is a refused answer, 5 when every failure is a
    file that changed meanwhile; 1 otherwise (io.Exit)."""
    from ..pipeline.outcome import WHOLE_FAILED
    from ..pipeline.review import DROPPED

    if ended.succeeded:
        return Exit.OK
    failures = {o.outcome for o in ended.outcomes if not o.succeeded and o.reason not in (WHOLE_FAILED, DROPPED)}
    if not failures and ended.failure is None:  # what is left undone, you dropped in the review
        return Exit.OK
    if failures == {"refused"}:
        return Exit.REFUSED
    if failures == {"stale"}:
        return Exit.STALE
    return Exit.FAILED


def _refused(args: argparse.Namespace, kind: RequestKind, outcome: str, reason: str, code: int) -> int:
    """Nothing was sent: one line on stderr, and under --json one object of the same keys as any outcome's."""
    from ..pipeline.outcome import refused_json

    error(reason)
    if getattr(args, "json", False):
        print_json(refused_json(kind, outcome, reason))
    return code
