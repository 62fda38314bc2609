"""vLLM's Prometheus counters as a fallback source of draft acceptance.

A vLLM server started with `--per-request-spec-decode-metrics` reports acceptance in each answer's
final chunk. Without it, the only source is `/metrics`: the counters
`vllm:spec_decode_num_accepted_tokens_total` and `vllm:spec_decode_num_draft_tokens_total` are read
before and after the request, and their difference is this request's acceptance — exactly, unless
other requests ran on the server meanwhile. We can see that happening (another of our own requests
in flight, or `vllm:request_success_total` rising by more than our one request) and then say the
figures are approximate; requests from other clients that start and stay running within our
window cannot be seen, which is why the source is always named.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from .acceptance import Acceptance, plausible
from .clients import BodyTooLarge, BodyUnreadable, get_capped

if TYPE_CHECKING:
    from ..config.schema import BackendConfig
    from .stream import Completion

log = logging.getLogger(__name__)

ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
DRAFTED = "vllm:spec_decode_num_draft_tokens_total"
FINISHED = "vllm:request_success_total"
SOURCE = "vllm-metrics"
SOURCE_APPROXIMATE = "vllm-metrics-approximate"
FETCH_TIMEOUT_S = 3.0
# vLLM's page is a few hundred kilobytes (a histogram's buckets per metric); past this it is not read.
METRICS_MAX_BYTES = 4 << 20
SETTLE_TIMEOUT_S = 1.0  # the server may count the last step just after the stream ended


@dataclass
class MetricsMemory:
    """What the probes learn about servers, kept for the engine's lifetime."""

    unavailable: set[str] = field(default_factory=set)  # metrics URLs that failed (not vLLM, no /metrics)
    per_request_seen: set[str] = field(default_factory=set)  # backends that report acceptance per request
    in_flight: dict[str, int] = field(default_factory=dict)  # our requests per URL: >1 mixes the counters
    no_speculation: set[str] = field(default_factory=set)  # backends whose /metrics has no draft counters

    def remember_per_request_metrics(self, backend: BackendConfig) -> None:
        """The backend reports acceptance in its answers: stop reading /metrics for it."""
        self.per_request_seen.add(backend.base_url)


def metrics_url(backend: BackendConfig) -> str | None:
    """`metrics_url` when configured, else `/metrics` beside a vLLM backend's `/v1`; None for other types."""
    if backend.metrics_url:
        return backend.metrics_url
    if backend.type != "vllm" or not backend.base_url:
        return None
    parsed = urlparse(backend.base_url)
    path = parsed.path.rstrip("/")
    path = path[: -len("/v1")] if path.endswith("/v1") else ""
    return f"{parsed.scheme}://{parsed.netloc}{path}/metrics"


def parse_prometheus(text: str) -> dict[str, float]:
    """Sum of every sample of each metric name (all label sets), from the text exposition format; NaN for
    a name with a sample whose value is no number (NaN, `12abc`, Python's own `1_000`): the metric is on
    the page, its value is not known (dropped, a draft counter would read as "no speculation")."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, _, rest = line.partition("{")
            rest = rest.rpartition("}")[2]
        else:
            name, _, rest = line.partition(" ")
        fields = rest.split()
        if not fields:
            continue
        try:
            value = float(fields[0]) if "_" not in fields[0] else math.nan
        except ValueError:
            value = math.nan
        totals[name.strip()] = totals.get(name.strip(), 0.0) + value
    return totals


async def fetch_metrics(url: str, verify_tls: bool = True, timeout_s: float = FETCH_TIMEOUT_S) -> dict[str, float]:
    """GET the metrics page and parse it; raises OSError-like errors from httpx on failure."""
    return parse_prometheus(await fetch_metrics_text(url, verify_tls, timeout_s))


class NotVllmMetrics(BodyUnreadable):
    """The page at the metrics URL has no vLLM metric on it (a proxy's HTML page, another exporter)."""


async def fetch_metrics_text(url: str, verify_tls: bool = True, timeout_s: float = FETCH_TIMEOUT_S) -> str:
    """vLLM's metrics page; NotVllmMetrics where the page has no `vllm:` metric: a page that is not vLLM's
    says nothing of its speculation, whereas vLLM's page without the draft counters says it has none."""
    body, _ = await get_capped(url, {}, verify_tls=verify_tls, timeout_s=timeout_s, max_bytes=METRICS_MAX_BYTES)
    text = body.decode("utf-8", "replace")
    if not any(line.lstrip().startswith("vllm:") for line in text.splitlines()):
        raise NotVllmMetrics(f"{url} is not vLLM's metrics page (no vllm: metric on it)")
    return text


def spec_counters(values: dict[str, float]) -> dict[str, float] | None:
    """The speculative-decoding counters of a page (those it has), or None when one is there but is no
    counter's value: a counter only grows from 0 and stays finite; one that is no number (NaN) or an
    infinite one (1e308 summed twice) would make a difference infinite or NaN, a negative one inflate it.
    Such a page says nothing, not "no speculation" nor "speculating"."""
    counters = {name: values[name] for name in (ACCEPTED, DRAFTED, FINISHED) if name in values}
    if any(not (math.isfinite(value) and value >= 0) for value in counters.values()):
        return None
    return counters


@dataclass
class _Snapshot:
    accepted: float | None
    drafted: float | None
    finished: float | None

    @classmethod
    def of(cls, values: dict[str, float]) -> _Snapshot | None:
        """The counters, or None when one is no counter's value (`spec_counters`)."""
        counters = spec_counters(values)
        if counters is None:
            return None
        return cls(*(counters.get(name) for name in (ACCEPTED, DRAFTED, FINISHED)))


def _said(exc: Exception) -> str:
    import httpx

    return f"HTTP {exc.response.status_code}" if isinstance(exc, httpx.HTTPStatusError) else str(exc)


class SpecDecodeProbe:
    """Reads the counters around one request: `await probe.start()`, the request, `await probe.finish()`."""

    def __init__(self, url: str, memory: MetricsMemory, verify_tls: bool = True, base_url: str = "") -> None:
        self.url = url
        self.base_url = base_url
        self.memory = memory
        self.verify_tls = verify_tls
        self.before: _Snapshot | None = None
        self.overlapped = False

    @classmethod
    def for_backend(cls, backend: BackendConfig, memory: MetricsMemory) -> SpecDecodeProbe | None:
        """A probe when the backend is a vLLM server whose per-request metrics we have not seen."""
        url = metrics_url(backend)
        if url is None or url in memory.unavailable or backend.base_url in memory.per_request_seen:
            return None
        return cls(url, memory, backend.verify_tls, backend.base_url)

    async def _read(self) -> _Snapshot | None:
        import httpx

        try:
            snapshot = _Snapshot.of(await fetch_metrics(self.url, self.verify_tls))
            if snapshot is None:
                log.info("%s shows speculative-decoding counters that no counter can have; not read", self.url)
            return snapshot
        except (httpx.HTTPStatusError, BodyUnreadable, BodyTooLarge, TimeoutError) as exc:
            # The server answers but not with a metrics page we can read (none there, not vLLM's, too large,
            # or too slow: a page that took FETCH_TIMEOUT_S once would add as much to every refactor):
            # do not ask it again.
            log.info("%s: %s; acceptance will not be read from it", self.url, _said(exc))
            self.memory.unavailable.add(self.url)
        except Exception as exc:  # down or unreachable for now: try again next time
            log.info("cannot read %s (%s)", self.url, exc)
        return None

    async def start(self) -> None:
        in_flight = self.memory.in_flight
        in_flight[self.url] = in_flight.get(self.url, 0) + 1
        if in_flight[self.url] > 1:
            self.overlapped = True
        self.before = await self._read()

    def abandon(self) -> None:
        """The request failed: forget it."""
        self._leave()

    def _leave(self) -> None:
        in_flight = self.memory.in_flight
        count = in_flight.get(self.url, 1) - 1
        if count > 0:
            self.overlapped = True
            in_flight[self.url] = count
        else:
            in_flight.pop(self.url, None)

    async def finish(self) -> Acceptance | None:
        """This request's acceptance from the counters' difference; None when they are not there."""
        try:
            before = self.before
            if before is None:
                return None
            if before.accepted is None or before.drafted is None:
                self.memory.unavailable.add(self.url)  # a server without speculative decoding: nothing to read
                self.memory.no_speculation.add(self.base_url)
                return None
            after = await self._read()
            deadline = time.monotonic() + SETTLE_TIMEOUT_S
            # vLLM records a step's counters as it hands out the step's tokens; wait until our request
            # is counted as finished, so that its last step is in the counters.
            while (
                after is not None
                and before.finished is not None
                and after.finished is not None
                and after.finished < before.finished + 1
                and time.monotonic() < deadline
            ):
                await asyncio.sleep(0.02)
                after = await self._read()
            if after is None or after.accepted is None or after.drafted is None:
                return None
            if before.finished is not None and after.finished is not None and after.finished != before.finished + 1:
                self.overlapped = True
            accepted = round(after.accepted - before.accepted)
            drafted = round(after.drafted - before.drafted)
            if accepted < 0 or drafted < accepted:  # the server restarted meanwhile
                return None
            if self.memory.in_flight.get(self.url, 0) > 1:
                self.overlapped = True
            return Acceptance(accepted, drafted - accepted, SOURCE_APPROXIMATE if self.overlapped else SOURCE)
        finally:
            self._leave()


async def stream_measured(
    stream: Callable[[], Awaitable[Completion]],
    probe: SpecDecodeProbe | None,
    memory: MetricsMemory,
    backend: BackendConfig,
) -> Completion:
    """`stream()`'s answer; a vLLM server that reported no per-request acceptance gets it from /metrics
    (`probe`, None: not read there)."""
    if probe is None:
        return await stream()
    await probe.start()
    try:
        completion = await stream()
    except BaseException:
        probe.abandon()
        raise
    if completion.acceptance is not None:
        probe.abandon()
        memory.remember_per_request_metrics(backend)
        return completion
    # Counters mixed with another client's requests can count more accepted than this answer has.
    completion.acceptance = plausible(await probe.finish(), completion.completion_tokens)
    note = note_for(completion.acceptance) if completion.acceptance else None
    if note:
        completion.notes.append(note)
    return completion


def note_for(acceptance: Acceptance) -> str | None:
    """What the user should hear about acceptance read from /metrics: only that it is approximate."""
    if acceptance.source == SOURCE_APPROXIMATE:
        return (
            "prediction acceptance read from the server's /metrics counters while other requests ran: approximate "
            "(start vLLM with --per-request-spec-decode-metrics for exact figures)"
        )
    return None
