"""A request that does not wait (`wait: false`, what editors that do not resolve code actions send) is
answered at once, so no reply reports its job: a failure of the job afterwards is logged and shown to
the user, never lost with the task (in process: a job that fails unexpectedly cannot be made over real
LSP without a bug to make it; the refusals a job expects are tested end to end in tests/lsp/)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_server.config.schema import Config
from lsp_server.server.language_server import RefactorServer
from lsp_server.server.wire import RefactorArguments, RefactorStatus

URI = "file:///tmp/unwaited.py"


def server_whose_settings_break() -> tuple[RefactorServer, list[tuple[str, types.MessageType]]]:
    """A server with `URI` open whose every refactor fails unexpectedly once it has its settings."""
    server = RefactorServer()
    told: list[tuple[str, types.MessageType]] = []
    server.tell = lambda message, kind=types.MessageType.Info: told.append((message, kind))  # type: ignore[method-assign]
    server.open_document = lambda uri: TextDocument(uri, "x = 1\n", version=1, language_id="python")  # type: ignore[method-assign]

    async def refresh_settings(uri: str) -> None:
        return None

    def config_for(uri: str) -> Config:
        raise RuntimeError("the settings store broke")

    server.refresh_settings = refresh_settings  # type: ignore[method-assign]
    server.config_for = config_for  # type: ignore[method-assign]
    return server, told


async def test_a_job_that_fails_after_its_reply_is_logged_and_told(caplog: pytest.LogCaptureFixture) -> None:
    server, told = server_whose_settings_break()
    with caplog.at_level(logging.ERROR, logger="lsp_server"):
        reply = await server.refactor(RefactorArguments(uri=URI, instruction="rename", wait=False))
        assert reply.status == RefactorStatus.STARTED
        async with asyncio.timeout(5):
            while not told:
                await asyncio.sleep(0.01)
    assert told == [
        (
            f"the refactor of {URI} failed: the settings store broke (the server's log has the details)",
            types.MessageType.Error,
        )
    ]
    (logged,) = [r for r in caplog.records if r.name.startswith("lsp_server")]
    assert logged.getMessage() == f"the refactor of {URI} failed"
    assert logged.exc_info is not None and "the settings store broke" in str(logged.exc_info[1])
    assert URI not in server.jobs and not server.background  # the document is free, nothing kept


async def test_a_request_that_waits_fails_in_its_reply_alone() -> None:
    """The reply is the one report of a request that waits: its failure is not shown a second time."""
    server, told = server_whose_settings_break()
    with pytest.raises(RuntimeError, match="the settings store broke"):
        await server.refactor(RefactorArguments(uri=URI, instruction="rename"))
    await asyncio.sleep(0)
    assert told == []
