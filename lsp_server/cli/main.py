"""Command line: the language server (default), `refactor`, `apply` (apply.py) and `check`; `bench` is bench.py's.

Every subcommand drives the same pipeline as the server (lsp_server.pipeline.plan).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.schema import BackendConfig, Config, ConfigError, ScopeMode
from ..files.safe_write import WriteRefused, write_file
from ..text import count_of, listed
from .io import Exit, error, load_cli_config, may_write, parse_lines, print_diff, read_source, stdout_closed

if TYPE_CHECKING:
    from ..backend.proposer_probe import ProposerFound


async def _refactor(args: argparse.Namespace) -> int:
    from ..files.state import keep_refused_answer
    from ..pipeline.engine import Engine
    from ..pipeline.plan import RefactorError, RefactorRequest
    from ..scope import line_span, split_lines
    from ..stats.history import History
    from ..stats.words import summary

    path = Path(args.path)
    scope: ScopeMode | None
    if args.at is not None and args.lines:
        error(
            "--at and --lines do not go together: --lines START:END rewrites those lines, --at LINE the definition "
            "around that line"
        )
        return Exit.USAGE
    try:
        loaded = load_cli_config(args.config, path)
        loaded.config.backend(args.backend)  # an unknown name is a usage error, before the file is read
        text = read_source(path, loaded.config.refactor.max_file_chars)
        if args.lines:
            start, end = parse_lines(args.lines, text)
            scope = "selection"
        elif args.at is not None:
            count = len(split_lines(text))
            if not 1 <= args.at <= max(count, 1):
                raise ValueError(f"--at {args.at} is outside the file's {count_of(count, 'line')}")
            start, _ = line_span(text, args.at - 1, args.at - 1)
            end, scope = start, "auto"
        else:
            start = end = 0
            scope = None
    except (ValueError, ConfigError) as exc:
        error(str(exc))
        return Exit.USAGE
    if args.write and not may_write([path]):
        return Exit.FAILED
    config = loaded.config
    if scope is None and config.refactor.scope == "auto":
        scope = "file"  # no selection and no cursor: the whole file
    request = RefactorRequest(
        path=str(path),
        text=text,
        start=start,
        end=end,
        instruction=args.instruction,
        backend=args.backend,
        prediction=False if args.no_prediction else None,
        scope=scope,
        edit_format=args.edit_format,
    )
    # The same history as the server's: read once, `auto` (edit format, prediction) learns from it, and
    # this refactor is added to it. A one-off command does not try the other format (formats/choice.py).
    history = History()
    engine = Engine.from_history(history.read(), try_formats=False)
    target = str(path.resolve())
    try:
        plan = engine.plan(request, config)
        if plan.region.oversized_note():  # said before the wait, whatever the output: --json too
            outside = args.at is not None and plan.region.kind == "file"
            where = f" (--at {args.at} is outside every definition)" if outside else ""
            error(f"rewriting {plan.region.describe()}{where}; --lines START:END rewrites less")
        result = await engine.run(plan)
    except RefactorError as exc:
        kept = keep_refused_answer(exc.output) if exc.output is not None else None
        error(str(exc) + (f" (the model's answer: {kept})" if kept else ""))
        if exc.stats is not None:
            history.append(exc.stats.with_outcome(target, applied=False))
            print(summary(exc.stats), file=sys.stderr)
        if args.json:
            outcome = {
                "outcome": "refused" if exc.output is not None else "error",  # refused: an answer came, unusable
                "reason": str(exc),
                "answer": exc.output,
                "answer_file": str(kept) if kept else None,
                "repaired": exc.stats.repaired if exc.stats is not None else None,  # False: asked, still broken
                # What the check before the edit found in the answer it refused: its line and words.
                "error": dataclasses.asdict(exc.problem) if exc.problem is not None else None,
                "stats": exc.stats.to_dict() if exc.stats is not None else None,
            }
            print(json.dumps(outcome, ensure_ascii=False))
        return Exit.FAILED
    finally:
        await engine.close()
    new_text = result.new_text
    if args.write and result.edits:
        try:
            if read_source(path, config.refactor.max_file_chars) != text:
                error(f"{path} changed while the refactor ran; nothing was written — run it again")
                history.append(result.stats.with_outcome(target, applied=False))
                return Exit.FAILED
            write_file(path, new_text.encode("utf-8"))
        except (ValueError, WriteRefused) as exc:
            error(str(exc))
            history.append(result.stats.with_outcome(target, applied=False))
            return Exit.FAILED
        print(f"wrote {path}", file=sys.stderr)
    # Shown as a diff, the edit is the user's to apply: not known (None), as an editor that never confirms.
    applied = (True if args.write else None) if result.edits else False
    stats = result.stats.with_outcome(target, applied=applied)
    history.append(stats)
    if args.json:
        done = ("applied" if args.write else "edit") if result.edits else "unchanged"
        outcome = {"outcome": done, "new_text": new_text, "repaired": stats.repaired, "stats": stats.to_dict()}
        print(json.dumps(outcome, ensure_ascii=False))
    elif not args.write:
        print_diff(path, text, new_text)
    if not result.edits:
        print("no changes: the model's answer equals the region", file=sys.stderr)
    print(summary(stats), file=sys.stderr)
    if stats.notes:  # what the line cannot say: a retry, a fallback, a prompt fitted to the window
        print("notes: " + "; ".join(stats.notes), file=sys.stderr)
    return Exit.OK


async def _check(args: argparse.Namespace) -> int:
    from ..backend.errors import BackendError, PredictionUnsupported
    from ..backend.stream import StreamRequest
    from ..config.load import api_key
    from ..pipeline.engine import Engine

    try:
        settings = args.settings
        if settings == "-":  # from setup(), with its headers: never on a command line
            from ..config.layers import MAX_CONFIG_BYTES

            settings = sys.stdin.read(MAX_CONFIG_BYTES + 1)
            if len(settings) > MAX_CONFIG_BYTES:
                raise ConfigError("--settings -", "refactorLsp", f"is over {MAX_CONFIG_BYTES:,} characters")
        loaded = load_cli_config(args.config, Path(args.workspace) if args.workspace else Path.cwd(), settings)
        backend = loaded.config.backend(args.backend)
        api_key(backend)
    except ConfigError as exc:
        error(str(exc))
        return Exit.USAGE
    config: Config = loaded.config
    failures = loaded.failures
    if failures:
        count = "1 setting" if len(failures) == 1 else f"{len(failures)} settings"
        print(f"config: FAIL, {count} not applied as written (above); fix them, then run check again")
    else:
        print("config: ok" + (", with the advice above" if loaded.problems else ""))
    print(f"backend: {backend.name} ({backend.type}) at {backend.base_url}, model {backend.model}")
    engine = Engine()
    mode = engine.prediction_mode(backend)
    try:
        models = await engine.list_models(backend, config.refactor)
        if models and backend.model not in models:
            print(f"FAIL: the server has no model '{backend.model}'; it offers: {listed(models, most=20)}")
            print(f"  fix: set backends.{backend.name}.model to one of those")
            return Exit.FAILED
        print(f"models: {listed(models, most=20) or '(none listed)'}")
        request = StreamRequest(
            messages=[{"role": "user", "content": "Reply with the word: ok"}],
            prediction="ok" if mode == "field" else None,
            max_tokens=1,
            temperature=0.0,
        )
        completion = await engine.stream(backend, config.refactor, request)
        print(f"completion: ok ({completion.latency_ms:.0f} ms for 1 token)")
        window = await engine.backend_memory.probe_now(backend)
        print(
            f"context window: {window.describe()}"
            if window is not None
            else "context window: unknown: the backend does not report it (a prompt too long for it is fitted "
            "and sent again after its first refusal)"
        )
        found = await engine.proposer_found(backend, config.refactor) if mode == "prompt" else None
    except PredictionUnsupported as exc:
        print(f"prediction: NOT accepted by this backend ({exc}); refactors will retry without it")
        print(f'  fix: set backends.{backend.name}.prediction = "never" to skip that retry')
        return Exit.USAGE if failures else Exit.OK
    except BackendError as exc:
        print(f"FAIL: {exc}")
        return Exit.FAILED
    finally:
        await engine.close()
    if mode == "field":
        print("prediction: accepted (the `prediction` field is sent)")
    elif mode == "prompt":
        print(f"prediction: in the prompt; {await _speculation(backend)}")
        if found is not None:
            print(f"proposer: {_proposer_words(found)}")
    else:
        print("prediction: off")
    return Exit.USAGE if failures else Exit.OK  # a config with problems is a failed check


def _proposer_words(found: ProposerFound) -> str:
    """What `check` says of refactor-lsp's proposer on a vLLM server (backend/proposer_probe.py)."""
    if found.present:
        return f"yes: {found.detail}; refactors send the prediction in `vllm_xargs`"
    if found.present is None:
        return f"unknown: {found.detail}; refactors send the prediction in the prompt only"
    return (
        f"no: {found.detail}; to draft from the prediction, serve vLLM with refactor-lsp's proposer "
        '(README, "Your own vLLM")'
    )


async def _speculation(backend: BackendConfig) -> str:
    """Whether a local server drafts from the prompt, as far as it tells (vLLM's /metrics); never assumed."""
    if backend.type != "vllm":
        return (
            "whether this server drafts from it (llama.cpp: a draft model or prompt lookup) is not reported "
            "before a request; each refactor's stats say what it drafted"
        )
    from ..bench.probes import describe_server

    info = await describe_server(backend)
    if info.speculative_decoding is None:
        return (
            f"whether the server speculates is not known ({info.metrics_url or 'no /metrics URL'} did not answer); "
            "each refactor's stats say what it drafted"
        )
    if info.speculative_decoding.startswith("on"):
        return f"the server drafts from it by speculative decoding {info.speculative_decoding.removeprefix('on ')}"
    return (
        "but this server does not speculate (no speculative-decoding counters on its /metrics): refactors run at "
        "its plain speed; start vLLM with --speculative-config (e.g. n-gram prompt lookup) for the speed-up"
    )


def _serve(args: argparse.Namespace) -> int:
    from ..server.startup import fast_imports

    with fast_imports():  # lsprotocol's classes without compiling their methods again
        from ..server.handlers import serve

    serve(log_file=args.log_file, verbose=args.verbose)
    return Exit.OK


def main(argv: list[str] | None = None) -> int:
    from .args import build_parser

    args = build_parser().parse_args(argv)
    try:
        if args.command in (None, "serve"):
            return _serve(args)
        from ..logs import configure_cli_logging

        configure_cli_logging(args.verbose, args.log_file)
        if args.command == "refactor" and not args.instruction.strip():
            error('-i/--instruction is empty: say what to do in words, e.g. -i "add type hints"')
            return Exit.USAGE
        if args.command == "refactor" and (args.each or args.more_paths):
            from .batch import refactor_each

            return asyncio.run(refactor_each(args))
        if args.command == "refactor":
            return asyncio.run(_refactor(args))
        if args.command == "apply":
            from .apply import apply_snippet

            return asyncio.run(apply_snippet(args))
        if args.command == "check":
            return asyncio.run(_check(args))
        if args.command == "bench":
            from .bench import run_bench

            return asyncio.run(run_bench(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return stdout_closed()
    return Exit.USAGE


if __name__ == "__main__":
    sys.exit(main())
