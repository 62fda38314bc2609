"""A bench's plan: the backends, the modes, the levels and the repetitions, checked before anything is
sent (`make_plan`), and how each mode's request is made.

With --edit-format the modes are the formats asked for (`region` gives two: with and without the
prediction), plus the region format without prediction in every case: the reference the ideal time
is measured from (`ideal`). `auto` decides by the region's size alone here (`SizeRuleOnly`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..backend.chat import LOCAL_SPECULATION_TYPES, prediction_mode
from ..config.schema import BackendConfig, Config, ConfigError, EditFormat
from ..formats.choice import FormatHistory
from ..stats.history import History
from .options import EDIT_FORMATS
from .runs import Mode
from .tasks import BenchError, Task

# How each mode's request is made: (the prediction override, the edit format).
MODE_REQUESTS: dict[Mode, tuple[bool | None, EditFormat]] = {
    "prediction": (None, "region"),
    "baseline": (False, "region"),
    "hunks": (None, "hunks"),
    "hunks-prediction": (True, "hunks"),  # True: the field even with hunks, where the plan leaves it out
    "auto": (None, "auto"),
}


class SizeRuleOnly(FormatHistory):
    """An engine's format history that never has an opinion, so `auto` decides by the region's size.

    The bench measures `auto` as a new user meets it: by `refactor.hunks_min_lines`. Its own runs
    would otherwise teach the engine (after three of each format per region size), and `auto` would
    change its mind halfway through the run, in an order that depends on the schedule.
    """

    def __init__(self) -> None:
        super().__init__(tries=False)

    def medians(self, backend: str, region_lines: int) -> dict[str, tuple[float, float, int]] | None:
        return None


def max_concurrency() -> int:
    """The most requests the engine's HTTP clients can have open at once: ClientPool passes no limits of
    its own, so the OpenAI SDK's defaults hold. Above it, requests would queue in the client, unseen."""
    from openai import DEFAULT_CONNECTION_LIMITS

    return DEFAULT_CONNECTION_LIMITS.max_connections or 1


@dataclass(frozen=True)
class BenchPlan:
    config: Config  # the user's, at temperature 0 and with the bench's max tokens
    backend: BackendConfig
    baseline: BackendConfig  # the same as `backend` for OpenAI-type backends
    tasks: tuple[Task, ...]
    repeat: int
    max_tokens: int  # 0: from the region size
    concurrency: tuple[int, ...] = (1,)  # requests at once, per level, lowest first
    edit_formats: tuple[str, ...] = ()  # --edit-format; empty: the region format with and without prediction
    # --record-history: every measured run is added to the refactor history, as a refactor of yours would
    # be, and `auto` learns from it; None (the default): a measurement leaves your history alone.
    record_to: History | None = None

    @property
    def under_load(self) -> bool:
        """--concurrency asked for something else than one request at a time: the report gets its load table."""
        return self.concurrency != (1,)

    @property
    def modes(self) -> tuple[Mode, ...]:
        """The modes each task runs in, in the report's order."""
        if not self.edit_formats:
            return ("prediction", "baseline")
        modes: list[Mode] = ["prediction"] if "region" in self.edit_formats else []
        modes.append("baseline")  # always: the reference the ideal time is measured from
        if "hunks" in self.edit_formats:
            modes.append("hunks")
        if "hunks+prediction" in self.edit_formats:
            modes.append("hunks-prediction")
        if "auto" in self.edit_formats:
            modes.append("auto")
        return tuple(modes)

    @property
    def runs(self) -> int:
        """Measured runs in all: every task, repetition and mode, at every level, N at a time."""
        return len(self.tasks) * self.repeat * len(self.modes) * sum(self.concurrency)

    @property
    def baseline_is_other_backend(self) -> bool:
        return self.baseline.name != self.backend.name


def make_plan(
    config: Config,
    backend_name: str | None,
    baseline_name: str | None,
    tasks: Sequence[Task],
    repeat: int,
    max_tokens: int = 0,
    concurrency: Sequence[int] = (1,),
    edit_formats: Sequence[str] = (),
) -> BenchPlan:
    """Check that the comparison makes sense before anything is sent."""
    if repeat < 1:
        raise BenchError("--repeat must be at least 1")
    if max_tokens < 0:
        raise BenchError("--max-tokens must be 0 (from the region size) or more")
    levels = tuple(sorted(set(concurrency)))
    if not levels or levels[0] < 1:
        raise BenchError("--concurrency takes whole numbers of 1 or more, separated by commas (like 1,2,4)")
    if levels[-1] > max_concurrency():
        raise BenchError(
            f"--concurrency {levels[-1]} is more than the {max_concurrency()} connections the HTTP client opens "
            "at once; the rest would wait in its queue, not load the server"
        )
    formats = tuple(f for f in EDIT_FORMATS if f in edit_formats)
    if formats and levels != (1,):
        raise BenchError(
            "--edit-format and --concurrency cannot be combined: the edit formats are compared one request at a "
            "time; run them as two benches"
        )
    try:
        backend = config.backend(backend_name)
        baseline = config.backend(baseline_name) if baseline_name else backend
    except ConfigError as exc:
        raise BenchError(str(exc)) from None
    if backend.type in LOCAL_SPECULATION_TYPES and not baseline_name:
        raise BenchError(
            f"the backend '{backend.name}' is a {backend.type} server: its speculative decoding is a server setting, "
            "so 'without prediction' needs --baseline-backend NAME, a backend serving the same model without "
            "speculative decoding (for the local pair of benchmarks/local_vllm.sh: --baseline-backend local-plain)"
        )
    if baseline_name and baseline.name == backend.name and backend.type in LOCAL_SPECULATION_TYPES:
        raise BenchError(
            f"--baseline-backend must be another backend than '{backend.name}': the same {backend.type} server "
            "speculates in both modes"
        )
    if "hunks+prediction" in formats and prediction_mode(backend, True, refused=False) != "field":
        raise BenchError(
            f"--edit-format hunks+prediction sends the prediction field, which the backend '{backend.name}' "
            f'({backend.type}, prediction = "{backend.prediction}") does not get; a vLLM or llama.cpp server '
            "drafts a hunks answer from the prompt already (the hunks mode)"
        )
    if backend.prediction == "never" and (not formats or "region" in formats):
        raise BenchError(
            f"the backend '{backend.name}' has prediction = \"never\": there is nothing to compare; "
            'set it to "auto" or pick another backend'
        )
    refactor = dataclasses.replace(
        config.refactor, temperature=0.0, max_tokens=max_tokens or config.refactor.max_tokens
    )
    return BenchPlan(
        dataclasses.replace(config, refactor=refactor),
        backend,
        baseline,
        tuple(tasks),
        repeat,
        max_tokens,
        levels,
        formats,
    )
