"""How the fake backend paces one answer, pass by pass: what drafts it (the request's `prediction`
field for the kind "openai", the prompt for "vllm" and "llamacpp", or for a "vllm" fake with
refactor-lsp's proposer the prediction in the request's `vllm_xargs`, and its probe), the passes its
profile's simulation takes, cut at the request's token limit, and what they cost in passes of time.

The server (`replies`) sleeps through these passes; `calibration` adds them up without sleeping. Both
pace the same request the same way (the profile's draws are seeded by the answer), so a figure
computed in simulated time is the one the bench measures against the fake, less the HTTP overhead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..proposer import PREDICTION_KEY, PROBE_DRAFT, PROBE_KEY, PROBE_SILENT
from .profiles import BackendProfile
from .speculation import Simulation, tokenize


@dataclass(frozen=True)
class Paced:
    sim: Simulation
    steps: list[str]  # what each pass writes, up to the token limit
    finish: str  # "length" when the limit cut the answer
    prompt_tokens: int
    wait_passes: float  # before the first pass: the profile's fixed wait and its reading of the prompt
    pass_costs: list[float]  # each of `steps`, in plain passes

    @property
    def ttft_passes(self) -> float:
        """To the first content: the wait and the first pass."""
        return self.wait_passes + (self.pass_costs[0] if self.pass_costs else 0.0)

    @property
    def latency_passes(self) -> float:
        return self.wait_passes + sum(self.pass_costs)

    @property
    def tokens(self) -> int:
        return sum(len(tokenize(step)) for step in self.steps)


def prompt_tokens_of(request: dict[str, Any]) -> int:
    return sum(len(tokenize(str(m.get("content", "")))) for m in request.get("messages", []))


def pace(
    request: dict[str, Any],
    answer: str,
    kind: str,
    profile: BackendProfile,
    speculation: bool = True,
    finish_reason: str = "stop",
    proposer: bool = False,
) -> Paced:
    """The passes that write `answer` to `request` on a fake of this kind and profile; `proposer`: a vLLM
    fake drafts as refactor-lsp's proposer does (lsp_server/proposer), from the `vllm_xargs` prediction."""
    max_tokens = request.get("max_tokens") or request.get("max_completion_tokens") or 10**9
    if kind == "vllm" and request.get("ignore_eos") and max_tokens < 10**9:
        answer += "." * max(max_tokens - len(tokenize(answer)), 0)  # vLLM writes max_tokens tokens, whatever
    xargs = request.get("vllm_xargs") if kind == "vllm" and proposer and speculation else None
    xargs = xargs if isinstance(xargs, dict) else {}
    aligned = kind == "openai"
    if kind == "openai":
        prediction = request.get("prediction") or {}
        source = prediction.get("content") if isinstance(prediction, dict) else None
    elif isinstance(xargs.get(PREDICTION_KEY), str):
        source, aligned = xargs[PREDICTION_KEY], True  # drafted from the aligned place in the prediction
    else:
        source = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
    drafts_from = source if speculation else None
    if xargs.get(PROBE_KEY) in (PROBE_DRAFT, PROBE_SILENT):
        sim = _probed(answer, profile.draft_len if xargs[PROBE_KEY] == PROBE_DRAFT else 0)
    else:
        sim = profile.simulate(answer, drafts_from, aligned=aligned, from_output=not aligned)
    steps, finish = sim.steps, finish_reason
    if len(tokenize(answer)) > max_tokens:
        kept: list[str] = []
        count = 0
        for step in steps:
            n = len(tokenize(step))
            if count + n > max_tokens:
                break
            kept.append(step)
            count += n
        steps, finish = kept, "length"
    prompt_tokens = prompt_tokens_of(request)
    costs = [profile.pass_cost(sim.drafts[i] if i < len(sim.drafts) else 0) for i in range(len(steps))]
    return Paced(sim, steps, finish, prompt_tokens, profile.prefill_passes(prompt_tokens), costs)


def _probed(answer: str, draft_len: int) -> Simulation:
    """The proposer's probe: a token a pass, each pass with a draft of `draft_len` tokens, none taken."""
    steps = tokenize(answer)
    return Simulation(steps, 0, draft_len * len(steps), [draft_len] * len(steps))
