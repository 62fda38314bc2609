"""Prompt lookup: draft what followed the request's last few tokens where they first occurred in its
context (the prompt and the answer so far). What the proposer drafts from when a request carries no
prediction, as vLLM's own n-gram method does, kept incrementally: each new token costs one dictionary
entry per n-gram size, so a step costs the same however long the context."""

from __future__ import annotations

from collections.abc import Iterable

# vLLM's n-gram settings in the demo (benchmarks/local_vllm.sh): prompt_lookup_min 2, prompt_lookup_max 3.
MIN_N, MAX_N = 2, 3


class PromptLookup:
    """`feed` it the context's tokens as they come, then `draft`."""

    def __init__(self, min_n: int = MIN_N, max_n: int = MAX_N) -> None:
        if not 1 <= min_n <= max_n:
            raise ValueError(f"n-gram sizes must be 1 <= min_n <= max_n, not {min_n} and {max_n}")
        self.min_n, self.max_n = min_n, max_n
        self.context: list[int] = []
        self._first: dict[tuple[int, ...], int] = {}  # an n-gram → the index after its first occurrence

    def feed(self, tokens: Iterable[int]) -> None:
        context, first = self.context, self._first
        for token in tokens:
            context.append(token)
            end = len(context)
            for n in range(self.min_n, min(self.max_n, end) + 1):
                first.setdefault(tuple(context[end - n :]), end)

    def draft(self, k: int) -> list[int]:
        """Up to `k` tokens that followed the longest n-gram ending the context where it first occurred."""
        context = self.context
        end = len(context)
        for n in range(min(self.max_n, end), self.min_n - 1, -1):
            after = self._first.get(tuple(context[end - n :]))
            if after is not None and after < end:
                return context[after : after + k]
        return []
