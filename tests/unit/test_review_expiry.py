"""A review left open past REVIEW_OPEN_S is dropped whatever comes next: a late `applyChanges` to it
finds none, is told why, and the document is free (the server's own state, in process: half an hour
cannot pass over real LSP)."""

from __future__ import annotations

import time
from typing import Any, cast

from lsprotocol import types

from lsp_server.pipeline.review import Review
from lsp_server.server.job import RequestJob
from lsp_server.server.language_server import RefactorServer
from lsp_server.server.offer import REVIEW_OPEN_S, Pending
from lsp_server.server.wire import ApplyChangesArguments, RefactorArguments


async def test_a_late_answer_to_a_review_left_open_too_long_applies_nothing_and_frees_the_document() -> None:
    server = RefactorServer()
    told: list[str] = []
    server.tell = lambda message, kind=types.MessageType.Info: told.append(message)  # type: ignore[method-assign]
    uri = "file:///tmp/late.py"
    job = RequestJob(server, RefactorArguments(uri=uri, review="changes"), "x = 1\n", 1, "python")
    nothing = cast(Any, None)  # never read: the review is dropped before its answer is looked at
    job.pending = Pending(nothing, nothing, Review(()), 0.0, 1, opened=time.monotonic() - REVIEW_OPEN_S - 1)
    server.jobs[uri] = job
    reply = await server.apply_changes(ApplyChangesArguments(uri, job.pending.id, ()))
    assert reply.status == "error" and "no review is open on this file" in reply.message
    assert "the review was left open too long; it was dropped; nothing was applied" in told
    assert uri not in server.jobs
