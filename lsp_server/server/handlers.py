"""The LSP handlers: thin, typed, wired to the server object (language_server.py), its refactor jobs (job.py)
and the pipeline. The work lives in actions, settings, job, engine, apply and stats.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from ..languages.identify import language_of
from ..logs import OneLineFormatter
from ..text import PositionMapper, count_of, neutralise_links
from .actions import KIND, command_for, kind_requested, list_actions
from .language_server import RefactorServer
from .wire import (
    APPLY_CHANGES_COMMAND,
    APPLY_SNIPPET_COMMAND,
    CANCEL_COMMAND,
    REFACTOR_COMMAND,
    REFACTOR_EACH_COMMAND,
    SHOW_STATS_COMMAND,
    ApplyArguments,
    ApplyChangesArguments,
    BatchArguments,
    RefactorArguments,
)

log = logging.getLogger(__name__)

server = RefactorServer()


@server.feature(types.INITIALIZE)
def on_initialize(ls: RefactorServer, params: types.InitializeParams) -> None:
    options = params.initialization_options
    ls.settings.init_options = options
    if isinstance(options, Mapping):
        ls.settings.workspace_trusted_by_editor = (
            options.get("workspaceTrusted", options.get("workspace_trusted")) is True
        )
        ls.settings.configuration_trusted = (
            options.get("configurationTrusted", options.get("configuration_trusted")) is True
        )
        ls.wants_progress_fields = options.get("progressFields", options.get("progress_fields")) is True
    folders = [to_fs_path(f.uri) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [to_fs_path(params.root_uri)]
    ls.settings.workspace_folders = [Path(f) for f in folders if f]


@server.feature(types.INITIALIZED)
def on_initialized(ls: RefactorServer, params: types.InitializedParams) -> None:
    from ..pipeline import engine  # noqa: F401
    from ..server import edit  # noqa: F401  # the pipeline, now that the editor has its answer
    from ..stats import measured  # noqa: F401
    from .startup import freeze_after_start

    freeze_after_start()
    package_log = logging.getLogger("lsp_server")
    if not ls.verbose:
        package_log.setLevel(ls.settings.load(None).config.log_level.upper())
    ls.learn_windows()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def on_change_configuration(ls: RefactorServer, params: types.DidChangeConfigurationParams) -> None:
    ls.settings.invalidate()


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def on_watched_files(ls: RefactorServer, params: types.DidChangeWatchedFilesParams) -> None:
    ls.settings.invalidate()


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def on_save(ls: RefactorServer, params: types.DidSaveTextDocumentParams) -> None:
    if params.text_document.uri.endswith(("/.refactor-lsp.toml", "/config.toml")):
        ls.settings.invalidate()


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def on_close(ls: RefactorServer, params: types.DidCloseTextDocumentParams) -> None:
    held = ls.jobs.get(params.text_document.uri)
    during = "with its review open" if held is not None and held.pending is not None else "during the refactor"
    ls.cancel(params.text_document.uri, f"the document was closed {during}")
    ls.scope_caches.pop(params.text_document.uri, None)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[KIND], resolve_provider=True),
)
def on_code_action(ls: RefactorServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    if not kind_requested(params.context.only):
        return None
    uri = params.text_document.uri
    document = ls.open_document(uri)
    if document is None:  # only what the editor has open is refactored (a refactor would be refused)
        return None
    config = ls.config_for(uri)
    cache = ls.scope_cache(uri)
    mapper = PositionMapper(document.source, ls.encoding, cache.line_index(document.source))
    start = mapper.offset(params.range.start.line, params.range.start.character)
    end = mapper.offset(params.range.end.line, params.range.end.character)
    lsp_range = {
        "start": {"line": params.range.start.line, "character": params.range.start.character},
        "end": {"line": params.range.end.line, "character": params.range.end.character},
    }
    diagnostics = [f"line {d.range.start.line + 1}: {d.message}" for d in params.context.diagnostics or []]
    offered = list_actions(
        config,
        uri=uri,
        text=document.source,
        start=min(start, end),
        end=max(start, end),
        lsp_range=lsp_range,
        diagnostics=diagnostics,
        language=language_of(uri, document.language_id),
        cache=cache,
    )
    resolves = ls.resolves_actions
    actions = []
    for action in offered:
        # A title quotes the repository (a preset's title, an instruction comment): a menu item, never a link.
        code_action = types.CodeAction(title=neutralise_links(action.title), kind=KIND, data=action.data)
        if not resolves:
            # Clients that do not resolve (eglot, ALE) get the command now; it replies at once
            # because some of them give up on a long executeCommand.
            code_action.command = _command(action.title, {**action.data, "wait": False})
        actions.append(code_action)
    return actions


def _command(title: str, data: Mapping[str, Any]) -> types.Command:
    return types.Command(title=title, command=command_for(data), arguments=[dict(data)])


@server.feature(types.CODE_ACTION_RESOLVE)
def on_code_action_resolve(ls: RefactorServer, action: types.CodeAction) -> types.CodeAction:
    if isinstance(action.data, Mapping) and action.command is None:
        action.command = _command(action.title, action.data)
    return action


@server.command(REFACTOR_COMMAND)
async def refactor_command(ls: RefactorServer, arguments: RefactorArguments) -> dict[str, Any]:
    return (await ls.refactor(arguments)).to_json()


@server.command(REFACTOR_EACH_COMMAND)
async def refactor_each_command(ls: RefactorServer, arguments: BatchArguments) -> dict[str, Any]:
    return (await ls.refactor(arguments.refactor, arguments.targets)).to_json()


@server.command(APPLY_SNIPPET_COMMAND)
async def apply_snippet_command(ls: RefactorServer, arguments: ApplyArguments) -> dict[str, Any]:
    merge = arguments.merge_with_model
    return (await ls.refactor(arguments.refactor, snippet=arguments.snippet, merge_with_model=merge)).to_json()


@server.command(APPLY_CHANGES_COMMAND)
async def apply_changes_command(ls: RefactorServer, arguments: ApplyChangesArguments) -> dict[str, Any]:
    return (await ls.apply_changes(arguments)).to_json()


@server.command(CANCEL_COMMAND)
async def cancel_command(ls: RefactorServer, *arguments: Any) -> dict[str, Any]:
    # A coroutine on purpose: handlers' tasks start in arrival order, so a refactor requested just
    # before this has registered itself by the time this runs.
    target = arguments[0] if arguments else None
    uri = target.get("uri") if isinstance(target, Mapping) else target
    if uri is not None and not isinstance(uri, str):
        # Read as "no document", it would cancel every refactor: a wrong type is refused by name.
        raise JsonRpcInvalidParams("refactorLsp.cancel takes {uri} (a string), a URI or nothing; `uri` is not a string")
    count, too_late = ls.cancel(uri)  # a too-late one is told by its job, and counts as none cancelled
    if count == 0 and too_late == 0:
        ls.tell("no refactor is running" + (" on this file" if uri else ""))
    return {"cancelled": count, "tooLate": too_late}


@server.command(SHOW_STATS_COMMAND)
def show_stats_command(ls: RefactorServer, *arguments: Any) -> dict[str, Any]:
    from ..stats.history import summarize_history, summarize_kept

    records = ls.history.read()
    summaries = summarize_history(records)
    kept = summarize_kept(records)
    spliced = sum(1 for r in records if r.merged_by == "splice")  # asked no backend: in no median
    lines = [s.line() for s in summaries]
    if spliced:
        lines.append(f"{count_of(spliced, 'snippet part')} spliced as written, no model asked")
    lines += [k.line() for k in kept[:5]]
    ls.tell(" | ".join(lines) if lines else "no refactors recorded yet")
    return {
        "count": len(records),
        "spliced": spliced,
        "backends": [
            {
                "backend": s.backend,
                "speedup": s.speedup,
                "modes": [m.__dict__ for m in s.modes],
            }
            for s in summaries
        ],
        "kept": [k.__dict__ for k in kept],
    }


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: RefactorServer, params: None) -> None:
    log.debug("at shutdown, the session keeps %s", ls.bookkeeping())
    ls.shutdown_requested = True
    ls.cancel(None, "the server is shutting down", session_ends=True)
    tasks = [job.task for job in ls.jobs.values() if job.task is not None] + list(ls.background)
    for task in tasks:
        task.cancel()
    if tasks:
        with contextlib.suppress(Exception):
            await asyncio.wait(tasks, timeout=1.0)
    await ls.engine.close()


@server.feature(types.EXIT)
def on_exit(ls: RefactorServer, params: None) -> None:
    """End now, as the LSP spec says: 0 after `shutdown`, else 1. Streams still running end with the
    process (their connections close), so no billed tokens keep coming; nothing waits for them."""
    for job in ls.jobs.values():
        job.cancel("the server is exiting", session_ends=True)
    for handler in logging.getLogger("lsp_server").handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    os._exit(0 if ls.shutdown_requested else 1)


_LOG_LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
    logging.DEBUG: types.MessageType.Log,
}


class ClientLogHandler(logging.Handler):
    """Python logging → window/logMessage. Nothing is ever printed to stdout (it is the protocol)."""

    def __init__(self, ls: RefactorServer) -> None:
        super().__init__()
        self.ls = ls

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind = _LOG_LEVELS.get(record.levelno, types.MessageType.Log)
            self.ls.window_log_message(types.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:
            pass


def serve(log_file: str | None = None, verbose: int = 0) -> None:
    package_log = logging.getLogger("lsp_server")
    package_log.setLevel(logging.DEBUG if verbose >= 2 else logging.INFO)
    package_log.propagate = False
    server.verbose = verbose
    handler = ClientLogHandler(server)
    handler.setFormatter(OneLineFormatter("%(levelname)s %(name)s: %(message)s", tracebacks=verbose >= 2))
    package_log.addHandler(handler)
    if log_file:
        from ..logs import file_handler

        package_log.addHandler(file_handler(log_file))
    from .stdio import serve_stdio

    serve_stdio(server)
