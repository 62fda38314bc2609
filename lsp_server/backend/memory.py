"""What each backend taught, per base URL and model, kept across processes: its context window (and
where it came from) and its characters per token, in the prompt (for the window's budget) and in
the answer (for the live rate's estimate).

One file in the state folder (`files.state`), `backends.json`: `{"v": 1, "backends": [...]}`. It is
the user's, never the workspace's, and read like every state file: bounded in size, without
following links, each entry checked (types, ranges, lengths); a damaged file, or one of another
version, is ignored whole and a damaged entry alone. At most MAX_ENTRIES entries are kept, the
least recently learned dropped first, so no set of configs can make it grow. It is written only
when something changed enough to matter (a new window, a ratio that moved by a few per cent),
merged with what another process wrote meanwhile.

The probes that learn windows run here too, once per backend and process, in the background: the
server starts them when it reads its config, a refactor waits for one (briefly) only while nothing
is known of that backend's window.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..config.schema import BackendConfig
from ..files.state import open_state_file, state_dir, write_state_file
from .window import SOURCES, ContextWindow, probe_window, valid_window

log = logging.getLogger(__name__)

FILE_NAME = "backends.json"
VERSION = 1
MAX_FILE_BYTES = 64 * 1024
MAX_ENTRIES = 64
MAX_URL_CHARS, MAX_MODEL_CHARS = 512, 256
# Characters per token a real tokenizer gives: code and prose are 2.5-4.5; below 1 or above 12 is damage.
MIN_RATIO, MAX_RATIO = 1.0, 12.0
RESAVE_CHANGE = 0.05  # a ratio that moved by less than this since it was written is not written again
# A prompt ratio above the known one is taken in slowly, one below it at once: the budget errs small.
RATIO_RISE_WEIGHT = 0.25
# The answer's ratio (only the live rate's estimate) follows each answer by this much: smooth, and rarely written.
OUTPUT_RATIO_WEIGHT = 0.5

Key = tuple[str, str]


@dataclass(frozen=True)
class Learned:
    """What one backend (URL, model) taught."""

    window: ContextWindow | None = None
    prompt_chars_per_token: float | None = None
    output_chars_per_token: float | None = None
    seen: int = 0  # when it last taught something (Unix seconds): the oldest are dropped first

    def to_json(self, key: Key) -> dict[str, Any]:
        return {
            "base_url": key[0],
            "model": key[1],
            "window": self.window.tokens if self.window else None,
            "window_source": self.window.source if self.window else None,
            "prompt_chars_per_token": self.prompt_chars_per_token,
            "output_chars_per_token": self.output_chars_per_token,
            "seen": self.seen,
        }


def _ratio(value: Any) -> float | None:
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value) or not MIN_RATIO <= value <= MAX_RATIO:
        raise ValueError(f"{value!r:.40} is not a characters-per-token ratio")
    return float(value)


def _entry(data: Any) -> tuple[Key, Learned]:
    """One entry read back; ValueError when anything in it is off."""
    if not isinstance(data, Mapping):
        raise ValueError("an entry is not an object")
    url, model, seen = data.get("base_url"), data.get("model"), data.get("seen", 0)
    if not isinstance(url, str) or not 0 < len(url) <= MAX_URL_CHARS:
        raise ValueError("base_url")
    if not isinstance(model, str) or len(model) > MAX_MODEL_CHARS:
        raise ValueError("model")
    if type(seen) is not int or seen < 0:
        raise ValueError("seen")
    window = None
    if data.get("window") is not None:
        tokens, source = valid_window(data.get("window")), data.get("window_source")
        if tokens is None or source not in SOURCES:
            raise ValueError("window")
        window = ContextWindow(tokens, source)
    learned = Learned(
        window, _ratio(data.get("prompt_chars_per_token")), _ratio(data.get("output_chars_per_token")), seen
    )
    return (url, model), learned


def read_learned(path: Path) -> dict[Key, Learned]:
    """The file's entries; none when it is missing, unsafe, too large, damaged or of another version."""
    try:
        fd = open_state_file(path)
        try:
            if os.fstat(fd).st_size > MAX_FILE_BYTES:
                raise ValueError(f"it is larger than {MAX_FILE_BYTES:,} bytes")
            data = os.read(fd, MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > MAX_FILE_BYTES:
            raise ValueError(f"it is larger than {MAX_FILE_BYTES:,} bytes")
        document = json.loads(data.decode("utf-8"))
        if not isinstance(document, dict) or type(document.get("v")) is not int or document["v"] != VERSION:
            raise ValueError("it is not a version-1 file of refactor-lsp's")
        entries = document.get("backends")
        if not isinstance(entries, list):
            raise ValueError("it has no list of backends")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as exc:  # JSON and UTF-8 errors are ValueErrors
        log.warning("ignoring %s: %s", path, exc)
        return {}
    learned: dict[Key, Learned] = {}
    skipped = 0
    for data in entries[: MAX_ENTRIES * 2]:
        try:
            key, value = _entry(data)
        except ValueError:
            skipped += 1
            continue
        learned[key] = value
    if skipped:
        log.warning("%s: %d damaged entr%s skipped", path, skipped, "y" if skipped == 1 else "ies")
    return _newest(learned)


def _newest(learned: dict[Key, Learned]) -> dict[Key, Learned]:
    if len(learned) <= MAX_ENTRIES:
        return learned
    kept = sorted(learned.items(), key=lambda item: item[1].seen, reverse=True)[:MAX_ENTRIES]
    return dict(kept)


def _key(backend: BackendConfig) -> Key:
    return backend.base_url, backend.model


class BackendMemory:
    """The learned facts of every backend this process talks to, loaded from and saved to the state
    file. Owned by whoever makes the engine (the server keeps one for its life)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_dir() / FILE_NAME
        self._learned: dict[Key, Learned] | None = None  # read on first use
        self._written: dict[Key, Learned] = {}  # what this process last wrote (or read) per key
        self._unsaved: dict[Key, Learned] = {}  # learned, to be written once the refactor has gone on (`flush`)
        self._probes: dict[Key, asyncio.Task[ContextWindow | None]] = {}
        # Windows this process heard from the backend itself (its report, its refusal), not from the file:
        # only these may refuse a refactor before sending (the server may have been given more since).
        self._confirmed: set[Key] = set()

    def _all(self) -> dict[Key, Learned]:
        if self._learned is None:
            self._learned = read_learned(self.path)
            self._written = dict(self._learned)
        return self._learned

    def learned(self, backend: BackendConfig) -> Learned:
        return self._all().get(_key(backend), Learned())

    def window(self, backend: BackendConfig) -> ContextWindow | None:
        return self.learned(backend).window

    # -- learning ----------------------------------------------------------------------------------
    def remember_window(self, backend: BackendConfig, window: ContextWindow) -> None:
        """A window the backend just said (its report, or its refusal of a prompt)."""
        self._confirmed.add(_key(backend))
        if window != self.window(backend):
            self._update(backend, window=window)

    def learn_usage(
        self,
        backend: BackendConfig,
        prompt_chars_per_token: float | None = None,
        output_chars_per_token: float | None = None,
    ) -> None:
        """Ratios measured on one refactor (the prompt's characters ÷ the prompt tokens the backend
        counted; the answer's characters ÷ its tokens)."""
        old = self.learned(backend)
        changes: dict[str, Any] = {}
        if prompt_chars_per_token is not None:
            seen = min(max(prompt_chars_per_token, MIN_RATIO), MAX_RATIO)
            known = old.prompt_chars_per_token
            if known is None or seen < known:
                changes["prompt_chars_per_token"] = seen
            else:
                changes["prompt_chars_per_token"] = known + RATIO_RISE_WEIGHT * (seen - known)
        if output_chars_per_token is not None:
            seen = min(max(output_chars_per_token, MIN_RATIO), MAX_RATIO)
            known = old.output_chars_per_token
            changes["output_chars_per_token"] = seen if known is None else known + OUTPUT_RATIO_WEIGHT * (seen - known)
        if changes:
            self._update(backend, **changes)

    def distrust_prompt_ratio(self, backend: BackendConfig, used: float, factor: float = 0.8) -> None:
        """A prompt estimated with `used` characters a token to fit was refused as too long: count
        more tokens a character from now on."""
        self._update(backend, prompt_chars_per_token=max(used * factor, MIN_RATIO))

    def _update(self, backend: BackendConfig, **changes: Any) -> None:
        key = _key(backend)
        learned = self._all()
        new = replace(learned.get(key, Learned()), seen=int(time.time()), **changes)
        learned[key] = new
        bounded = len(key[0]) <= MAX_URL_CHARS and len(key[1]) <= MAX_MODEL_CHARS  # longer: kept in memory only
        if bounded and _worth_writing(self._written.get(key), new):
            self._unsaved[key] = new
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            if len(self._unsaved) == 1:  # not on a refactor's way to its edit: once it yields
                loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write what was learned and not yet written (`close` does it too)."""
        unsaved, self._unsaved = self._unsaved, {}
        for key, new in unsaved.items():
            self._save(key, new)

    def _save(self, key: Key, new: Learned) -> None:
        """Write this entry into the file as another process may have left it; failures are logged."""
        entries = read_learned(self.path)
        entries[key] = new
        entries = _newest(entries)
        document = {"v": VERSION, "backends": [value.to_json(k) for k, value in entries.items()]}
        data = json.dumps(document, sort_keys=True, allow_nan=False).encode()
        if len(data) > MAX_FILE_BYTES:
            log.warning("not writing %s: %d bytes", self.path, len(data))
            return
        try:
            write_state_file(self.path.name, data, self.path.parent)
        except OSError as exc:
            log.warning("cannot write %s: %s", self.path, exc)
            return
        self._written[key] = new

    # -- probing -----------------------------------------------------------------------------------
    def start_probe(self, backend: BackendConfig) -> None:
        """Ask the backend for its window in the background, once per process (OpenAI is never asked:
        it does not tell). Needs a running event loop; without one, nothing is started."""
        key = _key(backend)
        if key in self._probes or backend.type == "openai" or not backend.base_url:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._probes[key] = loop.create_task(self._probe(backend), name=f"context window of {backend.base_url}")

    async def _probe(self, backend: BackendConfig) -> ContextWindow | None:
        window = await probe_window(backend)  # never raises
        if window is not None:
            self.remember_window(backend, window)  # what the server says now outweighs what it said before
        return window

    async def window_soon(self, backend: BackendConfig, wait_s: float) -> ContextWindow | None:
        """The window when known; else, while this backend's probe runs, wait up to `wait_s` for it."""
        window = self.window(backend)
        if window is not None:
            return window
        task = self._probes.get(_key(backend))
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=wait_s)
        return self.window(backend)

    async def confirmed_window(self, backend: BackendConfig, wait_s: float) -> ContextWindow | None:
        """The window as the backend said it in this process (waiting up to `wait_s` for its probe), or
        None: it has not said it here, only an earlier process heard it."""
        task = self._probes.get(_key(backend))
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=wait_s)
        return self.window(backend) if _key(backend) in self._confirmed else None

    async def probe_now(self, backend: BackendConfig) -> ContextWindow | None:
        """Ask now and wait for the answer (`check`); the window known before when it tells nothing."""
        self.start_probe(backend)
        task = self._probes.get(_key(backend))
        if task is not None:
            with contextlib.suppress(Exception):
                await task
        return self.window(backend)

    async def close(self) -> None:
        """Write what is still unwritten; stop the probes still running (their answers no longer matter)."""
        self.flush()
        for task in self._probes.values():
            task.cancel()
        pending = [task for task in self._probes.values() if not task.done()]
        if pending:
            await asyncio.wait(pending, timeout=1.0)


def _worth_writing(written: Learned | None, new: Learned) -> bool:
    if written is None or written.window != new.window:
        return True
    for old_ratio, new_ratio in (
        (written.prompt_chars_per_token, new.prompt_chars_per_token),
        (written.output_chars_per_token, new.output_chars_per_token),
    ):
        if (old_ratio is None) != (new_ratio is None):
            return True
        if old_ratio and new_ratio and abs(new_ratio - old_ratio) > RESAVE_CHANGE * old_ratio:
            return True
    return False
