"""`refactor-lsp refactor FILE [FILE ...] --each definition -i TEXT`: one instruction for each
definition, as one batch (pipeline/batch.py) run at once through the one engine.

Targets: every top-level definition of each file, or with `--lines` (one file) each definition
those lines touch. A line per target on stderr as each one ends, a summary at the end; without
`--write` the diff of each file on stdout, with it each file written once, safely, with only its
targets that succeeded (a file that changed meanwhile is not written). `--json`: the per-target
records and the totals. Exit 0 only when every target succeeded (an unchanged answer is success).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from ..config.schema import Config, ConfigError
from ..files.safe_write import WriteRefused, write_file
from ..pipeline.batch import MAX_TARGETS, BatchItem, BatchRun, TargetOutcome, batch_items, shared_failure
from ..text import count_of
from .io import Exit, error, load_cli_config, may_write, parse_lines, print_diff, read_source


@dataclass(frozen=True)
class _File:
    path: Path
    text: str
    config: Config
    selection: tuple[int, int] | None  # --lines as offsets: each definition they touch; None: every one


def _usage_problem(args: argparse.Namespace, paths: list[Path]) -> str | None:
    if args.each is None:
        return "several files are one batch: add --each definition (the same instruction for each definition)"
    if args.at is not None:
        return "--at picks one definition; with --each, --lines START:END takes each definition those lines touch"
    if args.lines and len(paths) > 1:
        return "--lines names lines of one file: give one file with --lines, or drop --lines for every definition"
    if args.jobs is not None and args.jobs < 1:
        return f"--jobs must be 1 or more, not {args.jobs}"
    seen: dict[object, Path] = {}
    for path in paths:
        identity = _identity(path)
        first = seen.setdefault(identity, path)
        if first is not path:
            same = "" if first == path else f" ({first} is the same file)"
            return f"{path} is named twice{same}: each file is refactored once"
    return None


def _identity(path: Path) -> object:
    """What makes two names one file: its device and inode (hard links, symlinks, `./a.py` and `a.py`
    alike); a name that cannot be looked at is compared by its resolved path (reading it says why)."""
    try:
        found = path.stat()
    except OSError:
        return path.resolve()
    return found.st_dev, found.st_ino


def _read_files(args: argparse.Namespace, paths: list[Path]) -> list[_File]:
    """Each file with its own config (the workspace file near it). Raises ValueError or ConfigError."""
    files = []
    for path in paths:
        config = load_cli_config(args.config, path).config
        config.backend(args.backend)  # an unknown name is a usage error, before any file is read
        text = read_source(path, config.refactor.max_file_chars)
        files.append(_File(path, text, config, parse_lines(args.lines, text) if args.lines else None))
    return files


async def refactor_each(args: argparse.Namespace) -> int:
    from ..pipeline.batch_stats import batch_summary, batch_totals
    from ..pipeline.engine import Engine
    from ..pipeline.plan import RefactorRequest
    from ..scope import ScopeCache
    from ..scope.file_language import language_of
    from ..scope.targets import definitions_touched, top_level_definitions
    from ..stats.history import History

    paths = [Path(args.path), *(Path(p) for p in args.more_paths)]
    problem = _usage_problem(args, paths)
    if problem is not None:
        error(problem)
        return Exit.USAGE
    try:
        files = _read_files(args, paths)
    except (ValueError, ConfigError) as exc:
        error(str(exc))
        return Exit.USAGE
    if args.write and not may_write([file.path for file in files]):
        return Exit.FAILED
    items: list[BatchItem] = []
    for file in files:
        cache = ScopeCache()
        language = language_of(str(file.path))
        if file.selection is None:
            targets = top_level_definitions(file.text, language, cache)
        else:
            targets = definitions_touched(file.text, *file.selection, language, cache)
        if not targets:
            where = f"lines {args.lines} of {file.path}" if file.selection else str(file.path)
            error(f"{where}: no definition found ({language}); nothing to refactor there")
        request = RefactorRequest(
            path=str(file.path),
            text=file.text,
            start=0,
            end=0,
            instruction=args.instruction,
            backend=args.backend,
            prediction=False if args.no_prediction else None,
            edit_format=args.edit_format,
        )
        items += batch_items(str(file.path), targets, request, file.config, cache)
    if not items:
        return Exit.FAILED
    if len(items) > MAX_TARGETS:
        error(f"{count_of(len(items), 'definition')} is more than one batch takes ({MAX_TARGETS}); name fewer files")
        return Exit.USAGE
    jobs = args.jobs or min(file.config.refactor.concurrency for file in files)
    # The same history as a single refactor's: `auto` learns from it, and every target is added to it.
    history = History()
    engine = Engine.from_history(history.read(), try_formats=False)
    kept: dict[int, Path | None] = {}  # where each refused answer was kept, by the target's item

    def done(outcome: TargetOutcome) -> None:
        line = outcome.line()
        if outcome.outcome == "refused" and outcome.answer is not None:
            from ..files.state import keep_refused_answer

            kept[id(outcome.item)] = where = keep_refused_answer(outcome.answer, len(kept) + 1)
            line += f" (the model's answer: {where})" if where else ""
        print(line, file=sys.stderr, flush=True)

    run = BatchRun(engine, items, jobs, on_done=done)
    print(
        f"refactoring {count_of(len(items), 'definition')} in {count_of(len(files), 'file')}, "
        f"{min(run.concurrency, len(items))} at a time",
        file=sys.stderr,
        flush=True,
    )
    try:
        outcomes = await run.run()
    finally:
        await engine.close()
    by_file: dict[str, list[int]] = {}
    for index, outcome in enumerate(outcomes):
        by_file.setdefault(outcome.item.document, []).append(index)
    for file in files:
        indexes = by_file.get(str(file.path), [])
        settled = _finish_file(file, [outcomes[i] for i in indexes], args)
        for index, outcome in zip(indexes, settled, strict=True):
            outcomes[index] = outcome
    outcomes = [o.recorded(str(Path(o.item.document).resolve())) for o in outcomes]
    for outcome in outcomes:
        if outcome.stats is not None:
            history.append(outcome.stats)
    totals = batch_totals(outcomes, run.wall_ms, run.concurrency)
    failure = shared_failure(outcomes)
    if failure is not None:
        error(f"every definition failed: {failure}")
    print(batch_summary(totals), file=sys.stderr)
    if args.json:
        # As a single refactor's JSON: a refused target's answer, and the file that kept it.
        records = [
            o.to_dict() | {"answer": o.answer, "answer_file": str(kept[id(o.item)]) if kept.get(id(o.item)) else None}
            for o in outcomes
        ]
        print(json.dumps({"targets": records, "totals": totals.to_dict()}, ensure_ascii=False))
    return Exit.OK if all(o.succeeded for o in outcomes) else Exit.FAILED


def _finish_file(file: _File, outcomes: list[TargetOutcome], args: argparse.Namespace) -> list[TargetOutcome]:
    """One file's targets once its new text is written (`--write`) or shown (a diff): the edits of
    the targets that succeeded, together, on the text every prompt carried."""
    from ..formats.edits import apply_replacements

    edited = {id(o): o.result for o in outcomes if o.outcome == "edit" and o.result is not None}
    if not edited:
        return outcomes
    edits = sorted((e for result in edited.values() for e in result.edits), key=lambda e: (e.start, e.end))
    new_text = apply_replacements(file.text, edits)
    if not args.write:
        if not args.json:
            print_diff(file.path, file.text, new_text)
        return outcomes
    try:
        if read_source(file.path, file.config.refactor.max_file_chars) != file.text:
            reason = f"{file.path} changed while the refactor ran; nothing was written to it — run it again"
            return [o.settled("stale", reason) if id(o) in edited else o for o in outcomes]
        write_file(file.path, new_text.encode("utf-8"))
    except (ValueError, WriteRefused) as exc:
        return [o.settled("error", str(exc)) if id(o) in edited else o for o in outcomes]
    print(f"wrote {file.path} ({count_of(len(edited), 'definition')})", file=sys.stderr)
    return [o.settled("applied") if id(o) in edited else o for o in outcomes]
