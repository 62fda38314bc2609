"""Prediction acceptance as backends report it: read from an answer's final chunk, never guessed, and
never taken when it cannot be true (`plausible`): an inflated figure is worse than none."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass
class Acceptance:
    accepted: int
    rejected: int
    source: str


def token_count(value: Any) -> int | None:
    """A token count: a non-negative int (not a bool, not a float), else None."""
    return value if type(value) is int and value >= 0 else None


def section(parent: Any, key: str) -> Mapping[str, Any]:
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def plausible(acceptance: Acceptance | None, completion_tokens: Any) -> Acceptance | None:
    """`acceptance` when it can be true of an answer of `completion_tokens` tokens, else None: counts
    are non-negative, and every accepted draft token is one of the answer's tokens, so more accepted
    than written is a server's mistake (or two requests' counters mixed), never a figure to show."""
    if acceptance is None or token_count(acceptance.accepted) is None or token_count(acceptance.rejected) is None:
        return None
    written = token_count(completion_tokens)
    if written is not None and acceptance.accepted > written:
        return None
    return acceptance


def _drafted(drafted: Any, accepted: Any, source: str) -> Acceptance | None:
    """From a count of drafted tokens and the accepted among them; None when that cannot be."""
    drafted, accepted = token_count(drafted), token_count(accepted)
    if drafted is None or accepted is None or accepted > drafted:
        return None
    return Acceptance(accepted, drafted - accepted, source)


def read_acceptance(chunk: Mapping[str, Any]) -> Acceptance | None:
    """Acceptance figures from a final chunk, whatever the backend kind; None where the chunk has none,
    or figures of the wrong shape or that cannot be true (`plausible`):

    - OpenAI and compatible: usage.completion_tokens_details.{accepted,rejected}_prediction_tokens
    - vLLM (--per-request-spec-decode-metrics): metrics.speculative_decoding.{num_accepted_draft_tokens,
      num_draft_tokens}
    - llama.cpp server: timings.{draft_n_accepted, draft_n}
    """
    usage = section(chunk, "usage")
    timings = section(chunk, "timings")
    written = usage.get("completion_tokens", timings.get("predicted_n"))
    details = section(usage, "completion_tokens_details")
    accepted = token_count(details.get("accepted_prediction_tokens"))
    rejected = token_count(details.get("rejected_prediction_tokens"))
    if accepted is not None and rejected is not None and (accepted or rejected):
        return plausible(Acceptance(accepted, rejected, "usage"), written)
    spec = section(section(chunk, "metrics"), "speculative_decoding") or section(usage, "speculative_decoding")
    if "num_draft_tokens" in spec:
        accepted = spec.get("num_accepted_draft_tokens", spec.get("num_accepted_tokens"))
        return plausible(_drafted(spec["num_draft_tokens"], accepted, "vllm-spec-decode-metrics"), written)
    if "draft_n" in timings:
        return plausible(_drafted(timings["draft_n"], timings.get("draft_n_accepted"), "llamacpp-timings"), written)
    return None
