"""What the proposer probe concludes from the drafts a server reports for its two requests
(backend/proposer_probe.py): only a server that reads `vllm_xargs` drafts for the first and not for the
second. The servers here are the drafting patterns the probe's docstring names, as `send` functions."""

from __future__ import annotations

from lsp_server.backend.acceptance import Acceptance
from lsp_server.backend.proposer_probe import probe_proposer
from lsp_server.backend.stream import Completion, StreamRequest
from lsp_server.proposer import PROBE_DRAFT, PROBE_KEY


def server(*drafted: int | None):  # type: ignore[no-untyped-def]  # a send function
    """A server that reports these drafted tokens for its requests, in order (None: it reports nothing)."""
    answers = list(drafted)
    seen: list[StreamRequest] = []

    async def send(request: StreamRequest) -> Completion:
        seen.append(request)
        count = answers.pop(0)
        return Completion(acceptance=None if count is None else Acceptance(0, count, "vllm-spec-decode-metrics"))

    send.seen = seen  # type: ignore[attr-defined]
    return send


async def test_the_proposer_drafts_for_the_first_request_and_not_the_second() -> None:
    send = server(12, 0)
    found = await probe_proposer(send)
    assert found.present is True
    assert [r.vllm_xargs for r in send.seen] == [{PROBE_KEY: PROBE_DRAFT}, {PROBE_KEY: "silent"}]
    assert all(r.ignore_eos and r.max_tokens == 4 and r.temperature == 0 for r in send.seen)


async def test_servers_that_ignore_vllm_xargs_are_not_taken_for_it() -> None:
    assert (await probe_proposer(server(6, 6))).present is False  # n-gram lookup: the same both times
    assert (await probe_proposer(server(0, 6))).present is False  # suffix decoding: the first answer cached
    assert (await probe_proposer(server(0, 0))).present is False  # nothing to draft from, or no speculation


async def test_a_server_that_reports_no_drafts_leaves_it_unknown() -> None:
    found = await probe_proposer(server(None, None))
    assert found.present is None and "did not report" in found.detail


async def test_a_failed_probe_leaves_it_unknown_and_says_why() -> None:
    async def send(request: StreamRequest) -> Completion:
        raise OSError("connection refused")

    found = await probe_proposer(send)
    assert found.present is None and "connection refused" in found.detail
