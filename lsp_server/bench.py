"""`refactor-lsp bench`: the same edits with and without prediction, side by side.

Every task of a corpus (benchmarks/tasks/, format in its README) runs through the server's own
pipeline (`refactor.run_refactor`) twice per repetition: once with the prediction and once without,
with the same prompt at temperature 0. "Without" is the same backend without the `prediction` field
for OpenAI-type backends; for vLLM and llama.cpp, whose speculation is a server setting, it is a
baseline backend: the same model served without speculative decoding.

Pairs alternate which mode runs first, task by task and repetition by repetition (ABAB... then
BABA...), so that warm caches and drift favour neither mode. Speedup is the median, over pairs, of
the baseline's latency divided by the prediction's latency.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import difflib
import json
import os
import platform
import shlex
import shutil
import statistics
import sys
import textwrap
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlparse

from . import __version__
from .config import BackendConfig, Config, ConfigError
from .engine import Engine
from .refactor import Progress, RefactorError, RefactorRequest
from .scope import line_span
from .stats import RefactorStats

TASK_KINDS = ("mostly-unchanged", "heavy-rewrite")
KIND_LABELS = {"mostly-unchanged": "small edit", "heavy-rewrite": "rewrite"}
LOCAL_TYPES = ("vllm", "llamacpp")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class BenchError(Exception):
    """The bench cannot run; the message says what to fix."""


# -- tasks --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    name: str
    folder: Path
    file: str
    instruction: str
    lines: tuple[int, int] | None  # 1-based, inclusive; None: the whole file
    kind: str
    language: str
    source: str
    expected: str

    def span(self) -> tuple[int, int]:
        if self.lines is None:
            return 0, len(self.source)
        return line_span(self.source, self.lines[0] - 1, self.lines[1] - 1)

    def request(self, backend: str, prediction: bool | None) -> RefactorRequest:
        """The request an editor would send: the task's lines selected, or the whole file."""
        start, end = self.span() if self.lines else (0, 0)
        return RefactorRequest(
            path=str(self.folder / self.file),
            text=self.source,
            start=start,
            end=end,
            instruction=self.instruction,
            backend=backend,
            prediction=prediction,
            scope="selection" if self.lines else "file",
        )

    def expected_region(self) -> str:
        """The region as the expected file has it (benchmarks/tasks/README.md: prefix and suffix unchanged)."""
        if self.lines is None:
            return self.expected
        start, end = self.span()
        return self.expected[start : len(self.expected) - (len(self.source) - end)]


def default_tasks_dir() -> Path | None:
    """The corpus beside the package (a source checkout), else ./benchmarks/tasks."""
    for candidate in (Path(__file__).resolve().parent.parent / "benchmarks" / "tasks", Path("benchmarks/tasks")):
        if candidate.is_dir():
            return candidate
    return None


def _read_utf8(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise BenchError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BenchError(f"{path} is not UTF-8 text") from None


def load_task(folder: Path) -> Task:
    path = folder / "task.toml"
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise BenchError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise BenchError(f"cannot read {path}: {exc.strerror}") from None
    for key in ("file", "instruction", "expected", "kind", "language"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise BenchError(f"{path}: `{key}` is required and must be a non-empty string")
    if data["kind"] not in TASK_KINDS:
        raise BenchError(f"{path}: `kind` must be one of {', '.join(TASK_KINDS)}, not {data['kind']!r}")
    source = _read_utf8(folder / data["file"])
    expected = _read_utf8(folder / data["expected"])
    lines: tuple[int, int] | None = None
    if "lines" in data:
        spec = data["lines"]
        try:
            first, _, last = str(spec).partition(":")
            lines = (int(first), int(last or first))
        except ValueError:
            raise BenchError(f'{path}: `lines` must be "START:END" (1-based, inclusive), not {spec!r}') from None
        count = len(source.splitlines())
        if not 1 <= lines[0] <= lines[1] <= count:
            raise BenchError(f"{path}: `lines` {spec} is outside the {count} lines of {data['file']}")
    return Task(
        name=folder.name,
        folder=folder,
        file=data["file"],
        instruction=data["instruction"].strip(),
        lines=lines,
        kind=data["kind"],
        language=data["language"],
        source=source,
        expected=expected,
    )


def load_tasks(folder: Path, names: Iterable[str] | None = None) -> list[Task]:
    if not folder.is_dir():
        raise BenchError(f"the task folder {folder} does not exist")
    available = sorted(p.name for p in folder.iterdir() if (p / "task.toml").is_file())
    if not available:
        raise BenchError(f"{folder} holds no tasks (folders with a task.toml; see benchmarks/tasks/README.md)")
    wanted = list(dict.fromkeys(names or []))
    unknown = [n for n in wanted if n not in available]
    if unknown:
        raise BenchError(f"no task named {', '.join(unknown)} in {folder} (there are: {', '.join(available)})")
    return [load_task(folder / name) for name in (wanted or available)]


# -- runs ---------------------------------------------------------------------------------------


@dataclass
class Run:
    task: str
    mode: str  # "prediction" | "baseline"
    repetition: int
    first: bool  # ran first in its pair
    backend: str
    outcome: str  # "edit" | "unchanged" | "refused" | "error"
    message: str = ""
    stats: dict[str, Any] | None = None
    output: str | None = None  # the new region, or the raw answer when it was refused
    matches_expected: bool | None = None
    expected_similarity: float | None = None

    def value(self, key: str) -> Any:
        return (self.stats or {}).get(key)

    @property
    def latency_ms(self) -> float | None:
        return self.value("latency_ms") if self.stats else None

    @property
    def useful_tokens(self) -> int | None:
        """Output tokens, as the server's stats count them (rejected prediction tokens billed by OpenAI left out)."""
        if self.stats is None:
            return None
        return RefactorStats.from_dict(self.stats).useful_tokens()

    @property
    def effective_tokens_per_s(self) -> float | None:
        """Output tokens the user got ÷ the whole latency (first token included)."""
        tokens, latency = self.useful_tokens, self.latency_ms
        if tokens is None or not latency:
            return None
        return tokens / (latency / 1000)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["effective_tokens_per_s"] = self.effective_tokens_per_s
        return data


@dataclass
class Pair:
    task: str
    repetition: int
    prediction: Run
    baseline: Run

    @property
    def speedup(self) -> float | None:
        a, b = self.prediction.latency_ms, self.baseline.latency_ms
        return b / a if a and b else None

    @property
    def same_text(self) -> bool | None:
        p, b = self.prediction, self.baseline
        if p.output is None or b.output is None:
            return None
        return (p.outcome == "refused") == (b.outcome == "refused") and p.output == b.output

    @property
    def common_prefix_chars(self) -> int | None:
        """How far the two answers agree, in characters (they should agree all the way)."""
        if self.prediction.output is None or self.baseline.output is None:
            return None
        a, b = self.prediction.output, self.baseline.output
        return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "repetition": self.repetition,
            "speedup": self.speedup,
            "same_text": self.same_text,
            "common_prefix_chars": self.common_prefix_chars,
        }


@dataclass
class Plan:
    config: Config
    backend: BackendConfig
    baseline: BackendConfig  # the same as `backend` for OpenAI-type backends
    tasks: list[Task]
    repeat: int
    max_tokens: int

    @property
    def baseline_is_other_backend(self) -> bool:
        return self.baseline.name != self.backend.name


def make_plan(
    config: Config,
    backend_name: str | None,
    baseline_name: str | None,
    tasks: list[Task],
    repeat: int,
    max_tokens: int = 0,
) -> Plan:
    """Check that the comparison makes sense before anything is sent."""
    if repeat < 1:
        raise BenchError("--repeat must be at least 1")
    if max_tokens < 0:
        raise BenchError("--max-tokens must be 0 (from the region size) or more")
    try:
        backend = config.backend(backend_name)
        baseline = config.backend(baseline_name) if baseline_name else backend
    except ConfigError as exc:
        raise BenchError(str(exc)) from None
    if backend.type in LOCAL_TYPES and not baseline_name:
        raise BenchError(
            f"the backend '{backend.name}' is a {backend.type} server: its speculative decoding is a server setting, "
            "so 'without prediction' needs --baseline-backend NAME, a backend serving the same model without "
            "speculative decoding (for the local pair of benchmarks/local_vllm.sh: --baseline-backend local-plain)"
        )
    if baseline_name and baseline.name == backend.name and backend.type in LOCAL_TYPES:
        raise BenchError(
            f"--baseline-backend must be another backend than '{backend.name}': the same {backend.type} server "
            "speculates in both modes"
        )
    if backend.prediction == "never":
        raise BenchError(
            f"the backend '{backend.name}' has prediction = \"never\": there is nothing to compare; "
            'set it to "auto" or pick another backend'
        )
    refactor = dataclasses.replace(
        config.refactor, temperature=0.0, max_tokens=max_tokens or config.refactor.max_tokens
    )
    return Plan(dataclasses.replace(config, refactor=refactor), backend, baseline, tasks, repeat, max_tokens)


def _similarity(a: str, b: str) -> float:
    return round(difflib.SequenceMatcher(None, a.splitlines(), b.splitlines(), autojunk=False).ratio(), 3)


async def run_one(
    engine: Engine,
    plan: Plan,
    task: Task,
    mode: str,
    repetition: int,
    first: bool,
    on_progress: Callable[[Progress], None] | None,
) -> Run:
    backend = plan.backend if mode == "prediction" else plan.baseline
    request = task.request(backend.name, None if mode == "prediction" else False)
    run = Run(task.name, mode, repetition, first, backend.name, "error")
    try:
        result = await engine.refactor(request, plan.config, on_progress)
    except RefactorError as exc:
        run.message = str(exc)
        if exc.stats is not None:
            run.stats = exc.stats.to_dict()
            run.outcome = "refused"
            run.output = exc.output
        return run
    run.stats = result.stats.to_dict()
    run.outcome = "edit" if result.edits else "unchanged"
    run.output = result.new_region
    run.matches_expected = result.new_text == task.expected
    run.expected_similarity = _similarity(result.new_region, task.expected_region())
    return run


async def warm_up(engine: Engine, plan: Plan) -> None:
    """One tiny untimed request per backend: connections open, lazy initialisation done, and a
    backend that is down is reported before the first measurement."""
    from .backends import BackendError, StreamRequest

    seen = []
    for backend in (plan.backend, plan.baseline):
        if backend.name in seen:
            continue
        seen.append(backend.name)
        request = StreamRequest([{"role": "user", "content": "Reply with the word: ok"}], None, 1, 0.0)
        try:
            await engine.stream(backend, plan.config.refactor, request)
        except BackendError as exc:
            raise BenchError(str(exc)) from None


def schedule(plan: Plan) -> list[tuple[int, Task, tuple[str, str]]]:
    """(repetition, task, mode order) in running order; the first mode alternates task by task and
    repetition by repetition."""
    order = []
    for repetition in range(plan.repeat):
        for index, task in enumerate(plan.tasks):
            modes = ("prediction", "baseline") if (repetition + index) % 2 == 0 else ("baseline", "prediction")
            order.append((repetition, task, modes))
    return order


async def run_bench(engine: Engine, plan: Plan, progress: ProgressDisplay | None = None) -> list[Pair]:
    pairs: list[Pair] = []
    for repetition, task, modes in schedule(plan):
        runs: dict[str, Run] = {}
        for position, mode in enumerate(modes):
            if progress is not None:
                progress.begin(task.name, mode, repetition)
            run = await run_one(
                engine, plan, task, mode, repetition, position == 0, progress.on_chars if progress is not None else None
            )
            runs[mode] = run
            if progress is not None:
                progress.done(run)
            if mode == "prediction" and run.stats is not None and run.value("prediction_via") == "off":
                notes = "; ".join(run.value("notes") or [])
                raise BenchError(
                    f"the backend '{plan.backend.name}' ran without the prediction ({notes or 'prediction is off'}), "
                    "so there is nothing to compare"
                )
        pairs.append(Pair(task.name, repetition, runs["prediction"], runs["baseline"]))
    return pairs


# -- what the servers say about themselves --------------------------------------------------------


def _origin(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}"


async def _get(url: str, backend: BackendConfig, timeout_s: float = 3.0, auth: bool = True) -> Any:
    import httpx

    from .config import api_key

    headers = dict(backend.headers)
    try:
        key = api_key(backend) if auth else None
    except ConfigError:
        key = None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    async with httpx.AsyncClient(verify=backend.verify_tls, timeout=timeout_s, follow_redirects=False) as client:
        response = await client.get(url, headers=headers)
        response.raise_for_status()
        if "json" in response.headers.get("content-type", ""):
            return response.json()
        return response.text


async def describe_server(backend: BackendConfig) -> dict[str, Any]:
    """What the server tells about itself, best effort: the model's entry, vLLM's version and whether
    its /metrics shows speculative decoding."""
    from . import metrics

    info: dict[str, Any] = {
        "name": backend.name,
        "type": backend.type,
        "base_url": backend.base_url,
        "model": backend.model,
    }
    try:
        models = await _get(backend.base_url.rstrip("/") + "/models", backend)
        entries = models.get("data", []) if isinstance(models, dict) else []
        for entry in entries:
            if isinstance(entry, dict) and entry.get("id") == backend.model:
                info["model_info"] = {
                    k: entry[k] for k in ("id", "root", "owned_by", "max_model_len") if entry.get(k) is not None
                }
    except Exception as exc:
        info["models_error"] = f"{type(exc).__name__}: {exc}"[:200]
    url = metrics.metrics_url(backend)
    if backend.type == "vllm":
        try:
            version = await _get(_origin(backend.base_url) + "/version", backend, auth=False)
            if isinstance(version, dict) and version.get("version"):
                info["server_version"] = f"vLLM {version['version']}"
        except Exception:
            pass
    if url:
        info["metrics_url"] = url
        try:
            text = await metrics.fetch_metrics_text(url, backend.verify_tls)
            values = metrics.parse_prometheus(text)
            info["speculative_decoding"] = (
                "on (speculative-decoding counters on /metrics)"
                if metrics.DRAFTED in values
                else "off (no speculative-decoding counters on /metrics)"
            )
            info["metrics_counters"] = {
                k: values[k] for k in (metrics.ACCEPTED, metrics.DRAFTED, metrics.FINISHED) if k in values
            }
            info["metrics_info"] = _info_labels(text)
        except Exception as exc:
            info["metrics_error"] = f"{type(exc).__name__}: {exc}"[:200]
    return info


INFO_LABELS = ("enable_prefix_caching", "kv_cache_size_tokens", "block_size", "cache_dtype")


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
                out[key.strip()] = value.strip('"')
    return out


def machine() -> dict[str, Any]:
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
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory_gib,
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
    }


# -- summaries ------------------------------------------------------------------------------------


def _median(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.median(present) if present else None


def _spread(values: Iterable[float | int | None]) -> dict[str, float] | None:
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    return {"median": statistics.median(present), "min": min(present), "max": max(present)}


def summarize_mode(runs: list[Run]) -> dict[str, Any]:
    measured = [r for r in runs if r.stats is not None]
    accepted = [r.value("accepted_prediction_tokens") for r in measured]
    rejected = [r.value("rejected_prediction_tokens") for r in measured]
    reported = [(a, b) for a, b in zip(accepted, rejected, strict=True) if a is not None and b is not None]
    total_accepted = sum(a for a, _ in reported) if reported else None
    total_rejected = sum(b for _, b in reported) if reported else None
    rate = None
    if total_accepted is not None and total_rejected is not None and total_accepted + total_rejected > 0:
        rate = total_accepted / (total_accepted + total_rejected)
    return {
        "runs": len(runs),
        "measured": len(measured),
        "errors": sum(1 for r in runs if r.outcome == "error"),
        "refused": sum(1 for r in runs if r.outcome == "refused"),
        "latency_ms": _spread(r.latency_ms for r in measured),
        "ttft_ms": _median(r.value("ttft_ms") for r in measured),
        "completion_tokens": _median(r.value("completion_tokens") for r in measured),  # as billed
        "output_tokens": _median(r.useful_tokens for r in measured),  # OpenAI's rejected tokens left out
        "effective_tokens_per_s": _median(r.effective_tokens_per_s for r in measured),
        "generation_tokens_per_s": _median(r.value("tokens_per_s") for r in measured),
        "accepted_prediction_tokens": total_accepted,
        "rejected_prediction_tokens": total_rejected,
        "acceptance_rate": rate,
        "acceptance_reported_runs": len(reported),
        "acceptance_sources": sorted({r.value("acceptance_source") for r in measured if r.value("acceptance_source")}),
        "matches_expected": sum(1 for r in runs if r.matches_expected),
        "expected_similarity": _median(r.expected_similarity for r in runs),
    }


def _distinct(runs: list[Run], task: str) -> int:
    return len({r.output for r in runs if r.task == task and r.output is not None})


def summarize_pairs(pairs: list[Pair]) -> dict[str, Any]:
    ratios = [p.speedup for p in pairs if p.speedup is not None]
    same = [p.same_text for p in pairs]
    measured = [p for p in pairs if p.speedup is not None]
    total_with = sum(p.prediction.latency_ms or 0 for p in measured)
    total_without = sum(p.baseline.latency_ms or 0 for p in measured)
    return {
        "pairs": len(pairs),
        "speedup": statistics.median(ratios) if ratios else None,
        "speedup_min": min(ratios) if ratios else None,
        "speedup_max": max(ratios) if ratios else None,
        "total_time_ratio": total_without / total_with if total_with else None,
        "same_text_pairs": sum(1 for s in same if s),
        "different_text_pairs": sum(1 for s in same if s is False),
        "differ_after_chars": sorted(p.common_prefix_chars for p in pairs if p.same_text is False),
        # The same mode's answers to the same task across repetitions: one, when the server is deterministic.
        "distinct_outputs": {
            mode: max((_distinct(runs, task) for task in {r.task for r in runs}), default=0)
            for mode, runs in (("prediction", [p.prediction for p in pairs]), ("baseline", [p.baseline for p in pairs]))
        },
        "prediction": summarize_mode([p.prediction for p in pairs]),
        "baseline": summarize_mode([p.baseline for p in pairs]),
    }


def build_report(plan: Plan, pairs: list[Pair], meta: dict[str, Any]) -> dict[str, Any]:
    tasks = []
    for task in plan.tasks:
        mine = [p for p in pairs if p.task == task.name]
        tasks.append(
            {
                "name": task.name,
                "kind": task.kind,
                "language": task.language,
                "lines": f"{task.lines[0]}:{task.lines[1]}" if task.lines else None,
                "region_chars": task.span()[1] - task.span()[0],
                **summarize_pairs(mine),
            }
        )
    runs = [run.to_dict() for pair in pairs for run in (pair.prediction, pair.baseline)]
    return {
        "meta": meta,
        "tasks": tasks,
        "total": summarize_pairs(pairs),
        "pairs": [pair.to_dict() for pair in pairs],
        "runs": runs,
    }


# -- rendering ------------------------------------------------------------------------------------


def _seconds(spread: dict[str, float] | None) -> str:
    if spread is None:
        return "–"
    median, low, high = (spread[k] / 1000 for k in ("median", "min", "max"))
    return f"{median:.2f} ({low:.2f}–{high:.2f})"


def _num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _both(a: float | None, b: float | None, digits: int = 0) -> str:
    return f"{_num(a, digits)} / {_num(b, digits)}"


def _acceptance(mode: dict[str, Any]) -> str:
    if mode["accepted_prediction_tokens"] is None:
        return "not reported"
    rate = mode["acceptance_rate"]
    rate_text = f" ({rate:.0%})" if rate is not None else ""
    return f"{mode['accepted_prediction_tokens']} / {mode['rejected_prediction_tokens']}{rate_text}"


def _same(row: dict[str, Any]) -> str:
    differ, same = row["different_text_pairs"], row["same_text_pairs"]
    if differ:
        after = row["differ_after_chars"]
        where = f"{after[0]}" if after[0] == after[-1] else f"{after[0]}–{after[-1]}"
        return f"DIFFERENT {differ}/{row['pairs']} (after {where} chars)"
    if same == row["pairs"]:
        return "yes"
    return f"yes {same}/{row['pairs']}" if same else "–"


def _expected(row: dict[str, Any]) -> str:
    pairs = row["pairs"]
    return f"{row['prediction']['matches_expected']}/{pairs} · {row['baseline']['matches_expected']}/{pairs}"


def _speedup(row: dict[str, Any]) -> str:
    return "–" if row["speedup"] is None else f"{row['speedup']:.2f}×"


COLUMNS = (
    "task",
    "kind",
    "with prediction, s",
    "without, s",
    "speedup",
    "TTFT ms (with / without)",
    "output tok (with / without)",
    "tok/s (with / without)",
    "accepted / rejected",
    "same text",
    "matches expected (with · without)",
)


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    rows = []
    for row in [*report["tasks"], {"name": "all tasks", "kind": "", **report["total"]}]:
        p, b = row["prediction"], row["baseline"]
        rows.append(
            [
                row["name"],
                KIND_LABELS.get(row["kind"], row["kind"]),
                _seconds(p["latency_ms"]),
                _seconds(b["latency_ms"]),
                _speedup(row),
                _both(p["ttft_ms"], b["ttft_ms"]),
                _both(p["output_tokens"], b["output_tokens"]),
                _both(p["effective_tokens_per_s"], b["effective_tokens_per_s"], 1),
                _acceptance(p),
                _same(row),
                _expected(row),
            ]
        )
    return rows


def header_lines(report: dict[str, Any]) -> list[str]:
    meta = report["meta"]
    lines = [f"refactor-lsp bench · {meta['date']} · refactor-lsp {meta['refactor_lsp']}"]
    for role in ("backend", "baseline"):
        server = meta.get(role)
        if server is None:
            continue
        label = "with prediction" if role == "backend" else "without"
        text = f"{label}: {server['name']} ({server['type']}) {server['base_url']} model {server['model']}"
        extras = []
        if server.get("server_version"):
            extras.append(server["server_version"])
        if (server.get("model_info") or {}).get("max_model_len"):
            extras.append(f"max_model_len {server['model_info']['max_model_len']}")
        if server.get("speculative_decoding"):
            extras.append(f"speculative decoding {server['speculative_decoding']}")
        cache = server.get("metrics_info") or {}
        if cache.get("enable_prefix_caching"):
            extras.append(f"prefix caching {'on' if cache['enable_prefix_caching'] == 'True' else 'off'}")
        lines.append(text + (f" — {'; '.join(extras)}" if extras else ""))
    if meta.get("baseline") is None:
        lines.append("without: the same backend, without the `prediction` field")
    if meta.get("note"):
        lines.append(f"note: {meta['note']}")
    lines.append(
        f"tasks: {len(report['tasks'])} ({', '.join(t['name'] for t in report['tasks'])}) · repetitions: "
        f"{meta['repetitions']} · temperature 0 · max tokens: {meta['max_tokens'] or 'from the region size'}"
    )
    m = meta["machine"]
    lines.append(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB · {m['os']} · Python {m['python']}")
    lines.append(f"order: {meta['order']}")
    counted = meta.get("metrics_during_bench")
    if counted:
        lines.append(
            f"/metrics during the bench ({counted['url']}): {counted['drafted']:.0f} draft tokens, "
            f"{counted['accepted']:.0f} accepted ({counted['rate']:.0%})"
        )
    return lines


def footer_lines(report: dict[str, Any]) -> list[str]:
    total = report["total"]
    lines = [
        "speedup: latency without ÷ latency with prediction, median over pairs"
        + (
            f" (range {total['speedup_min']:.2f}–{total['speedup_max']:.2f}; total time ratio "
            f"{total['total_time_ratio']:.2f})"
            if total["speedup"] is not None
            else ""
        )
        + ". Latency: median (min–max) over repetitions; TTFT: time to first token; output tokens: as the "
        "server counts them, less the rejected prediction tokens OpenAI bills as output; tok/s: output tokens ÷ "
        "latency; accepted / rejected: prediction (or draft) tokens, summed.",
    ]
    sources = sorted(set(total["prediction"]["acceptance_sources"]))
    if sources:
        lines.append(f"acceptance read from: {', '.join(sources)}.")
    differ = [t["name"] for t in report["tasks"] if t["different_text_pairs"]]
    if differ:
        lines.append(
            "WARNING: the two modes produced different text for: " + ", ".join(differ) + " (they should not at "
            "temperature 0; the speedup compares unlike outputs there)."
        )
        unsteady = [mode for mode, n in total["distinct_outputs"].items() if n > 1]
        if unsteady:
            lines.append(
                "The same mode also answered the same task differently across repetitions ("
                + " and ".join("with prediction" if m == "prediction" else "without" for m in unsteady)
                + "): the server is not deterministic at temperature 0 (likely rounding: different batch shapes, "
                "from speculative verification or prefix-cache hits, give slightly different logits, and a tiny "
                "model's close calls flip), so not all of the difference comes from the prediction."
            )
    refused = total["prediction"]["refused"] + total["baseline"]["refused"]
    errors = total["prediction"]["errors"] + total["baseline"]["errors"]
    if refused:
        lines.append(
            f"{refused} answers were measured but not applicable (cut off at max tokens, or not code); their "
            "timing counts, their text is compared raw."
        )
    if errors:
        lines.append(f"{errors} runs failed and are left out; see the JSON for the messages.")
    lines.append(
        "matches expected: answers equal to the task's expected file, a note on the model, not a quality "
        "measure of refactor-lsp."
    )
    return lines


def render_terminal(report: dict[str, Any]) -> str:
    rows = [list(COLUMNS), *table_rows(report)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]

    def line(cells: list[str]) -> str:
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(cells)

    out = [*header_lines(report), "", line(rows[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows[1:-1]]
    out += ["  ".join("-" * w for w in widths), line(rows[-1]), "", *footer_lines(report)]
    return "\n".join(out) + "\n"


def render_markdown(report: dict[str, Any]) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    rows = table_rows(report)
    rows[-1] = [f"**{c}**" if c and c != "–" else c for c in rows[-1]]
    out = [f"- {esc(line)}" for line in header_lines(report)]
    if report["meta"].get("command"):
        out.insert(0, f"Command: `{report['meta']['command']}`\n")
    out += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(COLUMNS) - 2)) + "|"]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    for line in footer_lines(report):
        out += ["", line]
    return "\n".join(out) + "\n"


# -- progress -------------------------------------------------------------------------------------


class ProgressDisplay:
    """A progress bar on a terminal; plain lines otherwise (logs, CI)."""

    def __init__(self, total: int, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.done_count = 0
        self.started = time.monotonic()
        self.current = ""
        self.last_draw = 0.0

    def _bar(self, extra: str = "") -> None:
        width = 24
        filled = int(width * self.done_count / max(self.total, 1))
        elapsed = time.monotonic() - self.started
        eta = ""
        if self.done_count:
            eta = f" · ~{elapsed / self.done_count * (self.total - self.done_count):.0f} s left"
        text = f"[{'█' * filled}{'░' * (width - filled)}] {self.done_count}/{self.total}{extra}{eta} · {self.current}"
        columns = self._columns()
        self.stream.write("\r" + text[:columns].ljust(columns))
        self.stream.flush()

    @staticmethod
    def _columns() -> int:
        """One less than the terminal's width, so the line never wraps and `\r` can redraw it."""
        return max(shutil.get_terminal_size((100, 20)).columns - 1, 20)

    def begin(self, task: str, mode: str, repetition: int) -> None:
        label = "with prediction" if mode == "prediction" else "without"
        self.current = f"{task} ({label}, #{repetition + 1})"
        if self.tty:
            self._bar()

    def on_chars(self, progress: Progress) -> None:
        now = time.monotonic()
        if self.tty and now - self.last_draw > 0.2:
            self.last_draw = now
            self._bar(f" · {progress.generated_chars}/{progress.predicted_chars} chars")

    def done(self, run: Run) -> None:
        self.done_count += 1
        if self.tty:
            self._bar()
            return
        latency = f"{run.latency_ms / 1000:.2f} s" if run.latency_ms is not None else "no timing"
        tokens = run.value("completion_tokens")
        detail = f"{latency}, {tokens} tok" if tokens is not None else latency
        if run.outcome in ("refused", "error"):
            # A whole reason, or as many whole words as fit: never a word cut in half.
            detail += f" — {run.outcome}: {textwrap.shorten(run.message, 160, placeholder=' …')}"
        self.stream.write(f"bench: {self.done_count}/{self.total} {self.current}: {detail}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * self._columns() + "\r")
            self.stream.flush()


# -- the command ----------------------------------------------------------------------------------


def _command(args: argparse.Namespace) -> str:
    parts = ["refactor-lsp", "bench"]
    for flag in ("backend", "baseline_backend", "tasks"):
        if getattr(args, flag, None):
            parts += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    for name in args.task or []:
        parts += ["--task", name]
    parts += ["--repeat", str(args.repeat)]
    if args.max_tokens:
        parts += ["--max-tokens", str(args.max_tokens)]
    if args.note:
        parts += ["--note", args.note]
    for flag in ("markdown", "json"):
        if getattr(args, flag, None):
            parts += [f"--{flag}", str(getattr(args, flag))]
    return shlex.join(parts)


async def _metrics_counters(backend: BackendConfig) -> tuple[str, dict[str, float]] | None:
    from . import metrics

    url = metrics.metrics_url(backend)
    if url is None:
        return None
    try:
        return url, await metrics.fetch_metrics(url, backend.verify_tls)
    except Exception:
        return None


def _write(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


async def run_bench_cli(args: argparse.Namespace) -> int:
    from .cli import load_cli_config

    def error(message: str) -> None:
        print(f"refactor-lsp: {message}", file=sys.stderr)

    try:
        tasks_dir = Path(args.tasks) if args.tasks else default_tasks_dir()
        if tasks_dir is None:
            raise BenchError("no task folder found; give one with --tasks DIR (see benchmarks/tasks/README.md)")
        tasks = load_tasks(tasks_dir, args.task)
        loaded = load_cli_config(args.config, Path.cwd())
        plan = make_plan(loaded.config, args.backend, args.baseline_backend, tasks, args.repeat, args.max_tokens)
    except (BenchError, ConfigError) as exc:
        error(str(exc))
        return EXIT_USAGE

    engine = Engine()
    try:
        await warm_up(engine, plan)
        backend_info = await describe_server(plan.backend)
        baseline_info = await describe_server(plan.baseline) if plan.baseline_is_other_backend else None
        before = await _metrics_counters(plan.backend)
        progress = ProgressDisplay(len(tasks) * plan.repeat * 2)
        started = time.monotonic()
        try:
            pairs = await run_bench(engine, plan, progress)
        finally:
            progress.close()
        after = await _metrics_counters(plan.backend)
    except BenchError as exc:
        error(str(exc))
        return EXIT_FAILED
    finally:
        await engine.close()

    meta: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "refactor_lsp": __version__,
        "command": _command(args),
        "backend": backend_info,
        "baseline": baseline_info,
        "tasks_dir": str(tasks_dir),
        "repetitions": plan.repeat,
        "max_tokens": plan.max_tokens,
        "temperature": 0.0,
        "order": "pairs alternate which mode runs first, task by task and repetition by repetition "
        "(ABAB..., then BABA...); one untimed warm-up request per backend first",
        "note": args.note or "",
        "machine": machine(),
        "wall_s": round(time.monotonic() - started, 1),
    }
    if before and after:
        from . import metrics

        url, b = before
        _, a = after
        if metrics.DRAFTED in a and metrics.DRAFTED in b:
            drafted = a[metrics.DRAFTED] - b[metrics.DRAFTED]
            accepted = a.get(metrics.ACCEPTED, 0.0) - b.get(metrics.ACCEPTED, 0.0)
            meta["metrics_during_bench"] = {
                "url": url,
                "drafted": drafted,
                "accepted": accepted,
                "rate": accepted / drafted if drafted else 0.0,
            }
    report = build_report(plan, pairs, meta)
    sys.stdout.write(render_terminal(report))
    if args.markdown:
        _write(args.markdown, render_markdown(report))
        print(f"wrote {args.markdown}", file=sys.stderr)
    if args.json:
        _write(args.json, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    if report["total"]["speedup"] is None:
        error("no pair of runs was measured in both modes; see the messages above")
        return EXIT_FAILED
    errors = report["total"]["prediction"]["errors"] + report["total"]["baseline"]["errors"]
    return EXIT_FAILED if errors else EXIT_OK
