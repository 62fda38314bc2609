"""Prediction acceptance as backends report it: read from an answer's final chunk, never guessed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Acceptance:
    accepted: int
    rejected: int
    source: str


def read_acceptance(chunk: dict[str, Any]) -> Acceptance | None:
    """Acceptance figures from a final chunk, whatever the backend kind:

    - OpenAI and compatible: usage.completion_tokens_details.{accepted,rejected}_prediction_tokens
    - vLLM (--per-request-spec-decode-metrics): metrics.speculative_decoding.{num_accepted_draft_tokens,
      num_draft_tokens}
    - llama.cpp server: timings.{draft_n_accepted, draft_n}
    """
    usage = chunk.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    accepted = details.get("accepted_prediction_tokens")
    rejected = details.get("rejected_prediction_tokens")
    if isinstance(accepted, int) and isinstance(rejected, int) and (accepted or rejected):
        return Acceptance(accepted, rejected, "usage")
    spec = (chunk.get("metrics") or {}).get("speculative_decoding") or usage.get("speculative_decoding") or {}
    drafted = spec.get("num_draft_tokens")
    accepted = spec.get("num_accepted_draft_tokens", spec.get("num_accepted_tokens"))
    if isinstance(drafted, int) and isinstance(accepted, int):
        return Acceptance(accepted, max(drafted - accepted, 0), "vllm-spec-decode-metrics")
    timings = chunk.get("timings") or {}
    drafted = timings.get("draft_n")
    accepted = timings.get("draft_n_accepted")
    if isinstance(drafted, int) and isinstance(accepted, int):
        return Acceptance(accepted, max(drafted - accepted, 0), "llamacpp-timings")
    return None
