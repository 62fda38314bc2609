"""What the bench would measure against the loopback backend with a given profile, in simulated time:
no server, no sleeping.

Every task goes through the engine's own planning, as `bench` sends it (the prompt of its edit format,
the prediction field or not, the token limit, and `auto`'s choice by the region's size), is answered
as `corpus_responder` answers it (hunks, in the form the prompt asks for, when it asks for them:
`model_answer`; `Simulator`'s `hunks_form` is the config's `refactor.hunks_form`), and is
paced by `pacing.pace`, the function the fake sleeps through. The passes become a run's stats as the
engine would read them from the fake (one pass = `PASS_MS`; every ratio is independent of it), and the
bench's own code summarizes them: the speed-up is a `Pair`'s, the edit formats' table is
`summarize_formats`'. What this leaves out is the HTTP and parsing overhead of a real run, which
`benchmarks/formats.sh` measures (benchmarks/README.md, "Backend profiles").

- `calibrate(profile)`: the speed-up (median over the tasks of latency without ÷ with the prediction)
  and the acceptance (accepted ÷ drafted, over all tasks) on the corpus, to hold against the figures
  the profile is calibrated to;
- `Simulator(profile, kind, tasks).runs(modes)`: the runs of one bench, for `bench.summarize_formats`;
- `crossover_lines` and `default_threshold`: where hunks overtakes the region format, and the default
  `hunks_min_lines` that makes of it (`edit_format.DEFAULT_HUNKS_MIN_LINES`).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from ..bench.runs import Mode, Pair, Run
from ..bench.setup import MODE_REQUESTS, SizeRuleOnly
from ..bench.tasks import Task, default_tasks_dir, load_tasks
from ..config.layers import Layer
from ..config.load import build_config
from ..config.schema import Config, HunksForm
from ..pipeline.attempt import Attempt, decide_format, make_attempt
from ..pipeline.engine import Engine
from ..pipeline.plan import Plan
from ..stats.measured import RefactorStats, measured
from .pacing import Paced, pace
from .profiles import PROFILES, BackendProfile
from .responders import instruction_of, model_answer, region_of

PASS_MS = 1.0  # one simulated pass, in the stats' milliseconds
BACKEND = "sim"


def simulation_arguments(description: str) -> argparse.ArgumentParser:
    """The options every simulation script takes: which profiles, and the form of hunks answers."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--profile", action="append", choices=list(PROFILES), help="only these (default: all)")
    parser.add_argument(
        "--hunks-form",
        choices=get_args(HunksForm),
        default="search-replace",
        help="how hunks answers are written: refactor.hunks_form (default: search-replace)",
    )
    return parser


def sim_config(kind: str, hunks_min_lines: int = 0, hunks_form: HunksForm = "search-replace") -> Config:
    """A config with one backend of the fake's kind (never contacted), as the bench's would be."""
    refactor: dict[str, Any] = {"hunks_form": hunks_form}
    if hunks_min_lines:
        refactor["hunks_min_lines"] = hunks_min_lines
    data = {
        "default_backend": BACKEND,
        "backends": {BACKEND: {"type": kind, "base_url": "http://127.0.0.1:9/v1", "model": "fake-model"}},
        "refactor": refactor,
    }
    return build_config([Layer("calibration", data)])


def first_attempt(engine: Engine, plan: Plan) -> Attempt:
    """The first attempt the engine makes for this plan on a backend whose window is unknown."""
    return make_attempt(plan, "first", 0, decide_format(plan, engine.formats))


def request_of(attempt: Attempt) -> dict[str, Any]:
    """The chat completion the engine sends for this attempt, as the fake receives it."""
    prompt = attempt.prompt
    body: dict[str, Any] = {"model": "fake-model", "messages": prompt.messages, "max_tokens": attempt.max_tokens}
    if attempt.route.prediction == "field":
        body["prediction"] = {"type": "content", "content": prompt.prediction}
    return body


def stats_of(
    paced: Paced, plan: Plan, attempt: Attempt, request: dict[str, Any], kind: str, speculation: bool
) -> RefactorStats:
    """The stats the engine reads from the fake's stream for this answer (its usage, as each kind reports)."""
    tokens = paced.tokens
    sim = paced.sim
    completion, accepted, rejected, source = tokens, None, None, None
    if kind == "openai" and "prediction" in request:
        accepted, rejected, source = sim.accepted, sim.rejected, "usage"
        completion += sim.rejected  # billed, as OpenAI bills rejected prediction tokens
    elif kind != "openai" and speculation:
        accepted, rejected, source = sim.accepted, sim.rejected, f"{kind}-simulated"
    stats = RefactorStats(
        backend=BACKEND,
        model="fake-model",
        prediction="prediction" in request or (kind != "openai" and speculation),
        prediction_via=attempt.route.prediction,
        region_lines=plan.region.lines,
        edit_format=attempt.edit_format.format,
        format_reason=attempt.edit_format.reason,
        latency_ms=paced.latency_passes * PASS_MS,
        ttft_ms=paced.ttft_passes * PASS_MS,
        completion_tokens=completion,
        prompt_tokens=paced.prompt_tokens,
        accepted_prediction_tokens=accepted,
        rejected_prediction_tokens=rejected,
        acceptance_source=source,
        output_chars=sum(len(step) for step in paced.steps),
    )
    return measured(stats)


class Simulator:
    """One profile on one kind of fake, answering tasks as a perfect model (each task's region becomes its
    expected region, as `corpus_responder` answers): runs in simulated time. The tasks may be the corpus
    or made up (benchmarks/formats_crossover.py). `hunks_min_lines`: the config's (0: `auto`'s default
    for how this kind gets the prediction); `hunks_form`: the config's `refactor.hunks_form`, the form
    the prompt asks a hunks answer in, and so the form the model answers in (`model_answer`)."""

    def __init__(
        self,
        profile: BackendProfile,
        kind: str,
        tasks: Sequence[Task],
        hunks_min_lines: int = 0,
        hunks_form: HunksForm = "search-replace",
    ) -> None:
        if kind not in profile.kinds:
            raise ValueError(f"the profile {profile.name} is for a {' or '.join(profile.kinds)} backend, not {kind}")
        self.profile = profile
        self.kind = kind
        self.tasks = tuple(tasks)
        self.hunks_min_lines = hunks_min_lines
        self.hunks_form = hunks_form
        # By region and instruction: made-up tasks may give one region several edits.
        self.answers = {(t.source[slice(*t.span())], t.instruction.strip()): t.expected_region() for t in self.tasks}

    def responder(self, request: dict[str, Any]) -> str:
        messages = request.get("messages", [])
        return self.answers[(region_of(messages), instruction_of(messages))]

    def run(self, task: Task, mode: Mode, engine: Engine, config: Config) -> Run:
        prediction, edit_format = MODE_REQUESTS[mode]
        plan = engine.plan(task.request(BACKEND, prediction, edit_format), config)
        attempt = first_attempt(engine, plan)
        request = request_of(attempt)
        # The bench's baseline for vLLM and llama.cpp is the same model served without speculation.
        speculation = not (mode == "baseline" and self.kind != "openai")
        answer = model_answer(request, self.responder)
        paced = pace(request, answer, self.kind, self.profile, speculation)
        stats = stats_of(paced, plan, attempt, request, self.kind, speculation)
        cut = paced.finish == "length"
        return Run(
            task.name,
            mode,
            0,
            False,
            BACKEND,
            "refused" if cut else "edit",
            "cut off at the token limit" if cut else "",
            stats=stats,
            matches_expected=not cut,
        )

    def runs(self, modes: Sequence[Mode]) -> list[Run]:
        """Every task in every mode, once (the simulation is deterministic: a repetition is the same run)."""
        engine = Engine(SizeRuleOnly())
        config = sim_config(self.kind, self.hunks_min_lines, self.hunks_form)
        return [self.run(task, mode, engine, config) for task in self.tasks for mode in modes]


def corpus_tasks(tasks_dir: Path | None = None) -> tuple[Path, list[Task]]:
    found = tasks_dir or default_tasks_dir()
    if found is None:
        raise FileNotFoundError("no bench corpus: pass its folder (benchmarks/tasks)")
    return found, load_tasks(found)


@dataclass(frozen=True)
class Calibration:
    profile: str
    kind: str
    speedup: float  # median over the tasks of latency without ÷ with the prediction
    speedups: dict[str, float]  # per task
    acceptance: float  # accepted ÷ drafted over every task's run with the prediction


def calibrate(profile: BackendProfile, kind: str | None = None, tasks_dir: Path | None = None) -> Calibration:
    """The bench's two figures for `profile` on the corpus (region format, with and without the prediction)."""
    _, tasks = corpus_tasks(tasks_dir)
    chosen = kind or profile.kinds[0]
    runs = Simulator(profile, chosen, tasks).runs(("prediction", "baseline"))
    by_mode = {(r.task, r.mode): r for r in runs}
    pairs = [Pair(t.name, 0, by_mode[(t.name, "prediction")], by_mode[(t.name, "baseline")]) for t in tasks]
    speedups = {p.task: p.speedup for p in pairs if p.speedup is not None}
    accepted = sum(r.stats.accepted_prediction_tokens or 0 for r in runs if r.stats and r.mode == "prediction")
    rejected = sum(r.stats.rejected_prediction_tokens or 0 for r in runs if r.stats and r.mode == "prediction")
    return Calibration(
        profile=profile.name,
        kind=chosen,
        speedup=statistics.median(speedups.values()),
        speedups=speedups,
        acceptance=accepted / (accepted + rejected) if accepted + rejected else 0.0,
    )


def crossover_lines(runs: Sequence[Run], tasks: Sequence[Task], against: Mode = "prediction") -> int | None:
    """The smallest region size (lines) from which hunks waited less than `against` (region + prediction,
    or region without it) on every task of that size or more; None when hunks lost on the largest."""
    waits = {(r.task, r.mode): r.waited_ms for r in runs}

    def hunks_faster(task: Task) -> bool:
        hunks, region = waits.get((task.name, "hunks")), waits.get((task.name, against))
        return hunks is not None and region is not None and hunks < region

    found = None
    for lines in sorted({t.region_lines for t in tasks}, reverse=True):
        if not all(hunks_faster(t) for t in tasks if t.region_lines == lines):
            break
        found = lines
    return found


def default_threshold(crossover: int) -> int:
    """A crossover as a default `hunks_min_lines`: to the nearest 50 lines, as finely as a corpus with a
    few tasks per size band can place it."""
    return max(50, round(crossover / 50) * 50)
