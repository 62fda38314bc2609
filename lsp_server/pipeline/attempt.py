"""One request of a refactor, an `Attempt`, and how each kind of attempt is made from the plan.

A `Plan` holds what does not change between a refactor's requests; an attempt holds what one request
sends: its edit format (decided here, once per attempt), its prompt fitted to the backend's context
window (`context_fit`), the answer's cap, and how the prediction travels. The engine's attempt loop
(`Engine.run`) sends an attempt, reads its outcome, and makes the next one here:

- `first`: the format asked, or `auto`'s choice (formats/choice.py); an automatic region format whose
  answer cannot fit the window is asked as hunks;
- `without prediction`: the backend refused the `prediction` field: the same request without it;
- `refit`: the backend refused the prompt as too long and named its window: fitted to that window,
  once per backend and format;
- `fallback`: the backend failed in a way another may serve, or the region cannot fit its window:
  the next backend of the chain;
- `region retry`: `auto` chose hunks and the answer's blocks did not apply: the region format on the
  backend that answered, when it fits that backend's window;
- `repair`: the answer has a problem the code did not have (check/verify.py: a syntax error): the
  region format on the backend that answered, the answer between the markers and as the prediction,
  the problem in the instruction; `refactor.repairs` times at most. A merge (an apply) whose answer
  copied a lazy marker is asked again as it was, the marker named: only the region as it was holds
  the code the marker stands for.

docs/how-it-works.md, "The attempt loop", says where a new kind goes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from ..backend.memory import BackendMemory, Learned
from ..backend.window import ContextWindow, WindowFit
from ..check.verify import LAZY_MARKER, Problem, merge_repair_note, repair_instruction
from ..config.schema import BackendConfig, RefactorSettings
from ..formats.choice import FormatChoice, FormatHistory, choose_format
from ..formats.hunks import marker_line
from ..formats.prompt import Prompt
from ..stats.measured import RefactorStats
from .context_fit import DEFAULT_PROMPT_CHARS_PER_TOKEN, WindowTooSmall, fit_prompt
from .plan import Plan, Route, default_max_tokens

AttemptKind = Literal["first", "without prediction", "refit", "fallback", "region retry", "repair"]
# An attempt waits this long for its backend's first probe, and only while nothing is known of its window.
PROBE_WAIT_S = 1.0


@dataclass(frozen=True)
class Attempt:
    """One request: what it sends, and why it is sent."""

    kind: AttemptKind
    index: int  # its backend's place in the plan's chain (`Plan.routes`)
    route: Route  # the backend, and how this request carries the prediction
    edit_format: FormatChoice
    prompt: Prompt  # its `prediction` is what the prediction field carries, when it does
    max_tokens: int
    fit: WindowFit | None  # how the prompt and the cap fit the backend's window; None: the window is unknown
    why: str = ""  # the outcome of the attempt before, in words ("" for the first)

    @property
    def backend(self) -> BackendConfig:
        return self.route.backend

    def without_prediction(self, why: str) -> Attempt:
        return replace(self, kind="without prediction", route=Route(self.backend, "off"), why=why)


@dataclass
class Tries:
    """What a refactor's attempts so far leave to the next ones, and to the stats of the one that answers."""

    choice: FormatChoice  # the format the attempts ask in, before a backend's window has its say
    notes: list[str] = field(default_factory=list)  # what happened on the way (a prediction field refused)
    failures: list[str] = field(default_factory=list)  # why the backends before this one did not serve
    refitted: set[tuple[int, str]] = field(default_factory=set)  # (backend's place, format): refitted once
    retried_from: str | None = None  # the format whose answer did not apply, once a retry is under way
    first_attempt_ms: float | None = None  # that answer's latency
    retry_note: str = ""
    # A repair under way: the problems found so far (the first answer's first), and the stats of the
    # answer it mends, which the repairs' figures join (`RefactorStats.with_repair`).
    problems: list[Problem] = field(default_factory=list)
    repairing: RefactorStats | None = None
    repaired_answer: str = ""  # the model's answer under repair, as it came


def decide_format(plan: Plan, history: FormatHistory | None) -> FormatChoice:
    """The format asked, or `auto`'s choice by the first backend's history and the region's size."""
    first = plan.routes[0]
    marker = marker_line(plan.original) if plan.settings.hunks_form == "search-replace" else None
    return choose_format(
        plan.format_asked,
        plan.format_asked_by,
        plan.region.lines,
        plan.settings.hunks_min_lines,
        first.backend.name,
        history,
        first.prediction,
        marker,
    )


def make_attempt(
    plan: Plan,
    kind: AttemptKind,
    index: int,
    choice: FormatChoice,
    window: ContextWindow | None = None,
    learned: Learned | None = None,
    why: str = "",
    prediction_refused: bool = False,
) -> Attempt:
    """The attempt in `choice`'s format on the plan's backend `index`, fitted to `window` when it is
    known (`learned`: what that backend taught of its characters per token). An automatic region
    format whose answer cannot fit is asked as hunks, said in its reason. `prediction_refused`: the
    backend refused the prediction field during this refactor. Raises WindowTooSmall."""
    try:
        return _shaped(plan, kind, index, choice, window, learned, why, prediction_refused)
    except WindowTooSmall as refused:
        if window is None or choice.format != "region" or not choice.automatic:
            raise
        backend = plan.routes[index].backend.name
        why_hunks = f"auto, hunks: the region written again does not fit {backend}'s window of {window.tokens:,} tokens"
        hunks = FormatChoice("hunks", why_hunks, automatic=False)
        try:
            return _shaped(plan, kind, index, hunks, window, learned, why, prediction_refused)
        except WindowTooSmall:
            raise refused from None  # the region's refusal says more


def _shaped(
    plan: Plan,
    kind: AttemptKind,
    index: int,
    choice: FormatChoice,
    window: ContextWindow | None,
    learned: Learned | None,
    why: str,
    prediction_refused: bool,
) -> Attempt:
    planned = plan.routes[index]
    route = planned
    if planned.prediction == "field" and prediction_refused:
        route = Route(planned.backend, "off")
    elif planned.prediction == "field" and choice.format == "hunks" and plan.request.prediction is not True:
        # A hunks answer is mostly new text: a whole-region prediction would be rejected, and OpenAI
        # bills rejected prediction tokens (benchmarks/README.md, "Edit formats", has the figures).
        route = replace(planned, prediction="off")
    wanted = default_max_tokens(len(plan.original), plan.settings, choice.format)
    if window is None:
        prompt = plan.prompt_in(choice.format, plan.settings.context_chars)
        return Attempt(kind, index, route, choice, prompt, wanted, None, why)
    learned = learned or Learned()
    prompt, fit = fit_prompt(
        plan,
        choice.format,
        wanted,
        route.backend.name,
        window,
        learned.prompt_chars_per_token,
        learned.output_chars_per_token,
        offer_hunks=not choice.automatic,
    )
    return Attempt(kind, index, route, choice, prompt, fit.max_tokens, fit, why)


async def attempt_on(
    plan: Plan,
    kind: AttemptKind,
    index: int,
    choice: FormatChoice,
    memory: BackendMemory,
    why: str = "",
    prediction_refused: bool = False,
) -> Attempt:
    """`make_attempt` fitted to the backend's window when it is known. Known, it costs no wait;
    unknown, the backend's first probe may still be on its way (PROBE_WAIT_S).

    Refused before sending only by a window the backend said in this process: one an earlier process
    heard may have grown since (the user followed the advice and restarted the server with more), so
    the backend is asked again, by its probe or else by sending, and its refusal settles it."""
    backend = plan.routes[index].backend

    def make(window: ContextWindow | None) -> Attempt:
        return make_attempt(plan, kind, index, choice, window, memory.learned(backend), why, prediction_refused)

    window = await memory.window_soon(backend, PROBE_WAIT_S)
    if window is None:
        return make(None)
    try:
        return make(window)
    except WindowTooSmall:
        fresh = await memory.confirmed_window(backend, PROBE_WAIT_S)
        if fresh is None:
            return make(None)
        if fresh == window:
            raise
    return make(fresh)


def refitted(
    plan: Plan, refused: Attempt, choice: FormatChoice, memory: BackendMemory, window: int, prediction_refused: bool
) -> Attempt:
    """The attempt fitted to the window the backend named when it refused `refused` as too long (the
    window is remembered). When the estimate finds that `refused` fits it, the estimate was short: the
    backend counts more tokens a character from now on, and the attempt is fitted again with that."""
    backend = refused.backend
    learned_window = ContextWindow(window, "error")
    memory.remember_window(backend, learned_window)
    why = f"the backend refused the prompt as too long for its window of {window:,} tokens"
    for _ in range(2):
        learned = memory.learned(backend)
        refit = make_attempt(plan, "refit", refused.index, choice, learned_window, learned, why, prediction_refused)
        if refit.prompt.messages != refused.prompt.messages or refit.max_tokens != refused.max_tokens:
            break
        memory.distrust_prompt_ratio(backend, learned.prompt_chars_per_token or DEFAULT_PROMPT_CHARS_PER_TOKEN)
    return refit


async def region_retry_on(
    plan: Plan, answered: Attempt, problem: str, memory: BackendMemory, prediction_refused: bool
) -> Attempt:
    """The region retry after a hunks answer `auto` chose did not apply (`problem`): the region format,
    on the backend that answered, fitted to its window. Raises WindowTooSmall."""
    region = FormatChoice("region", f"retry after: {problem}", automatic=False)
    return await attempt_on(plan, "region retry", answered.index, region, memory, problem, prediction_refused)


async def repair_on(
    plan: Plan, answered: Attempt, answer: str, problem: Problem, memory: BackendMemory, prediction_refused: bool
) -> Attempt:
    """The repair of `answer` (the region's text as an answer left it) for `problem`: in the region
    format, on the backend that answered, fitted to its window, with `answer` as the region it shows
    and the prediction. Raises WindowTooSmall."""
    first_line = plan.request.text.count("\n", 0, plan.region.start) + 1
    region = FormatChoice("region", f"repair: {problem.describe()}", automatic=False)
    why = f"the answer has a {problem.kind}: {problem.describe()}"
    if problem.kind == LAZY_MARKER:  # the merge again, on the region as it was: the code is there
        instruction = f"{plan.instruction}\n{merge_repair_note(problem)}"
        repair_plan = replace(plan, instruction=instruction)
    else:
        repair_plan = plan.with_answer(answer, repair_instruction(problem, plan.instruction, answer, first_line))
    return await attempt_on(repair_plan, "repair", answered.index, region, memory, why, prediction_refused)


def cut_off_message(plan: Plan, attempt: Attempt, completion_tokens: int | None = None) -> str:
    """Why an answer was cut off (finish_reason "length"), with the advice that fits: a server that
    stopped well before our cap has a limit of its own (its context window); a cap that already gave
    the region room to double was not too small (the model repeats itself, or writes past the
    region); a tighter cap the user set is raised, or the region made smaller."""
    cap, setting, fit = attempt.max_tokens, plan.request.max_tokens_setting, attempt.fit
    if fit is not None and fit.capped and (completion_tokens is None or completion_tokens >= 0.9 * cap):
        return (
            f"the model's answer was cut off at {cap:,} tokens, all that the backend's context window "
            f"({fit.window.tokens:,} tokens) leaves after the prompt, so nothing was applied — select a "
            "smaller region, or use a model or server with a larger window (vLLM: --max-model-len, llama.cpp: "
            "--ctx-size)"
        )
    if completion_tokens is not None and completion_tokens < 0.9 * cap:
        return (
            f"the backend cut the answer off after {completion_tokens:,} tokens, before the {cap:,} this refactor "
            "allows: a limit of the server's own (its context window, or its maximum answer length) is too small, "
            "so nothing was applied — select a smaller region, or raise the server's limit"
        )
    region = f"{plan.region.lines:,}-line"
    if cap >= default_max_tokens(len(plan.original), RefactorSettings(), "region"):  # the automatic cap: twice
        return (
            f"the model's answer was cut off at {cap:,} tokens, more than twice what the {region} region takes: "
            "it was probably repeating itself or writing more than the region, so nothing was applied — run it "
            f"again or try another model (if the change really adds that much, raise {setting})"
        )
    smaller = " or select a smaller region" if plan.region.lines > 1 else ""
    return (
        f"the model's answer was cut off at its token limit ({cap:,} tokens, {setting}) before the end of the "
        f"{region} region, so nothing was applied — raise {setting}{smaller}"
    )
