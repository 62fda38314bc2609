"""The progress token's life: pygls keeps each token made until someone removes it."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

from lsp_server.server import progress
from lsp_server.server.progress import ProgressReporter


class EditorProgress:
    """pygls's `work_done_progress` as the reporter uses it: the editor makes the token slowly, and the
    refactor ends meanwhile."""

    def __init__(self) -> None:
        self.tokens: dict[str, Future[None]] = {}
        self.reporter: ProgressReporter | None = None
        self.begun: list[str] = []

    async def create_async(self, token: str) -> None:
        assert self.reporter is not None
        self.reporter.end()  # the refactor ends while the editor makes the token
        self.tokens[token] = Future()  # pygls registers it once the editor answers

    def begin(self, token: str, value: Any) -> None:
        self.begun.append(token)


class Editor:
    supports_progress = True
    wants_progress_fields = False

    def __init__(self) -> None:
        self.work_done_progress = EditorProgress()

    def notify(self, method: str, params: Any) -> None:
        pass


async def test_a_token_made_after_the_refactor_ended_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "PROGRESS_SHOW_DELAY_S", 0)
    editor = Editor()
    reporter = ProgressReporter(editor, "file:///a.py", "Refactor", "local", lambda _reason: None)  # type: ignore[arg-type]
    editor.work_done_progress.reporter = reporter
    await reporter.begin()
    assert editor.work_done_progress.begun == []
    assert editor.work_done_progress.tokens == {}
