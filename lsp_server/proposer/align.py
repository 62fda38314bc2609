"""Where the answer is in the prediction: a cursor that follows the model's tokens through the
prediction's tokens, so that the next ones can be drafted from the aligned position.

The answer mostly copies the prediction. While it does, each token the model writes is the one at the
cursor and the cursor moves on: no search at all. Where the answer leaves the prediction (a renamed
name, an inserted block, a deleted block, a moved line), the cursor is lost and looks for the place
the answer has come back to, by the longest match of the answer's last tokens, near the last place it
was sure of (where SURE tokens in a row matched): one token will do a few tokens ahead of it (`NEAR`:
what follows a renamed name, or a short insertion or deletion), farther ahead it takes `MIN_AHEAD`
tokens in a row (a deleted block), and behind it `MIN_BEHIND` (a moved line), so that the alignment
keeps moving forward and a common pair such as `self.` or `)\\n` cannot pull it back. Until the answer
is found again, nothing is drafted.

Each token costs at most one scan of `NEAR` tokens and `MAX_CANDIDATES` candidates of `MAX_MATCH`
comparisons: bounded whatever the prediction's length (benchmarks/proposer_alignment.py measures it,
and chose these values on the task corpus).
Tokens are ints (a tokenizer's ids); nothing here knows of vLLM.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Sequence

# A lost cursor takes MIN_NEAR matching tokens this many positions ahead of the last sure place: what follows
# a renamed name or a short insertion or deletion is there.
NEAR, MIN_NEAR = 16, 1
# Farther ahead (a deleted block) it takes this many tokens matching in a row; behind the last sure place
# (a line moved up, written again) more: a jump back must not come from one common pair.
MIN_AHEAD, MIN_BEHIND = 3, 6
# The cursor is sure of its place once this many tokens in a row matched there: a search starts from it.
SURE = 12
# How far from the last sure place a lost cursor looks, in tokens (a few hundred lines of code).
AHEAD, BEHIND = 4096, 1024
# At most this many places are compared per token, the nearest first, each over at most MAX_MATCH tokens.
MAX_CANDIDATES, MAX_MATCH = 32, 24


class Alignment:
    """The cursor over one prediction's tokens: `feed` it the tokens the model wrote, then `draft`."""

    def __init__(self, prediction: Sequence[int], min_near: int = MIN_NEAR) -> None:
        self.tokens = list(prediction)
        self.min_near = min_near
        self.pos: int | None = 0  # where the next token is expected; None: lost
        # The last place the cursor was sure of: where SURE tokens in a row matched. A weaker match (one
        # common token inside an inserted block) moves the cursor but not this, so the search after the
        # block starts where the answer left the prediction.
        self.anchor = 0
        self.confidence = 0  # tokens matched in a row up to `pos`: how sure it is (adaptive drafts)
        self.recent: deque[int] = deque(maxlen=MAX_MATCH)  # the model's last tokens, newest last
        self.realignments = 0  # how often the cursor found its place again after losing it
        self._pairs: dict[tuple[int, int], list[int]] = {}  # (a, b) → every i with tokens[i-1:i+1] == [a, b]
        for i in range(1, len(self.tokens)):
            self._pairs.setdefault((self.tokens[i - 1], self.tokens[i]), []).append(i)

    def feed(self, written: Iterable[int]) -> None:
        """The model wrote these tokens (in order) since the last call."""
        tokens = self.tokens
        for token in written:
            self.recent.append(token)
            pos = self.pos
            if pos is not None and pos < len(tokens) and tokens[pos] == token:
                self.pos = pos + 1
                self.confidence += 1
            else:
                found = self._realign()
                self.pos, self.confidence = (None, 0) if found is None else found
                self.realignments += found is not None
            if self.confidence >= SURE:
                self.anchor = self.pos  # type: ignore[assignment]  # a confident cursor has a place

    def draft(self, k: int) -> list[int]:
        """Up to `k` tokens of the prediction from the cursor on; none while it is lost."""
        if self.pos is None or k <= 0:
            return []
        return self.tokens[self.pos : self.pos + k]

    def _realign(self) -> tuple[int, int] | None:
        """(where the next token is expected, the match's length) by the longest match of the model's last
        tokens ending near the last sure place; None when no place matches well enough."""
        tokens, recent, anchor = self.tokens, self.recent, self.anchor
        last = recent[-1]
        best: tuple[int, int, int] | None = None  # (match length, -distance, position)
        for i in range(anchor, min(anchor + NEAR, len(tokens))):
            if tokens[i] == last and (length := self._match(i)) >= self.min_near:
                best = _better(best, length, i, anchor)
        if len(recent) >= 2:
            for i in self._nearest(self._pairs.get((recent[-2], last), []), anchor):
                length = self._match(i)
                if length >= (MIN_AHEAD if i >= anchor else MIN_BEHIND):
                    best = _better(best, length, i, anchor)
        return None if best is None else (best[2] + 1, best[0])

    def _match(self, i: int) -> int:
        """How many of the model's last tokens, newest first, equal the prediction's ending at index `i`."""
        tokens, recent = self.tokens, self.recent
        length, most = 0, min(len(recent), i + 1)
        while length < most and tokens[i - length] == recent[-1 - length]:
            length += 1
        return length

    @staticmethod
    def _nearest(positions: list[int], anchor: int) -> list[int]:
        """The positions within AHEAD / BEHIND of the anchor, nearest first, at most MAX_CANDIDATES."""
        split = bisect_left(positions, anchor)
        ahead = positions[split : bisect_left(positions, anchor + AHEAD, split)][:MAX_CANDIDATES]
        behind = positions[bisect_left(positions, anchor - BEHIND, 0, split) : split][-MAX_CANDIDATES:]
        ahead_i, behind_i = 0, len(behind) - 1
        out: list[int] = []
        while len(out) < MAX_CANDIDATES and (ahead_i < len(ahead) or behind_i >= 0):
            take_ahead = behind_i < 0 or (ahead_i < len(ahead) and ahead[ahead_i] - anchor <= anchor - behind[behind_i])
            if take_ahead:
                out.append(ahead[ahead_i])
                ahead_i += 1
            else:
                out.append(behind[behind_i])
                behind_i -= 1
        return out


def _better(best: tuple[int, int, int] | None, length: int, i: int, anchor: int) -> tuple[int, int, int]:
    """The longer match; of two as long, the one nearer the anchor, ahead of it before behind it."""
    distance = i - anchor if i >= anchor else 2 * (anchor - i)
    candidate = (length, -distance, i)
    return candidate if best is None or candidate[:2] > best[:2] else best
