"""The fake backend's speculative decoding, simulated: every forward pass emits the draft tokens that
match the answer plus one, so a good prediction gives a known speed-up (`simulate` says exactly how
many passes an answer takes). Standard library only.

A real model does not take every draft that matches the text it copies: it words a line its own way,
or the server's lookup lands on a wrong continuation the answer then leaves. `first_accept` stands
for that, calibrated per backend profile (`profiles`): a draft is taken at all with that
probability, and then as far as it matches, as the per-position acceptance of n-gram drafts falls
most at the first token (vLLM PR 24344: 0.81 at the first, then 0.74, 0.70, 0.68, 0.66). The
random draws come from the caller's `random.Random`, seeded from the answer, so the same request is
paced the same way every time.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


@dataclass
class Simulation:
    steps: list[str]  # the text each forward pass emits
    accepted: int
    drafted: int
    drafts: list[int] = field(default_factory=list)  # draft tokens verified in each pass (empty: none at all)

    @property
    def rejected(self) -> int:
        return self.drafted - self.accepted


def simulate(
    answer: str,
    draft_source: str | None,
    draft_len: int = 8,
    aligned: bool = True,
    from_output: bool = False,
    first_accept: float = 1.0,
    rng: random.Random | None = None,
) -> Simulation:
    """Passes of speculative decoding for `answer`, drafting from `draft_source` by n-gram lookup.

    `aligned`: the source is a prediction of the answer, so the first draft is its beginning
    (OpenAI); otherwise drafting waits for an n-gram to look up (vLLM prompt lookup).
    `from_output`: the answer written so far is searched too, after the source, as vLLM's n-gram
    proposer searches the prompt and the generated tokens alike.
    `first_accept`: the probability that a pass takes its draft at all (drawn from `rng`, needed
    below 1); a draft not taken still counts as drafted, and the pass writes one token.
    """
    if first_accept < 1 and rng is None:
        raise ValueError("simulate: first_accept below 1 needs an rng to draw from")
    out = tokenize(answer)
    if not draft_source:
        return Simulation(out, 0, 0)
    context = tokenize(draft_source)  # what drafts are read from; grows with the answer if from_output
    index: dict[tuple[str, ...], int] = {}  # each n-gram's first occurrence: where its continuation starts

    def learn(first_end: int) -> None:
        """Index the n-grams that end at `first_end` or later."""
        for end in range(max(first_end, 1), len(context) + 1):
            for n in (3, 2, 1):
                if end >= n:
                    index.setdefault(tuple(context[end - n : end]), end)

    learn(0)
    steps: list[str] = []
    drafts: list[int] = []
    accepted_total = drafted_total = 0
    i = 0
    ptr: int | None = 0 if aligned else None  # where in the context the next draft starts
    while i < len(out):
        if ptr is None or ptr >= len(context) or (i > 0 and ptr > 0 and context[ptr - 1] != out[i - 1]):
            ptr = None
            for n in (3, 2, 1):
                if i >= n:
                    ptr = index.get(tuple(out[i - n : i]))
                    if ptr is not None:
                        break
        draft = context[ptr : ptr + draft_len] if ptr is not None else []
        accepted = 0
        taken = rng is None or first_accept >= 1 or not draft or rng.random() < first_accept
        while taken and accepted < len(draft) and i + accepted < len(out) and draft[accepted] == out[i + accepted]:
            accepted += 1
        emitted = out[i : i + accepted + 1]
        steps.append("".join(emitted))
        drafts.append(len(draft))
        accepted_total += accepted
        drafted_total += len(draft)
        i += len(emitted)
        if ptr is not None:
            ptr += accepted
            ptr = ptr + 1 if ptr < len(context) and i <= len(out) and context[ptr] == out[i - 1] else None
        if from_output:
            context.extend(emitted)
            learn(len(context) - len(emitted) + 1)
    return Simulation(steps, accepted_total, drafted_total, drafts)
