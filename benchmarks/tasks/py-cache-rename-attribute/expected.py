"""A small thread-safe LRU cache with per-entry time-to-live."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, Iterator, Optional, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    expirations: int = 0

    @property
    def hit_ratio(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


@dataclass
class _Entry(Generic[V]):
    value: V
    expires_at: Optional[float]

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at


class TTLCache(Generic[K, V]):
    """Least-recently-used cache whose entries may also expire after a TTL."""

    def __init__(
        self,
        maxsize: int = 1024,
        ttl: Optional[float] = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if maxsize <= 0:
            raise ValueError("maxsize must be positive")
        self.maxsize = maxsize
        self.ttl = ttl
        self._clock = clock
        self._entries: "OrderedDict[K, _Entry[V]]" = OrderedDict()
        self._lock = threading.RLock()
        self.stats = CacheStats()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            entry = self._entries.get(key)  # type: ignore[call-overload]
            return entry is not None and not entry.expired(self._clock())

    def get(self, key: K, default: Optional[V] = None) -> Optional[V]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.stats.misses += 1
                return default
            if entry.expired(self._clock()):
                del self._entries[key]
                self.stats.expirations += 1
                self.stats.misses += 1
                return default
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return entry.value

    def set(self, key: K, value: V, ttl: Optional[float] = None) -> None:
        ttl = self.ttl if ttl is None else ttl
        expires_at = self._clock() + ttl if ttl is not None else None
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
            self._entries[key] = _Entry(value, expires_at)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
                self.stats.evictions += 1

    def get_or_set(self, key: K, factory: Callable[[], V], ttl: Optional[float] = None) -> V:
        with self._lock:
            value = self.get(key, _MISSING)  # type: ignore[arg-type]
            if value is _MISSING:
                value = factory()
                self.set(key, value, ttl)
            return value  # type: ignore[return-value]

    def delete(self, key: K) -> bool:
        with self._lock:
            return self._entries.pop(key, None) is not None

    def purge_expired(self) -> int:
        now = self._clock()
        with self._lock:
            stale = [k for k, e in self._entries.items() if e.expired(now)]
            for k in stale:
                del self._entries[k]
            self.stats.expirations += len(stale)
            return len(stale)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def keys(self) -> Iterator[K]:
        with self._lock:
            now = self._clock()
            return iter([k for k, e in self._entries.items() if not e.expired(now)])


def memoize(maxsize: int = 256, ttl: Optional[float] = None):
    """Decorator caching a function's results keyed by its positional arguments."""

    def decorator(fn):
        cache: TTLCache = TTLCache(maxsize=maxsize, ttl=ttl)

        def wrapper(*args):
            return cache.get_or_set(args, lambda: fn(*args))

        wrapper.cache = cache  # type: ignore[attr-defined]
        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        wrapper.__name__ = getattr(fn, "__name__", "memoized")
        return wrapper

    return decorator
