"""What the servers and this machine say about themselves, for the report's header: best effort,
never a reason to stop the bench."""

from __future__ import annotations

import dataclasses
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..backend import metrics
from ..backend.clients import get_capped, read_json
from ..backend.window import PROBE_MAX_BYTES, fetch_json, model_entry, models_url, window_of_entry
from ..config.load import api_key
from ..config.schema import BackendConfig, ConfigError
from ..text import clip

INFO_LABELS = ("enable_prefix_caching", "kv_cache_size_tokens", "block_size", "cache_dtype")


@dataclass(frozen=True)
class ServerInfo:
    """A backend as the report names it, and what its server told; what it did not tell is None
    (and left out of the JSON)."""

    name: str
    type: str
    base_url: str
    model: str
    model_info: dict[str, Any] | None = None  # the model's entry in /models: id, root, owned_by, max_model_len
    models_error: str | None = None
    server_version: str | None = None
    metrics_url: str | None = None
    speculative_decoding: str | None = None  # "on (...)", "off (...)" or "unknown (...)", as /metrics shows it
    metrics_counters: dict[str, float] | None = None
    metrics_info: dict[str, str] | None = None  # labels of vLLM's cache_config_info (INFO_LABELS)
    metrics_error: str | None = None
    proposer: str | None = None  # what the proposer probe found, where it found refactor-lsp's proposer

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Machine:
    cpu: str
    cores: int | None
    memory_gib: float | None
    os: str
    python: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Counters:
    """vLLM's /metrics counters at one moment."""

    url: str
    values: dict[str, float]


@dataclass(frozen=True)
class DraftsCounted:
    """Draft tokens a server's /metrics counted between two readings: the bench's, and whatever else it served."""

    url: str
    drafted: float
    accepted: float
    rate: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _origin(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}"


async def _get(url: str, backend: BackendConfig, timeout_s: float = 3.0, auth: bool = True) -> Any:
    headers = dict(backend.headers)
    try:
        key = api_key(backend) if auth else None
    except ConfigError:
        key = None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body, content_type = await get_capped(
        url, headers, verify_tls=backend.verify_tls, timeout_s=timeout_s, max_bytes=PROBE_MAX_BYTES
    )
    return read_json(body, url) if "json" in content_type else body.decode("utf-8", "replace")


async def describe_server(backend: BackendConfig) -> ServerInfo:
    """What the server tells about itself, best effort: the model's entry, vLLM's version and whether
    its /metrics shows speculative decoding."""
    found: dict[str, Any] = {}
    try:
        entry = model_entry(await fetch_json(models_url(backend), backend), backend.model)
        if entry is not None:
            # `profile`: the loopback backend's (lsp_server/testing/profiles.py), for the report's header.
            info = {k: clip(entry[k]) for k in ("id", "root", "owned_by", "profile") if isinstance(entry.get(k), str)}
            window = window_of_entry(entry)  # read as a refactor reads it (backend/window.py)
            found["model_info"] = info | ({"max_model_len": window} if window is not None else {})
    except Exception as exc:
        found["models_error"] = clip(f"{type(exc).__name__}: {exc}")
    url = metrics.metrics_url(backend)
    if backend.type == "vllm":
        try:
            version = await _get(_origin(backend.base_url) + "/version", backend, auth=False)
            if isinstance(version, dict) and version.get("version"):
                found["server_version"] = f"vLLM {clip(str(version['version']), 80)}"
        except Exception:
            pass
    if url:
        found["metrics_url"] = url
        try:
            text = await metrics.fetch_metrics_text(url, backend.verify_tls)
            counters = metrics.spec_counters(metrics.parse_prometheus(text))
            if counters is None:
                found["speculative_decoding"] = "unknown (/metrics shows counters that no counter can have)"
            else:
                found["speculative_decoding"] = (
                    "on (speculative-decoding counters on /metrics)"
                    if metrics.DRAFTED in counters
                    else "off (no speculative-decoding counters on /metrics)"
                )
                found["metrics_counters"] = counters
            found["metrics_info"] = _info_labels(text)
        except Exception as exc:
            found["metrics_error"] = clip(f"{type(exc).__name__}: {exc}")
    return ServerInfo(backend.name, backend.type, backend.base_url, backend.model, **found)


def _info_labels(text: str) -> dict[str, str]:
    """A few telling labels of vLLM's `vllm:cache_config_info` gauge (prefix caching, KV cache size)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("vllm:cache_config_info{"):
            continue
        labels = line.partition("{")[2].rpartition("}")[0]
        for item in labels.split('",'):
            key, _, value = item.partition('="')
            if key.strip() in INFO_LABELS:
                out[key.strip()] = clip(value.strip('"'), 80)
    return out


def machine() -> Machine:
    cpu = platform.processor() or platform.machine()
    memory_gib = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    return Machine(
        cpu=cpu,
        cores=os.cpu_count(),
        memory_gib=memory_gib,
        os=platform.platform(terse=True),
        python=platform.python_version(),
    )


async def read_counters(backend: BackendConfig) -> Counters | None:
    """The backend's /metrics counters now; None when it has no /metrics or it cannot be read."""
    url = metrics.metrics_url(backend)
    if url is None:
        return None
    try:
        counters = metrics.spec_counters(await metrics.fetch_metrics(url, backend.verify_tls))
    except Exception:
        return None
    return Counters(url, counters) if counters is not None else None


def drafts_between(before: Counters | None, after: Counters | None) -> DraftsCounted | None:
    """The speculative-decoding counters' growth between two readings, when both have them."""
    if before is None or after is None:
        return None
    b, a = before.values, after.values
    # Both counters in both readings: one missing from a reading is not 0 (taken so, a page that showed the
    # accepted counter only the second time counted every token accepted since the server started).
    if any(name not in values for name in (metrics.DRAFTED, metrics.ACCEPTED) for values in (a, b)):
        return None
    drafted = a[metrics.DRAFTED] - b[metrics.DRAFTED]
    accepted = a[metrics.ACCEPTED] - b[metrics.ACCEPTED]
    if drafted < 0 or not 0 <= accepted <= drafted:  # the server restarted in between: the counts say nothing
        return None
    return DraftsCounted(before.url, drafted, accepted, accepted / drafted if drafted else 0.0)
