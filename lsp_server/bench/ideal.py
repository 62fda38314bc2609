"""Distance to ideal: the fastest a backend could make a task's edit, to measure each edit format against.

The ideal time of a task is the backend's time to first token plus the tokens that differ between
the region and the expected region, written at the backend's plain decode rate: a model that reads
the prompt, then writes only what is new, as fast as it writes without any prediction. All three
figures come from the same run and the same task, in the reference mode (the region format without
prediction; for vLLM and llama.cpp, on the baseline backend):

- TTFT: the median time to the first content token;
- plain decode rate: the median generation rate, output tokens ÷ (latency − TTFT);
- tokens that differ: the characters the expected region inserts or replaces, found by a diff over
  word, punctuation and whitespace tokens, ÷ the characters per output token the backend showed
  (output characters ÷ output tokens, summed over those runs). The backend's tokenizer is not at
  hand; its own ratio on the same code is the closest count we can make. Deleted text costs nothing
  to write, so it is not counted.

A format can beat the ideal (a ratio under 1): a prediction or a speculating server writes copied
tokens faster than the plain rate, and the estimate of the tokens that differ is only an estimate.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..stats.measured import RefactorStats, median

# Words, single punctuation characters, whitespace runs: a renamed identifier differs as one token,
# not as the whole line around it, and close to how a BPE vocabulary splits code.
_DIFF_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def changed_chars(old: str, new: str) -> int:
    """Characters of `new` that a diff against `old` inserts or replaces, over word/punctuation tokens."""
    a, b = _DIFF_TOKEN.findall(old), _DIFF_TOKEN.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(len("".join(b[j1:j2])) for op, _, _, j1, j2 in matcher.get_opcodes() if op in ("replace", "insert"))


def changed_lines(old: str, new: str) -> int:
    """Lines an edit touches: for each differing stretch of a line diff, the more of its old and new lines."""
    a, b = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal")


@dataclass(frozen=True)
class Ideal:
    """A task's ideal time, and the measured figures it is made of."""

    ttft_ms: float
    plain_tokens_per_s: float
    chars_per_token: float
    changed_chars: int
    changed_tokens: float
    ideal_ms: float
    runs: int  # reference runs the figures come from

    @classmethod
    def of(cls, reference: Sequence[RefactorStats], changed: int) -> Ideal | None:
        """From the reference mode's measured runs of one task; None when they lack a figure."""
        ttft = median(s.ttft_ms for s in reference)
        rate = median(s.tokens_per_s for s in reference)
        tokens = sum(s.useful_tokens() or 0 for s in reference)
        chars = sum(s.output_chars for s in reference if s.useful_tokens())
        if ttft is None or not rate or not tokens or not chars:
            return None
        per_token = chars / tokens
        changed_tokens = changed / per_token
        return cls(
            ttft_ms=ttft,
            plain_tokens_per_s=rate,
            chars_per_token=per_token,
            changed_chars=changed,
            changed_tokens=changed_tokens,
            ideal_ms=ttft + changed_tokens / rate * 1000,
            runs=len(reference),
        )
