"""The class vLLM loads as its proposer: `--speculative-config '{"method": "custom_class", "model":
"lsp_server.proposer.vllm_adapter.PredictionProposer", "num_speculative_tokens": 8}'` (docs/proposer.md).

vLLM's custom-class interface (pull request 39487, experimental; read in vLLM 0.32.0's
`v1/spec_decode/custom_class_proposer.py` and `v1/worker/gpu_model_runner.py`) builds the class with the
`VllmConfig`, calls `load_model(model)` once, then `propose(sampled_token_ids, num_tokens_no_spec,
token_ids_cpu, slot_mappings)` each step, one row per request of the batch. It hands over no request
ids and no sampling parameters, so the proposer keeps the model runner that built it (the caller's
`self` up the stack) and reads, for row i, `runner.input_batch.req_ids[i]` and that request's
`runner.requests[id].sampling_params.extra_args`: the `vllm_xargs` the client sent. Where vLLM
changes that shape, the proposer says so in vLLM's log and drafts nothing, and generation goes on
unspeculated: a proposer error must never stop the server.

This module imports vLLM only inside its methods, and nothing in the package imports it.
"""

from __future__ import annotations

import logging
import sys
from types import FrameType
from typing import Any

from .drafts import Drafter

log = logging.getLogger("vllm.refactor_lsp.proposer")

# How far up the stack the model runner is looked for (vLLM 0.32: one frame up, from its load_model).
RUNNER_FRAMES = 8


def _runner_up_the_stack() -> Any:
    """The model runner calling us: the first caller whose `self` holds `requests` and `input_batch`."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(RUNNER_FRAMES):
        if frame is None:
            break
        candidate = frame.f_locals.get("self")
        if candidate is not None and hasattr(candidate, "requests") and hasattr(candidate, "input_batch"):
            return candidate
        frame = frame.f_back
    return None


class PredictionProposer:
    """Drafts `num_speculative_tokens` tokens a step from the request's prediction (drafts.Drafter)."""

    adaptive = False
    lookup_when_lost = False

    def __init__(self, vllm_config: Any) -> None:
        self.config = vllm_config
        self.window = int(vllm_config.model_config.max_model_len)
        self.k = int(vllm_config.speculative_config.num_speculative_tokens)
        self.runner: Any = None
        self._tokenizer: Any = None
        self.drafter = Drafter(
            self.k, self._tokenize, self.window, adaptive=self.adaptive, lookup_when_lost=self.lookup_when_lost
        )
        self._failed = False
        log.info(
            "refactor-lsp's proposer: %d tokens a step from the request's prediction%s",
            self.k,
            " (adaptive)" if self.adaptive else " (prompt lookup while lost)" if self.lookup_when_lost else "",
        )

    def load_model(self, *args: Any, **kwargs: Any) -> None:
        """No weights: this is where the model runner is found (it is the caller)."""
        self.runner = _runner_up_the_stack()
        if self.runner is None:
            log.warning("refactor-lsp's proposer did not find vLLM's model runner: it will draft nothing")

    def dummy_run(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to warm up."""

    def _tokenize(self, text: str) -> list[int]:
        if self._tokenizer is None:
            from vllm.tokenizers import cached_tokenizer_from_config  # type: ignore[import-not-found]  # vLLM's own env only

            self._tokenizer = cached_tokenizer_from_config(self.config.model_config)
        return list(self._tokenizer.encode(text, add_special_tokens=False))

    def propose(
        self,
        sampled_token_ids: list[list[int]],
        num_tokens_no_spec: Any,
        token_ids_cpu: Any,
        slot_mappings: Any = None,
        **kwargs: Any,
    ) -> list[list[int]]:
        """One draft per row of the batch (an empty one: no draft for that request this step)."""
        runner = self.runner
        if runner is None or self._failed:
            return [[] for _ in sampled_token_ids]
        try:
            batch, requests = runner.input_batch, runner.requests
            drafts = [
                self._row(i, sampled, batch, requests, num_tokens_no_spec, token_ids_cpu)
                for i, sampled in enumerate(sampled_token_ids)
            ]
            self.drafter.forget(requests)
            return drafts
        except Exception:
            self._failed = True  # vLLM's internals moved: say it once, then stay out of the way
            log.exception("refactor-lsp's proposer failed and drafts nothing from now on")
            return [[] for _ in sampled_token_ids]

    def _row(self, i: int, sampled: list[int], batch: Any, requests: Any, lengths: Any, tokens: Any) -> list[int]:
        if not sampled:  # a prompt still being read in chunks: nothing was written yet
            return []
        length = int(lengths[i])
        room = self.window - length - 1
        if room <= 0:
            return []
        request_id = batch.req_ids[i]
        state = requests.get(request_id)
        params = getattr(state, "sampling_params", None)
        extra = getattr(params, "extra_args", None)
        row = tokens[i]
        draft = self.drafter.step(
            request_id,
            extra if isinstance(extra, dict) else None,
            length,
            int(batch.num_prompt_tokens[i]),
            lambda start, end: row[start:end].tolist(),
        )
        return draft[:room]


class AdaptivePredictionProposer(PredictionProposer):
    """The same, drafting fewer tokens right after the answer and the prediction part and meet again."""

    adaptive = True


class HybridPredictionProposer(PredictionProposer):
    """From the prediction while the answer follows it, by prompt lookup (the prompt and the answer so far)
    where it does not: a model that leaves the code to write prose, or repeats itself, is drafted too."""

    lookup_when_lost = True
