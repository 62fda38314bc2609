"""The LSP test harness: one way to start a session, and an editor on top of it.

- `server_setup()`: a test module's own state folder and the server config that uses it;
- `initialize(client, workspace, settings)`: the session as an editor opens it (that editor's
  capabilities, the workspace folders, the settings as `initializationOptions`, usually
  `conftest.editor_settings(fake)`); returns the `Editor`;
- `session(setup, workspace, settings)`: a module's server as a pytest-lsp fixture, one for all its
  tests; `fresh(client)` (the `editor` fixture of tests/lsp/conftest.py) gives each test a clean slate;
- `start_session(setup, workspace, settings)`: a server of a test's own, which the test ends;
- `Editor`: a pytest-lsp client that keeps buffers and applies edits as VS Code does (a versioned edit
  older than the buffer is rejected), with its own position code so the server's is checked against
  an independent implementation.
"""

from __future__ import annotations

import ast
import asyncio
import atexit
import inspect
import re
import shutil
import sys
import tempfile
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_server.testing.fake_backend import FakeBackend

CLIENT = "visual-studio-code"  # the editor a session plays unless a test names another (pytest-lsp's records)


class ServerSetup(NamedTuple):
    """Where a test module's servers keep their state, their environment, and the config to start one."""

    state_dir: Path
    env: dict[str, str]
    config: ClientServerConfig


def _temporary_folder(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


# One start-up cache for every server this test run starts (server/startup.py: lsprotocol's compiled
# classes), as a user's ~/.cache keeps one: otherwise each module's first server compiles them again.
_CACHE_HOME = _temporary_folder("refactor-lsp-test-cache-")


def server_setup() -> ServerSetup:
    """A fresh folder for the servers' history, config and home, and a server config using it.

    Call it once at the top of each test module (`SETUP = server_setup()`): one module's refactors
    never show up in another module's `showStats`.
    """
    state_dir = _temporary_folder("refactor-lsp-test-")
    (state_dir / "home").mkdir()  # a user's home exists: a checker runs in it (check/command.py)
    env = {
        "XDG_STATE_HOME": str(state_dir / "state"),
        "XDG_CONFIG_HOME": str(state_dir / "config"),
        "XDG_CACHE_HOME": str(_CACHE_HOME),
        "HOME": str(state_dir / "home"),
        "PATH": "/usr/bin:/bin",
        "PYTHONUNBUFFERED": "1",
    }
    return ServerSetup(
        state_dir, env, ClientServerConfig(server_command=[sys.executable, "-m", "lsp_server"], server_env=env)
    )


async def initialize(
    client: LanguageClient,
    workspace: Path | Sequence[Path],
    settings: Mapping[str, Any] | None = None,
    *,
    client_name: str = CLIENT,
    encodings: Sequence[str] = (),
) -> Editor:
    """Open the session as the editor `client_name` does: its capabilities (with `encodings`, the
    position encodings it offers), the workspace folder(s), created if need be, and `settings` as
    `initializationOptions`. Returns the Editor, which writes positions in the encoding the server chose."""
    folders = [workspace] if isinstance(workspace, Path) else list(workspace)
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    caps = capabilities(client_name)
    if encodings:
        caps.general = types.GeneralClientCapabilities(position_encodings=list(encodings))
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            workspace_folders=[types.WorkspaceFolder(folder.as_uri(), folder.name) for folder in folders],
            initialization_options=settings,
        )
    )
    editor = Editor(client, encoding=result.capabilities.position_encoding or "utf-16")
    _EDITORS[client] = editor
    return editor


async def start_session(
    setup: ServerSetup,
    workspace: Path | Sequence[Path],
    settings: Mapping[str, Any] | None = None,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    client_name: str = CLIENT,
) -> Editor:
    """A server of one test's own, started with `args` and `env` added to the module's setup and opened
    as `initialize` does; the test ends it (`editor.client.shutdown_session()`, or whatever it tests)."""
    config = ClientServerConfig(
        server_command=[*setup.config.server_command, *args], server_env={**setup.env, **(env or {})}
    )
    return await initialize(await config.start(), workspace, settings, client_name=client_name)


def session(
    setup: ServerSetup,
    workspace: Path | Sequence[Path],
    settings: Callable[..., Mapping[str, Any] | None] | None = None,
    *,
    configuration: Callable[..., Mapping[str, Any]] | None = None,
    client_name: str = CLIENT,
    env: Mapping[str, str] | None = None,
    encodings: Sequence[str] = (),
) -> Any:
    """A module's server as a pytest-lsp fixture: `client = session(SETUP, WORKSPACE, lambda backend:
    editor_settings(backend))`. `settings` gives the `initializationOptions`, `configuration` the editor's
    answer to `workspace/configuration` (section `refactorLsp`); their parameters name the fixtures they
    need (the module's fakes, which `fresh` resets). With `encodings`, one session per encoding, each
    offering that one alone."""
    config = ClientServerConfig(server_command=setup.config.server_command, server_env={**setup.env, **(env or {})})

    @pytest_lsp.fixture(config=config, scope="module", params=list(encodings) or None)
    async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest) -> AsyncIterator[None]:
        fakes: list[FakeBackend] = []
        if configuration is not None:
            lsp_client.set_configuration(_with_fixtures(configuration, request, fakes), section="refactorLsp")
        options = _with_fixtures(settings, request, fakes) if settings is not None else None
        offered = [request.param] if encodings else []
        editor = await initialize(lsp_client, workspace, options, client_name=client_name, encodings=offered)
        if encodings:
            assert editor.encoding == request.param, "the server chose an encoding the editor did not offer"
        _FAKES[lsp_client] = tuple(dict.fromkeys(fakes))
        yield
        await lsp_client.shutdown_session()

    return client


def _with_fixtures(make: Callable[..., Any], request: pytest.FixtureRequest, fakes: list[FakeBackend]) -> Any:
    """`make` called with the fixtures its parameters name; the fakes among them added to `fakes`."""
    named = [p.name for p in inspect.signature(make).parameters.values() if p.kind is not p.VAR_KEYWORD]
    values = {name: request.getfixturevalue(name) for name in named}
    fakes += [value for value in values.values() if isinstance(value, FakeBackend)]
    return make(**values)


def editor_of(client: LanguageClient) -> Editor:
    """The Editor that `initialize` put on the client."""
    return _EDITORS[client]


def fresh(client: LanguageClient) -> Editor:
    """A module session's editor for the next test: no messages, stats or edits from the test before,
    and the fakes its settings named reset."""
    editor = _EDITORS[client]
    editor.clear()
    for fake in _FAKES.get(client, ()):
        fake.reset()
    return editor


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def to_offset(text: str, line: int, character: int, encoding: str = "utf-16") -> int:
    starts = _line_starts(text)
    if line >= len(starts):
        return len(text)
    start = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    content = text[start:end].rstrip("\r\n")
    units = 0
    for i, ch in enumerate(content):
        if units >= character:
            return start + i
        units += {"utf-8": len(ch.encode()), "utf-32": 1}.get(encoding, 2 if ord(ch) > 0xFFFF else 1)
    return start + len(content)


def to_position(text: str, offset: int, encoding: str = "utf-16") -> types.Position:
    starts = _line_starts(text)
    line = max(i for i, s in enumerate(starts) if s <= offset)
    segment = text[starts[line] : offset]
    if encoding == "utf-8":
        units = len(segment.encode())
    elif encoding == "utf-32":
        units = len(segment)
    else:
        units = len(segment.encode("utf-16-le")) // 2
    return types.Position(line=line, character=units)


def _as_dict(params: Any) -> dict[str, Any]:
    """A notification's params as a dict (pygls hands an object's fields over as a named tuple)."""
    return params if isinstance(params, dict) else params._asdict()


def _as_code_action(item: types.CodeAction | types.Command) -> types.CodeAction:
    """lsprotocol's client converter reads a CodeAction that carries a `command` object as a bare
    Command (the union is ambiguous on the wire), with the object's repr as its `command` string."""
    if isinstance(item, types.CodeAction):
        return item
    raw = ast.literal_eval(item.command)
    command = types.Command(title=raw["title"], command=raw["command"], arguments=raw.get("arguments"))
    return types.CodeAction(title=item.title, kind="refactor.rewrite.prediction", command=command)


class _EditorError(JsonRpcException):
    """The error an editor answers `workspace/applyEdit` with (RequestFailed) when it refuses the edit."""

    CODE = -32803


NO_ANSWER = object()  # Editor.answer_next_edit unset


class Editor:
    """Buffers, versions and edit application on top of a pytest-lsp client."""

    def __init__(self, client: LanguageClient, encoding: str = "utf-16") -> None:
        self.client = client
        self.encoding = encoding
        self.buffers: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.edits_received: list[types.ApplyWorkspaceEditParams] = []
        self.versions_at_edit: list[dict[str, int]] = []  # the buffers' versions when each edit arrived
        self.stats: list[dict[str, Any]] = []
        self.progress_fields: list[dict[str, Any]] = []  # `refactorLsp/progress`, to a plugin that asked for it
        self.reject_next_edit: str | None = None
        self.error_next_edit: str | None = None  # answer the next edit with a JSON-RPC error of this message
        # Answer the next edit with this JSON as its result, applying nothing: what a broken editor says
        # (`null`, `{}`, `{"applied": "yes"}`) rather than an ApplyWorkspaceEditResult.
        self.answer_next_edit: Any = NO_ANSWER
        self.reply_to_apply_edit = True
        # The user's choice in a refactor preview, by change annotation (VS Code: tick boxes): None applies
        # every edit; otherwise only the annotated edits whose label (and description, after " — ") it keeps.
        self.preview_keeps: Callable[[str], bool] | None = None
        self.edit_event = asyncio.Event()

        async def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            return await self._on_apply_edit(params)

        def on_stats(params: Any) -> None:
            self.stats.append(_as_dict(params))

        def on_progress(params: Any) -> None:
            self.progress_fields.append(_as_dict(params))

        reported = client.report_server_error

        def report_server_error(error: Exception, source: Any) -> None:
            # pytest-lsp fails the test on an exception a client handler raises: an edit answered with
            # an error on purpose is the editor's answer, not a fault of the test.
            if not isinstance(error, _EditorError):
                reported(error, source)

        client.report_server_error = report_server_error  # type: ignore[method-assign]
        client.feature(types.WORKSPACE_APPLY_EDIT)(on_apply_edit)
        client.feature("refactorLsp/stats")(on_stats)
        client.feature("refactorLsp/progress")(on_progress)

    # -- documents -----------------------------------------------------------------------
    def open(self, path: Path, text: str, language_id: str = "python") -> str:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
        uri = path.resolve().as_uri()
        self.buffers[uri] = text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, new_text: str) -> None:
        """The user typed: a full-text didChange with a new version."""
        self.versions[uri] += 1
        self.buffers[uri] = new_text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [types.TextDocumentContentChangeWholeDocument(text=new_text)],
            )
        )

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))

    def range_of(self, uri: str, needle: str, occurrence: int = 0) -> types.Range:
        text = self.buffers[uri]
        start = -1
        for _ in range(occurrence + 1):
            start = text.index(needle, start + 1)
        return types.Range(
            to_position(text, start, self.encoding), to_position(text, start + len(needle), self.encoding)
        )

    def cursor_at(self, uri: str, needle: str) -> types.Range:
        rng = self.range_of(uri, needle)
        return types.Range(rng.start, rng.start)

    # -- edits ---------------------------------------------------------------------------
    def _apply_text_edits(self, uri: str, edits: list[Any]) -> None:
        text = self.buffers[uri]
        spans = []
        for edit in edits:
            start = to_offset(text, edit.range.start.line, edit.range.start.character, self.encoding)
            end = to_offset(text, edit.range.end.line, edit.range.end.character, self.encoding)
            spans.append((start, end, edit.new_text))
        for start, end, new in sorted(spans, reverse=True):
            text = text[:start] + new + text[end:]
        self.buffers[uri] = text
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    async def _on_apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.edits_received.append(params)
        self.versions_at_edit.append(dict(self.versions))
        self.edit_event.set()
        if not self.reply_to_apply_edit:
            await asyncio.sleep(3600)  # like Vim ALE: apply silently, never answer
        if self.reject_next_edit is not None:
            reason, self.reject_next_edit = self.reject_next_edit, None
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason=reason)
        if self.answer_next_edit is not NO_ANSWER:
            answer, self.answer_next_edit = self.answer_next_edit, NO_ANSWER
            return answer  # type: ignore[no-any-return]
        if self.error_next_edit is not None:  # as an editor that refuses with an error, not `applied: false`
            message, self.error_next_edit = self.error_next_edit, None
            raise _EditorError(message)
        edit = params.edit
        for change in edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit)
            uri = change.text_document.uri
            if change.text_document.version is not None and change.text_document.version != self.versions[uri]:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version mismatch")
            self._apply_text_edits(uri, [e for e in change.edits if self._kept(e, edit.change_annotations)])
        for uri, edits in (edit.changes or {}).items():
            self._apply_text_edits(uri, list(edits))
        return types.ApplyWorkspaceEditResult(applied=True)

    def _kept(self, edit: Any, annotations: dict[str, types.ChangeAnnotation] | None) -> bool:
        if self.preview_keeps is None or not isinstance(edit, types.AnnotatedTextEdit) or not annotations:
            return True
        annotation = annotations[edit.annotation_id]
        shown = annotation.label + (f" — {annotation.description}" if annotation.description else "")
        return self.preview_keeps(shown)

    # -- actions -------------------------------------------------------------------------
    async def code_actions(
        self,
        uri: str,
        rng: types.Range,
        diagnostics: list[types.Diagnostic] | None = None,
        only: list[str] | None = None,
    ) -> list[types.CodeAction]:
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(uri), rng, types.CodeActionContext(diagnostics or [], only=only)
            )
        )
        return [_as_code_action(a) for a in result or []]

    async def run_action(self, action: types.CodeAction) -> Any:
        """Pick an action from the menu: resolve it if it has no command, then execute its command."""
        if action.command is None:
            action = await self.client.code_action_resolve_async(action)
        assert action.command is not None
        return await self.execute(action.command.command, *(action.command.arguments or []))

    def start_refactor(self, uri: str, needle: str, instruction: str) -> asyncio.Task[Any]:
        """Ask for a refactor at the cursor before `needle` without waiting for its reply."""
        args = {"uri": uri, "range": self.cursor_at(uri, needle), "instruction": instruction}
        return asyncio.create_task(self.execute("refactorLsp.refactor", args))

    async def execute(self, command: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command, arguments=list(arguments))
        )

    def messages(self) -> list[str]:
        return [m.message for m in self.client.messages]

    def clear(self) -> None:
        self.client.messages.clear()
        self.stats.clear()
        self.progress_fields.clear()
        self.edits_received.clear()
        self.versions_at_edit.clear()
        self.edit_event.clear()


async def until(condition: Any, timeout_s: float = 5.0) -> None:
    """Wait until `condition()` is true (polling), or fail the test."""
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


def capabilities(name: str = "visual-studio-code") -> types.ClientCapabilities:
    from pytest_lsp import client_capabilities

    return client_capabilities(name)


_EDITORS: weakref.WeakKeyDictionary[LanguageClient, Editor] = weakref.WeakKeyDictionary()
_FAKES: weakref.WeakKeyDictionary[LanguageClient, tuple[FakeBackend, ...]] = weakref.WeakKeyDictionary()
