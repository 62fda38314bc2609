"""Whether a vLLM server drafts from the request's prediction: refactor-lsp's proposer
(lsp_server/proposer) loaded as its speculative method. No server says which proposer it runs (not
`/v1/models`, not `/metrics`), so this asks, with two tiny requests that differ only in `vllm_xargs`:

1. PROBE_DRAFT: the proposer drafts at every step of it;
2. then PROBE_SILENT: the proposer drafts nothing for it.

The proposer is there when the first request had tokens drafted and the second none. A server that
ignores `vllm_xargs` sees the same request twice: n-gram lookup drafts the same both times, suffix
decoding as much or more the second time (it has the first answer cached), a plain server nothing:
none of them passes. Each request writes PROBE_TOKENS tokens (`ignore_eos`), at temperature 0, so
that the proposer has steps to draft at whatever the model answers.

A server whose `/metrics` shows no speculative decoding is not asked (a plain baseline). Otherwise
once per backend and process, before that process's first refactor on it: the refactor waits for the
probe (so that the probe's requests never run beside it and blur what `/metrics` counts for it) and
sends the prediction in `vllm_xargs` only where the probe found the proposer; everywhere else the
request is as it was.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..config.schema import BackendConfig
from ..proposer import PREDICTION_KEY, PROBE_DRAFT, PROBE_KEY, PROBE_SILENT
from .metrics import DRAFTED, fetch_metrics, metrics_url, spec_counters
from .stream import Completion, StreamRequest

log = logging.getLogger(__name__)

PROBE_TOKENS = 4
PROBE_MESSAGES = [{"role": "user", "content": "Reply with the word: ok"}]

Send = Callable[[StreamRequest], Awaitable[Completion]]  # one request, its acceptance read (engine's)


@dataclass(frozen=True)
class ProposerFound:
    """What the probe found: `present` True or False, or None when the server did not say how many tokens
    it drafted (no per-request metrics, no /metrics) or did not answer; `detail` says it in words."""

    present: bool | None
    detail: str


def probe_request(probe: str) -> StreamRequest:
    return StreamRequest(
        messages=PROBE_MESSAGES,
        prediction=None,
        max_tokens=PROBE_TOKENS,
        temperature=0.0,
        vllm_xargs={PROBE_KEY: probe},
        ignore_eos=True,
    )


def prediction_xargs(prediction: str) -> dict[str, str]:
    """What a request to a server with the proposer carries: the prediction in `vllm_xargs`."""
    return {PREDICTION_KEY: prediction}


async def probe_proposer(send: Send, metrics_url: str | None = None, verify_tls: bool = True) -> ProposerFound:
    """Ask the server with the two probe requests (in that order); never raises but for cancellation.
    A server whose `/metrics` (at `metrics_url`) has no speculative-decoding counters runs no proposer:
    it is not asked."""
    if metrics_url is not None:
        try:
            # The page's counters as every reader reads them: one that is no counter's value says nothing.
            counters = spec_counters(await fetch_metrics(metrics_url, verify_tls))
        except Exception:
            counters = None  # no metrics page to tell: the probe asks
        if counters is not None and DRAFTED not in counters:
            return ProposerFound(False, "the server does not speculate (no speculative-decoding counters on /metrics)")
    try:
        drafting = await send(probe_request(PROBE_DRAFT))
        silent = await send(probe_request(PROBE_SILENT))
    except Exception as exc:
        return ProposerFound(None, f"the probe failed ({type(exc).__name__}: {exc})")
    if drafting.acceptance is None or silent.acceptance is None:
        return ProposerFound(None, "the server did not report how many tokens it drafted")
    drafted = drafting.acceptance.accepted + drafting.acceptance.rejected
    drafted_silent = silent.acceptance.accepted + silent.acceptance.rejected
    if drafted > 0 and drafted_silent == 0:
        return ProposerFound(True, "refactor-lsp's proposer drafts from the prediction sent in `vllm_xargs`")
    return ProposerFound(
        False,
        f"no proposer reads `vllm_xargs` there (the probe's two requests drafted {drafted} and "
        f"{drafted_silent} tokens)",
    )


class ProposerProbes:
    """The probes of one process, per backend (URL, model); only vLLM backends are asked."""

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str], asyncio.Task[ProposerFound]] = {}
        self._known: dict[tuple[str, str], ProposerFound] = {}  # told, not asked (`remember`)

    def remember(self, backend: BackendConfig, found: ProposerFound) -> None:
        """What is known of this backend without asking it (a caller that knows the server's settings)."""
        self._known[(backend.base_url, backend.model)] = found

    def start(self, backend: BackendConfig, send: Send) -> None:
        """Probe in the background, once per process; needs a running event loop (else nothing starts)."""
        key = (backend.base_url, backend.model)
        if backend.type != "vllm" or not backend.base_url or key in self._tasks or key in self._known:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        probe = probe_proposer(send, metrics_url(backend), backend.verify_tls)
        self._tasks[key] = loop.create_task(probe, name=f"proposer of {backend.base_url}")

    def present(self, backend: BackendConfig) -> bool:
        """The probe is done and found the proposer."""
        if (known := self._known.get((backend.base_url, backend.model))) is not None:
            return known.present is True
        task = self._tasks.get((backend.base_url, backend.model))
        return task is not None and task.done() and not task.cancelled() and task.result().present is True

    async def found(self, backend: BackendConfig, send: Send, wait_s: float | None = None) -> ProposerFound | None:
        """The probe's finding, started if need be, waiting up to `wait_s` (None: until it ends); None
        while it runs on, or for a backend that is not vLLM."""
        if (known := self._known.get((backend.base_url, backend.model))) is not None:
            return known
        self.start(backend, send)
        task = self._tasks.get((backend.base_url, backend.model))
        if task is None:
            return None
        if not task.done():
            await asyncio.wait([task], timeout=wait_s)
        if not task.done() or task.cancelled():
            return None
        return task.result()

    async def close(self) -> None:
        """Stop the probes still running (their answers no longer matter)."""
        pending = [task for task in self._tasks.values() if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)
