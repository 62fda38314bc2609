"""`refactor-lsp apply FILE SNIPPET`: merge code written elsewhere (a chat, an agent) into FILE, with
the definitions it names as the prediction (pipeline/apply.py).

SNIPPET is a path, or `-` for stdin. Without `--write` the diff is printed; with it the file is
written once, safely, when every part of the snippet merged (a snippet is applied whole). One line
on stderr says where each part goes, one per part as it ends, the speed at the end. `--json` prints
one object of the shape `refactor --json` prints. Exit codes, one per outcome (docs/cli.md):
0 merged (or nothing to change), 1 failed (the backend, a file), 2 usage, 3 the model's merge was
refused, 4 the snippet could not be placed (point at the place with --lines), 5 the file changed
while merging.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..config.schema import ConfigError
from ..files.safe_write import WriteRefused, write_file
from ..formats.edits import apply_replacements
from ..pipeline.batch import BatchRun, TargetOutcome
from ..stats.history import History
from ..text import count_of
from .io import Exit, error, load_cli_config, may_write, parse_lines, print_diff, read_source


def _read_snippet(spec: str, limit: int) -> str:
    """The snippet from a file, or from stdin for `-`: UTF-8, at most `limit` characters. Raises ValueError."""
    from ..files.safe_read import ReadRefused, read_stream

    if spec != "-":
        return read_source(Path(spec), limit)
    over = f"the snippet on stdin is over {limit:,} characters (refactor.max_region_chars)"
    try:
        data = read_stream(sys.stdin.buffer, 4 * limit)  # UTF-8 takes at most 4 bytes a character
    except ReadRefused:
        raise ValueError(over) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the snippet on stdin is not UTF-8 text (byte {exc.start})") from None
    if len(text) > limit:
        raise ValueError(over)
    return text


def _selection(spec: str | None, text: str) -> tuple[int, int] | None:
    """--lines START:END as a selection; --lines N as a cursor on line N; None without it."""
    if spec is None:
        return None
    start, end = parse_lines(spec, text)
    return (start, start) if ":" not in spec else (start, end)


def _say(args: argparse.Namespace, outcome: str, reason: str, code: int, **extra: Any) -> int:
    error(reason)
    if args.json:
        record = {"outcome": outcome, "reason": reason, "answer": None, "answer_file": None, "stats": None}
        print(json.dumps(record | extra, ensure_ascii=False))
    return code


async def apply_snippet(args: argparse.Namespace) -> int:
    from ..pipeline.apply import NotPlaced, apply_items, settle
    from ..pipeline.engine import Engine
    from ..pipeline.plan import RefactorError, RefactorRequest
    from ..scope import ScopeCache

    path = Path(args.path)
    try:
        config = load_cli_config(args.config, path).config
        text = read_source(path, config.refactor.max_file_chars)
        snippet = _read_snippet(args.snippet, config.refactor.max_region_chars)
        selection = _selection(args.lines, text)
    except (ValueError, ConfigError) as exc:
        error(str(exc))
        return Exit.USAGE
    if args.write and not may_write([path]):
        return Exit.FAILED
    request = RefactorRequest(
        path=str(path),
        text=text,
        start=0,
        end=0,
        backend=args.backend,
        prediction=False if args.no_prediction else None,
        edit_format=args.edit_format,
    )
    try:
        items = apply_items(
            str(path), request, snippet, selection, config, ScopeCache(), merge_with_model=args.merge_with_model
        )
    except NotPlaced as exc:
        return _say(args, "not placed", str(exc), Exit.NOT_PLACED)
    except RefactorError as exc:
        return _say(args, "error", str(exc), Exit.USAGE)
    where = "; ".join(item.target.describe() for item in items) + f" of {path}"
    if all(item.splice is not None for item in items):
        line = f"splicing into {where}: the snippet is complete (no lazy marker), so no model is asked"
    else:
        line = f"merging into {where}"
    print(line, file=sys.stderr, flush=True)
    history = History()
    engine = Engine.from_history(history.read(), try_formats=False)
    run = BatchRun(engine, items, config.refactor.concurrency)
    try:
        outcomes = await run.run()
    finally:
        await engine.close()
    settled = settle(outcomes)
    target = str(path.resolve())
    if not settled.ready:
        return _failed(args, settled.outcomes, settled.reason or "", history, target, run)
    edits = sorted((e for o in settled.changed if o.result for e in o.result.edits), key=lambda e: (e.start, e.end))
    new_text = apply_replacements(text, edits)
    final = settled.outcomes
    if args.write and edits:
        try:
            if read_source(path, config.refactor.max_file_chars) != text:
                stale = [o.settled("stale", "the file changed") if o.outcome == "edit" else o for o in final]
                _recorded(history, stale, target)
                reason = f"{path} changed while the snippet was merged; nothing was written — run it again"
                return _say(args, "stale", reason, Exit.STALE)
            write_file(path, new_text.encode("utf-8"))
        except (ValueError, WriteRefused) as exc:
            _recorded(history, [o.settled("error", str(exc)) if o.outcome == "edit" else o for o in final], target)
            return _say(args, "error", str(exc), Exit.FAILED)
        final = [o.settled("applied") if o.outcome == "edit" else o for o in final]
        print(f"wrote {path} ({count_of(len(settled.changed), 'definition')})", file=sys.stderr)
    elif edits and not args.json:
        print_diff(path, text, new_text)
    final = _recorded(history, final, target)
    stats = _report(final, run, target)
    if not edits:
        print("no changes: the file already holds the snippet's code", file=sys.stderr)
    if args.json:
        outcome = "unchanged" if not edits else "applied" if args.write else "edit"
        record = {
            "outcome": outcome,
            "merged_by": settled.merged_by,
            "new_text": new_text,
            "stats": stats,
            "targets": [o.to_dict() for o in final],
        }
        print(json.dumps(record, ensure_ascii=False))
    return Exit.OK


def _recorded(history: History, outcomes: list[TargetOutcome], target: str) -> list[TargetOutcome]:
    """Each part's stats with its outcome (applied, shown as a diff, or not), added to the history."""
    recorded = [o.recorded(target) for o in outcomes]
    for outcome in recorded:
        if outcome.stats is not None:
            history.append(outcome.stats)
    return recorded


def _report(outcomes: list[TargetOutcome], run: BatchRun, target: str) -> dict[str, Any] | None:
    """The speed line (and the notes) on stderr; the stats record `--json` carries: one part's own, or
    for several the batch's record (its figures, and each part's)."""
    from ..pipeline.batch_stats import batch_record, batch_summary, batch_totals
    from ..stats.words import summary

    if len(outcomes) == 1:
        stats = outcomes[0].stats
        if stats is None:
            return None
        print(summary(stats), file=sys.stderr)
        if stats.notes:
            print("notes: " + "; ".join(stats.notes), file=sys.stderr)
        return stats.to_dict()
    totals = batch_totals(outcomes, run.wall_ms, run.concurrency)
    line = batch_summary(totals)
    print(line, file=sys.stderr)
    return batch_record(target, outcomes, totals, line)


def _failed(
    args: argparse.Namespace,
    outcomes: list[TargetOutcome],
    reason: str,
    history: History,
    target: str,
    run: BatchRun,
) -> int:
    """Nothing written: the reason, the model's answer kept where refused answers are, exit 3 when an
    answer came and was refused, 1 when none came."""
    from ..files.state import keep_refused_answer

    recorded = _recorded(history, outcomes, target)
    answered = next((o for o in recorded if o.answer is not None), None)
    kept = keep_refused_answer(answered.answer) if answered is not None and answered.answer is not None else None
    error(reason + (f" (the model's answer: {kept})" if kept else ""))
    stats = _report(recorded, run, target)
    if args.json:
        record = {
            "outcome": "refused" if answered is not None else "error",
            "reason": reason,
            "answer": answered.answer if answered is not None else None,
            "answer_file": str(kept) if kept else None,
            "stats": stats,
            "targets": [o.to_dict() for o in recorded],
        }
        print(json.dumps(record, ensure_ascii=False))
    return Exit.REFUSED if answered is not None else Exit.FAILED
