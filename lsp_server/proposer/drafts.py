"""The proposer's work for a batch of requests, step by step, with no vLLM in it: per request, the
prediction it carries (its `vllm_xargs`) tokenized once and followed by an `Alignment`, or prompt
lookup where it carries none; what each step drafts; the probe `refactor-lsp check` sends.

A request is known by its id. Its state lives from its first step until the caller says it is gone
(`forget`), and at most `max_requests` are kept: the oldest go first, so that no pattern of requests
makes the proposer's memory grow.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass

from ..proposer import PREDICTION_KEY, PROBE_DRAFT, PROBE_KEY, PROBE_SILENT
from .align import Alignment
from .lookup import PromptLookup

# A prediction longer than this many characters a token of the server's window is not one the answer
# can follow to its end: it is cut there before it is tokenized.
MAX_CHARS_PER_TOKEN = 32

Tokenize = Callable[[str], list[int]]
Read = Callable[[int, int], list[int]]  # (start, end) → the request's context tokens in that span


@dataclass
class _Request:
    alignment: Alignment | None  # the prediction's cursor; None: drafts by prompt lookup
    lookup: PromptLookup | None  # with a cursor too: what drafts while the cursor is lost (lookup_when_lost)
    probe: str | None  # PROBE_DRAFT or PROBE_SILENT: a probe from `refactor-lsp check`
    seen: int  # how many of the context's tokens were fed


class Drafter:
    """Drafts up to `k` tokens a step for each request; `adaptive` drafts fewer right after the cursor
    found its place again (one more than the tokens matched in a row, up to `k`); `lookup_when_lost`
    drafts by prompt lookup while the cursor has no place in the prediction (instead of nothing)."""

    def __init__(
        self,
        k: int,
        tokenize: Tokenize,
        window: int,
        adaptive: bool = False,
        max_requests: int = 1024,
        lookup_when_lost: bool = False,
    ) -> None:
        if k < 1 or window < 1 or max_requests < 1:
            raise ValueError("k, window and max_requests must be 1 or more")
        self.k, self.tokenize, self.window = k, tokenize, window
        self.adaptive, self.max_requests, self.lookup_when_lost = adaptive, max_requests, lookup_when_lost
        self._requests: dict[str, _Request] = {}

    def step(
        self, request_id: str, extra: Mapping[str, object] | None, length: int, prompt_length: int, read: Read
    ) -> list[int]:
        """The draft for one request whose context now holds `length` tokens, the first `prompt_length`
        of them its prompt; `extra` is what the request carries for extensions (vLLM's `extra_args`)."""
        state = self._requests.get(request_id)
        if state is None:
            state = self._start(extra or {}, prompt_length)
            if len(self._requests) >= self.max_requests:
                del self._requests[next(iter(self._requests))]
            self._requests[request_id] = state
        if state.lookup is not None and state.alignment is not None and not state.lookup.context:
            state.lookup.feed(read(0, state.seen))  # the prompt, for prompt lookup while the cursor is lost
        new = read(state.seen, length) if length > state.seen else []
        state.seen = max(state.seen, length)
        if state.alignment is not None:
            state.alignment.feed(new)
        if state.lookup is not None:
            state.lookup.feed(new)
        if state.probe == PROBE_SILENT:
            return []
        if state.probe == PROBE_DRAFT:
            return [new[-1]] * self.k if new else []
        if state.alignment is not None and (state.alignment.pos is not None or state.lookup is None):
            k = min(self.k, state.alignment.confidence + 1) if self.adaptive else self.k
            return state.alignment.draft(k)
        assert state.lookup is not None
        return state.lookup.draft(self.k)

    def forget(self, alive: Container[str]) -> None:
        """Drop the requests that are not `alive` (finished, or aborted)."""
        for request_id in [r for r in self._requests if r not in alive]:
            del self._requests[request_id]

    def __len__(self) -> int:
        return len(self._requests)

    def _start(self, extra: Mapping[str, object], prompt_length: int) -> _Request:
        probe = extra.get(PROBE_KEY)
        probe = probe if probe in (PROBE_DRAFT, PROBE_SILENT) else None
        prediction = extra.get(PREDICTION_KEY)
        if isinstance(prediction, str) and prediction:
            tokens = self.tokenize(prediction[: self.window * MAX_CHARS_PER_TOKEN])[: self.window]
            # The answer starts after the prompt: only what the model writes is aligned.
            lookup = PromptLookup() if self.lookup_when_lost else None
            return _Request(Alignment(tokens), lookup, probe, prompt_length)
        return _Request(None, PromptLookup(), probe, 0)
