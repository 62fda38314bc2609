"""A small in-process job scheduler: delayed jobs, retries with backoff, and concurrency limits per queue."""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_QUEUE = "default"
MAX_BACKOFF_S = 300.0


class JobError(Exception):
    """A job could not be scheduled or run."""


@dataclass(order=True)
class Job:
    run_at: float
    sequence: int
    name: str = field(compare=False)
    handler: Callable[..., Any] = field(compare=False)
    args: tuple[Any, ...] = field(default=(), compare=False)
    queue: str = field(default=DEFAULT_QUEUE, compare=False)
    attempts: int = field(default=0, compare=False)
    max_attempts: int = field(default=3, compare=False)
    last_error: str | None = field(default=None, compare=False)


@dataclass
class QueueStats:
    submitted: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    total_runtime_s: float = 0.0

    @property
    def mean_runtime_s(self) -> float:
        finished = self.succeeded + self.failed
        return self.total_runtime_s / finished if finished else 0.0


class JobScheduler:
    """Runs jobs when they are due, at most `limits[queue]` at a time per queue.

    The scheduler does not own threads: a caller drives it with `tick()`, which starts every due job
    the limits allow, and `finish()` / `fail()`, which a worker calls when a job ends. This keeps the
    scheduling decisions deterministic and easy to test with a fake clock.
    """

    def __init__(
        self,
        limits: dict[str, int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        base_backoff_s: float = 2.0,
    ) -> None:
        self._clock = clock
        self._limits = dict(limits or {})
        self._base_backoff_s = base_backoff_s
        self._pending: list[Job] = []
        self._in_flight: dict[str, set[int]] = defaultdict(set)
        self._jobs: dict[int, Job] = {}
        self._dead: deque[Job] = deque(maxlen=1000)
        self._stats: dict[str, QueueStats] = defaultdict(QueueStats)
        self._started_at: dict[int, float] = {}
        self._counter = itertools.count(1)
        self._paused: set[str] = set()
        self._listeners: list[Callable[[str, Job], None]] = []

    # -- submitting ----------------------------------------------------------------------------

    def submit(
        self,
        name: str,
        handler: Callable[..., Any],
        *args: Any,
        delay_s: float = 0.0,
        queue: str = DEFAULT_QUEUE,
        max_attempts: int = 3,
    ) -> int:
        """Schedule `handler(*args)` to run after `delay_s`; returns the job's id."""
        if delay_s < 0:
            raise JobError(f"delay must not be negative, got {delay_s}")
        if max_attempts < 1:
            raise JobError("a job needs at least one attempt")
        job_id = next(self._counter)
        job = Job(self._clock() + delay_s, job_id, name, handler, args, queue, max_attempts=max_attempts)
        self._jobs[job_id] = job
        heapq.heappush(self._pending, job)
        self._stats[queue].submitted += 1
        self._emit("submitted", job)
        return job_id

    def submit_many(self, items: Iterable[tuple[str, Callable[..., Any]]], queue: str = DEFAULT_QUEUE) -> list[int]:
        return [self.submit(name, handler, queue=queue) for name, handler in items]

    def cancel(self, job_id: int) -> bool:
        """Drop a job that has not started yet. Running jobs cannot be cancelled here."""
        job = self._jobs.get(job_id)
        if job is None or job_id in self._in_flight[job.queue]:
            return False
        try:
            self._pending.remove(job)
        except ValueError:
            return False
        heapq.heapify(self._pending)
        del self._jobs[job_id]
        self._emit("cancelled", job)
        return True

    # -- running -------------------------------------------------------------------------------

    def tick(self) -> list[Job]:
        """Start every due job the queue limits allow, earliest first; returns the started jobs."""
        now = self._clock()
        started: list[Job] = []
        deferred: list[Job] = []
        while self._pending and self._pending[0].run_at <= now:
            job = heapq.heappop(self._pending)
            if job.queue in self._paused or not self._has_capacity(job.queue):
                deferred.append(job)
                continue
            self._in_flight[job.queue].add(job.sequence)
            self._started_at[job.sequence] = now
            job.attempts += 1
            started.append(job)
            self._emit("started", job)
        for job in deferred:
            heapq.heappush(self._pending, job)
        return started

    def run_due(self) -> int:
        """Start due jobs and run them inline; for scripts and tests. Returns how many ran."""
        ran = 0
        for job in self.tick():
            try:
                job.handler(*job.args)
            except Exception as exc:  # a job's failure is data here, not a crash of the scheduler
                self.fail(job.sequence, exc)
            else:
                self.finish(job.sequence)
            ran += 1
        return ran

    def finish(self, job_id: int) -> None:
        job = self._take_running(job_id)
        stats = self._stats[job.queue]
        stats.succeeded += 1
        stats.total_runtime_s += self._clock() - self._started_at.pop(job_id, self._clock())
        del self._jobs[job_id]
        self._emit("succeeded", job)

    def fail(self, job_id: int, error: BaseException) -> None:
        """A job raised: retry it with exponential backoff, or give up after its last attempt."""
        job = self._take_running(job_id)
        job.last_error = f"{type(error).__name__}: {error}"
        stats = self._stats[job.queue]
        stats.total_runtime_s += self._clock() - self._started_at.pop(job_id, self._clock())
        if job.attempts >= job.max_attempts:
            stats.failed += 1
            self._dead.append(job)
            del self._jobs[job_id]
            log.warning("job %s (%s) failed for good after %d attempts: %s", job_id, job.name, job.attempts, job.last_error)
            self._emit("dead", job)
            return
        stats.retried += 1
        job.run_at = self._clock() + self._backoff(job.attempts)
        heapq.heappush(self._pending, job)
        self._emit("retrying", job)

    def _backoff(self, attempts: int) -> float:
        return min(self._base_backoff_s * 2 ** (attempts - 1), MAX_BACKOFF_S)

    def _take_running(self, job_id: int) -> Job:
        job = self._jobs.get(job_id)
        if job is None or job_id not in self._in_flight[job.queue]:
            raise JobError(f"job {job_id} is not running")
        self._in_flight[job.queue].discard(job_id)
        return job

    def _has_capacity(self, queue: str) -> bool:
        limit = self._limits.get(queue)
        return limit is None or len(self._in_flight[queue]) < limit

    # -- queues --------------------------------------------------------------------------------

    def pause(self, queue: str) -> None:
        self._paused.add(queue)

    def resume(self, queue: str) -> None:
        self._paused.discard(queue)

    def set_limit(self, queue: str, limit: int | None) -> None:
        if limit is None:
            self._limits.pop(queue, None)
        elif limit < 1:
            raise JobError(f"a queue limit must be at least 1, got {limit}")
        else:
            self._limits[queue] = limit

    def drain(self, queue: str) -> list[Job]:
        """Remove and return every job of `queue` that has not started."""
        kept: list[Job] = []
        drained: list[Job] = []
        for job in self._pending:
            (drained if job.queue == queue else kept).append(job)
        heapq.heapify(kept)
        self._pending = kept
        for job in drained:
            del self._jobs[job.sequence]
        return drained

    # -- looking in ----------------------------------------------------------------------------

    def next_due_in(self) -> float | None:
        """Seconds until the earliest waiting job is due (0 if one is due now); None when none waits."""
        if not self._pending:
            return None
        return max(0.0, self._pending[0].run_at - self._clock())

    def waiting(self, queue: str | None = None) -> int:
        return sum(1 for job in self._pending if queue is None or job.queue == queue)

    def running(self, queue: str | None = None) -> int:
        if queue is not None:
            return len(self._in_flight[queue])
        return sum(len(ids) for ids in self._in_flight.values())

    def dead_letters(self) -> list[Job]:
        return list(self._dead)

    def stats(self) -> dict[str, QueueStats]:
        return dict(self._stats)

    def describe(self) -> str:
        lines = []
        queues = sorted(set(self._stats) | set(self._limits))
        for queue in queues:
            stats = self._stats[queue]
            limit = self._limits.get(queue, "∞")
            state = "paused" if queue in self._paused else "active"
            lines.append(
                f"{queue}: {state}, {self.running(queue)}/{limit} running, {self.waiting(queue)} waiting, "
                f"{stats.succeeded} ok, {stats.failed} failed, {stats.retried} retried, "
                f"mean {stats.mean_runtime_s:.2f} s"
            )
        return "\n".join(lines) or "no queues"

    # -- events --------------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[str, Job], None]) -> Callable[[], None]:
        """Call `listener(event, job)` on every state change; returns a function that unsubscribes."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, event: str, job: Job) -> None:
        for listener in list(self._listeners):
            try:
                listener(event, job)
            except Exception:  # a broken listener must not stop the scheduler
                log.exception("listener failed on %s for job %s", event, job.sequence)

    # -- persistence ---------------------------------------------------------------------------

    def snapshot(self) -> list[dict[str, Any]]:
        """The waiting jobs as plain data (handlers by name), to restore after a restart."""
        return [
            {
                "name": job.name,
                "handler": getattr(job.handler, "__qualname__", repr(job.handler)),
                "args": list(job.args),
                "queue": job.queue,
                "due_in_s": max(0.0, job.run_at - self._clock()),
                "attempts": job.attempts,
                "max_attempts": job.max_attempts,
            }
            for job in sorted(self._pending)
        ]

    def restore(self, records: Iterable[dict[str, Any]], handlers: dict[str, Callable[..., Any]]) -> int:
        """Submit again the jobs of a snapshot whose handler is known; returns how many were restored."""
        restored = 0
        for record in records:
            handler = handlers.get(record["handler"])
            if handler is None:
                log.warning("no handler %r for job %r; skipped", record["handler"], record["name"])
                continue
            job_id = self.submit(
                record["name"],
                handler,
                *record.get("args", ()),
                delay_s=float(record.get("due_in_s", 0.0)),
                queue=record.get("queue", DEFAULT_QUEUE),
                max_attempts=int(record.get("max_attempts", 3)),
            )
            self._jobs[job_id].attempts = int(record.get("attempts", 0))
            restored += 1
        return restored


def every(scheduler: JobScheduler, interval_s: float, name: str, handler: Callable[[], Any]) -> Callable[[], None]:
    """Run `handler` every `interval_s` seconds until the returned function is called."""
    stopped = False

    def run_and_reschedule() -> None:
        if stopped:
            return
        try:
            handler()
        finally:
            if not stopped:
                scheduler.submit(name, run_and_reschedule, delay_s=interval_s)

    def stop() -> None:
        nonlocal stopped
        stopped = True

    scheduler.submit(name, run_and_reschedule, delay_s=interval_s)
    return stop
