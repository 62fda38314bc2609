"""Command line: the language server (default), `refactor`, `check` and `bench`.

Every subcommand drives the same pipeline as the server (lsp_server.refactor).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import sys
from pathlib import Path

from .config import LoadedConfig, load_config
from .config_layers import editor_layer, user_layer
from .config_schema import WORKSPACE_FILE, BackendConfig, Config, ConfigError, ScopeMode
from .safe_write import WriteRefused, writable_target, write_file
from .text import count_of

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _error(message: str) -> None:
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
        _error(problem)
    return loaded


def _parse_lines(spec: str, text: str) -> tuple[int, int]:
    from .scope import line_span, split_lines

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


def _read_source(path: Path, max_chars: int) -> str:
    """The file to refactor: a regular UTF-8 file of at most `max_chars` characters (refactor.max_file_chars)."""
    from .safe_read import read_regular_file

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


async def _refactor(args: argparse.Namespace) -> int:
    from .edit_format import FormatHistory
    from .engine import Engine
    from .history import History
    from .refactor import RefactorError, RefactorRequest
    from .scope import line_span, split_lines
    from .state_files import keep_refused_answer
    from .stats_text import summary

    path = Path(args.path)
    scope: ScopeMode | None
    try:
        loaded = load_cli_config(args.config, path)
        text = _read_source(path, loaded.config.refactor.max_file_chars)
        if args.lines:
            start, end = _parse_lines(args.lines, text)
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
        _error(str(exc))
        return EXIT_USAGE
    if args.write:
        try:
            writable_target(path)  # refuse before the model runs, not after
        except WriteRefused as exc:
            _error(str(exc))
            return EXIT_FAILED
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
    # `auto` learns from the server's history; a CLI refactor is not written to it, so it never tries
    # the other format (it would be the first try every time).
    engine = Engine(FormatHistory(tries=False).learn(History().read()))
    try:
        result = await engine.refactor(request, config)
    except RefactorError as exc:
        kept = keep_refused_answer(exc.output) if exc.output is not None else None
        _error(str(exc) + (f" (the model's answer: {kept})" if kept else ""))
        if exc.stats is not None:
            print(summary(exc.stats), file=sys.stderr)
        if args.json:
            outcome = {
                "outcome": "refused" if exc.output is not None else "error",  # refused: an answer came, unusable
                "reason": str(exc),
                "answer": exc.output,
                "answer_file": str(kept) if kept else None,
                "stats": exc.stats.to_dict() if exc.stats is not None else None,
            }
            print(json.dumps(outcome, ensure_ascii=False))
        return EXIT_FAILED
    finally:
        await engine.close()
    new_text = result.new_text
    if args.write and result.edits:
        try:
            if _read_source(path, config.refactor.max_file_chars) != text:
                _error(f"{path} changed while the refactor ran; nothing was written — run it again")
                return EXIT_FAILED
            write_file(path, new_text.encode("utf-8"))
        except (ValueError, WriteRefused) as exc:
            _error(str(exc))
            return EXIT_FAILED
        print(f"wrote {path}", file=sys.stderr)
    stats = result.stats.with_outcome(str(path.resolve()), applied=bool(result.edits) and args.write)
    if args.json:
        done = ("applied" if args.write else "edit") if result.edits else "unchanged"
        print(json.dumps({"outcome": done, "new_text": new_text, "stats": stats.to_dict()}, ensure_ascii=False))
    elif not args.write:
        before, after = (str(path), str(path)) if path.is_absolute() else (f"a/{path}", f"b/{path}")
        diff = difflib.unified_diff(split_lines(text), split_lines(new_text), before, after)
        sys.stdout.writelines(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff
        )
    if not result.edits:
        print("no changes: the model's answer equals the region", file=sys.stderr)
    print(summary(stats), file=sys.stderr)
    return EXIT_OK


async def _check(args: argparse.Namespace) -> int:
    from .backend_errors import BackendError, PredictionUnsupported
    from .backend_stream import StreamRequest
    from .config import api_key
    from .engine import Engine

    try:
        loaded = load_cli_config(args.config, Path.cwd(), args.settings)
        backend = loaded.config.backend(args.backend)
        api_key(backend)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_USAGE
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
            print(f"FAIL: the server has no model '{backend.model}'; it offers: {', '.join(models[:20])}")
            print(f"  fix: set backends.{backend.name}.model to one of those")
            return EXIT_FAILED
        print(f"models: {', '.join(models[:20]) or '(none listed)'}")
        request = StreamRequest(
            messages=[{"role": "user", "content": "Reply with the word: ok"}],
            prediction="ok" if mode == "field" else None,
            max_tokens=1,
            temperature=0.0,
        )
        completion = await engine.stream(backend, config.refactor, request)
        print(f"completion: ok ({completion.latency_ms:.0f} ms for 1 token)")
    except PredictionUnsupported as exc:
        print(f"prediction: NOT accepted by this backend ({exc}); refactors will retry without it")
        print(f'  fix: set backends.{backend.name}.prediction = "never" to skip that retry')
        return EXIT_USAGE if failures else EXIT_OK
    except BackendError as exc:
        print(f"FAIL: {exc}")
        return EXIT_FAILED
    finally:
        await engine.close()
    if mode == "field":
        print("prediction: accepted (the `prediction` field is sent)")
    elif mode == "prompt":
        print(f"prediction: in the prompt; {await _speculation(backend)}")
    else:
        print("prediction: off")
    return EXIT_USAGE if failures else EXIT_OK  # a config with problems is a failed check


async def _speculation(backend: BackendConfig) -> str:
    """Whether a local server drafts from the prompt, as far as it tells (vLLM's /metrics); never assumed."""
    if backend.type != "vllm":
        return (
            "whether this server drafts from it (llama.cpp: a draft model or prompt lookup) is not reported "
            "before a request; each refactor's stats say what it drafted"
        )
    from .bench.probes import describe_server

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


def _bench_command(args: argparse.Namespace) -> str:
    """The command line as the report's header shows it (the flags that change what is measured)."""
    import shlex

    parts = ["refactor-lsp", "bench"]
    for flag in ("backend", "baseline_backend", "tasks"):
        if getattr(args, flag, None):
            parts += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    for name in args.task or []:
        parts += ["--task", name]
    parts += ["--repeat", str(args.repeat)]
    if args.max_tokens:
        parts += ["--max-tokens", str(args.max_tokens)]
    if args.concurrency != "1":
        parts += ["--concurrency", args.concurrency]
    if args.edit_format:
        parts += ["--edit-format", args.edit_format]
    if args.note:
        parts += ["--note", args.note]
    for flag in ("markdown", "json"):
        if getattr(args, flag, None):
            parts += [f"--{flag}", str(getattr(args, flag))]
    return shlex.join(parts)


def _write_report(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


async def _bench(args: argparse.Namespace) -> int:
    from .bench import (
        BenchError,
        SizeRuleOnly,
        default_tasks_dir,
        load_tasks,
        make_plan,
        measure,
        parse_concurrency,
        parse_edit_formats,
        render_markdown,
        render_terminal,
    )
    from .engine import Engine

    try:
        # First: a typo in these should not wait for the tasks to load.
        levels = parse_concurrency(args.concurrency)
        formats = parse_edit_formats(args.edit_format) if args.edit_format is not None else ()
        tasks_dir = Path(args.tasks) if args.tasks else default_tasks_dir()
        if tasks_dir is None:
            raise BenchError("no task folder found; give one with --tasks DIR (see benchmarks/tasks/README.md)")
        tasks = load_tasks(tasks_dir, args.task)
        loaded = load_cli_config(args.config, Path.cwd())
        plan = make_plan(
            loaded.config, args.backend, args.baseline_backend, tasks, args.repeat, args.max_tokens, levels, formats
        )
    except (BenchError, ConfigError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    # The user's history must not steer `auto` in a measurement (the bench decides it by size).
    engine = Engine(SizeRuleOnly())
    try:
        report = await measure(engine, plan, tasks_dir=tasks_dir, command=_bench_command(args), note=args.note or "")
    except BenchError as exc:
        _error(str(exc))
        return EXIT_FAILED
    finally:
        await engine.close()
    sys.stdout.write(render_terminal(report))
    if args.markdown:
        _write_report(args.markdown, render_markdown(report))
    if args.json:
        _write_report(args.json, report.to_json())
    if report.formats is not None and not report.formats.measured:
        _error("no run could be compared with its ideal time; see the messages above")
        return EXIT_FAILED
    if report.formats is None and report.total.speedup is None:
        _error("no pair of runs was measured in both modes; see the messages above")
        return EXIT_FAILED
    return EXIT_FAILED if report.errors else EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from .startup import fast_imports

    with fast_imports():  # lsprotocol's classes without compiling their methods again
        from .handlers import serve

    serve(log_file=args.log_file, verbose=args.verbose)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    from .cli_args import build_parser

    args = build_parser().parse_args(argv)
    try:
        if args.command in (None, "serve"):
            return _serve(args)
        from .logs import configure_cli_logging

        configure_cli_logging(args.verbose, args.log_file)
        if args.command == "refactor":
            return asyncio.run(_refactor(args))
        if args.command == "check":
            return asyncio.run(_check(args))
        if args.command == "bench":
            return asyncio.run(_bench(args))
    except KeyboardInterrupt:
        return 130
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
