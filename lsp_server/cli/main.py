"""Command line: the language server (default), `check`; `refactor`, `refactor --each` and `apply` are
refactor.py's one command, `bench` is bench.py's.

Every subcommand drives the same pipeline as the server (lsp_server.pipeline).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.schema import BackendConfig, Config, ConfigError
from ..text import listed
from .args import UsageError
from .io import Exit, error, load_cli_config, on_screen

if TYPE_CHECKING:
    from ..backend.proposer_probe import ProposerFound


def _settings_from_stdin() -> str:
    """Editor settings from stdin: at most MAX_CONFIG_BYTES bytes of UTF-8. Raises ConfigError."""
    from ..config.layers import MAX_CONFIG_BYTES
    from ..files.safe_read import ReadRefused, read_stream

    try:
        return read_stream(sys.stdin.buffer, MAX_CONFIG_BYTES).decode("utf-8")
    except ReadRefused:
        raise ConfigError("--settings -", "refactorLsp", f"is over {MAX_CONFIG_BYTES:,} bytes") from None
    except UnicodeDecodeError as exc:
        raise ConfigError("--settings -", "refactorLsp", f"is not UTF-8 text (byte {exc.start})") from None


async def _check(args: argparse.Namespace) -> int:
    from ..backend.errors import BackendError, PredictionUnsupported
    from ..backend.stream import StreamRequest
    from ..config.load import api_key
    from ..pipeline.engine import Engine

    try:
        settings = args.settings
        if settings == "-":  # from setup(), with its headers: never on a command line
            settings = _settings_from_stdin()
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
    _kept_in_reviews(backend)
    if mode == "field":
        print("prediction: accepted (the `prediction` field is sent)")
    elif mode == "prompt":
        print(f"prediction: in the prompt; {await _speculation(backend)}")
        if found is not None:
            print(f"proposer: {_proposer_words(found)}")
    else:
        print("prediction: off")
    return Exit.USAGE if failures else Exit.OK  # a config with problems is a failed check


def _kept_in_reviews(backend: BackendConfig) -> None:
    """How much of this backend's answers people kept when they reviewed them (the history): a model
    whose answers are mostly dropped is worth knowing about."""
    from ..stats.history import History, summarize_kept

    kept = summarize_kept(History().read(), backend.name)
    if not kept:
        print("reviews: none recorded (refactor --review, or review in the editor, says what people keep)")
        return
    for summary in kept[:KEPT_SHOWN]:
        print(f"reviews: {summary.line()}")


KEPT_SHOWN = 5  # actions shown by `check`, the most reviewed first


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
    if info.speculative_decoding is None or info.speculative_decoding.startswith("unknown"):
        why = "did not answer" if info.speculative_decoding is None else "shows counters that no counter can have"
        return (
            f"whether the server speculates is not known ({info.metrics_url or 'no /metrics URL'} {why}); "
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
    from .args import UsageError, parse

    try:
        args = parse(argv)
    except UsageError as exc:
        return on_screen(functools.partial(_usage_error, exc, sys.argv[1:] if argv is None else argv))
    if args.command in (None, "serve"):
        try:
            return _serve(args)  # stdout is the protocol's channel: never a Screen
        except KeyboardInterrupt:
            return Exit.INTERRUPTED
    return on_screen(functools.partial(_command, args))


def _command(args: argparse.Namespace) -> int:
    from ..logs import configure_cli_logging

    configure_cli_logging(args.verbose, args.log_file)
    if args.command in ("refactor", "apply"):
        from .refactor import run_request

        return asyncio.run(run_request(args))
    if args.command == "check":
        return asyncio.run(_check(args))
    if args.command == "bench":
        from .bench import run_bench

        return asyncio.run(run_bench(args))
    return Exit.USAGE


def _usage_error(exc: UsageError, argv: list[str]) -> int:
    """argparse's usage and error lines, from the subcommand the problem belongs to; under `refactor
    --json` or `apply --json`, the one JSON object every outcome of theirs prints."""
    exc.parser.print_usage(sys.stderr)
    print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
    command = next((a for a in argv if a in ("refactor", "apply", "check", "bench", "serve")), None)
    if command in ("refactor", "apply") and "--json" in argv:
        from ..pipeline.outcome import refused_json
        from .io import print_json

        kind = "apply" if command == "apply" else "each" if "--each" in argv else "refactor"
        print_json(refused_json(kind, "usage", str(exc)))
    return Exit.USAGE


if __name__ == "__main__":
    sys.exit(main())
