"""The proposer's alignment on real edits of code we did not write (a method of the standard library's
textwrap), replayed as speculative decoding replays them at temperature 0: the model's answer is
fixed, each step drafts from the cursor, the longest agreeing prefix of the draft is accepted and the
model writes one token more. What a user would notice is how many forward passes the answer takes
and how many drafted tokens were thrown away; each edit also checks where the cursor is after it.

Tokens: words, single punctuation marks and runs of white space (a simple tokenizer; a real one's
tokens are of that size for code). benchmarks/proposer_alignment.py replays the task corpus on the
demo model's own tokenizer and measures the cost per step.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
import time
from collections import Counter
from dataclasses import dataclass

from lsp_server.proposer import align
from lsp_server.proposer.align import Alignment
from lsp_server.proposer.lookup import PromptLookup

K = 6
VOCABULARY: dict[str, int] = {}


def tokens(text: str) -> list[int]:
    return [VOCABULARY.setdefault(piece, len(VOCABULARY)) for piece in re.findall(r"\w+|[^\w\s]|\s+", text)]


@dataclass
class Replay:
    steps: int  # forward passes after the prefill's first token
    drafted: int
    accepted: int
    lost_at: list[int]  # answer indexes at which the cursor had no place


def replay(prediction: str, answer: str, k: int = K, adaptive: bool = False) -> Replay:
    """Speculative decoding of `answer` with drafts from `prediction`'s cursor."""
    cursor, written = Alignment(tokens(prediction)), tokens(answer)
    cursor.feed(written[:1])  # the prefill's token
    i, steps, drafted, accepted, lost = 1, 0, 0, 0, []
    while i < len(written):
        if cursor.pos is None:
            lost.append(i)
        draft = cursor.draft(min(k, cursor.confidence + 1) if adaptive else k)
        agree = 0
        while agree < len(draft) and i + agree < len(written) and draft[agree] == written[i + agree]:
            agree += 1
        step = written[i : i + agree + 1]
        cursor.feed(step)
        i += len(step)
        steps += 1
        drafted += len(draft)
        accepted += agree
    return Replay(steps, drafted, accepted, lost)


def ideal(answer: str) -> int:
    """The passes an answer takes when the prediction is the answer itself: every draft accepted."""
    return replay(answer, answer).steps


def at_token(text: str, line: int) -> int:
    """The index of the first token of `line` (0-based) in `text`."""
    return len(tokens("".join(text.splitlines(keepends=True)[:line])))


SOURCE = textwrap.dedent(inspect.getsource(textwrap.TextWrapper._wrap_chunks))
LINES = SOURCE.splitlines(keepends=True)


def _most_assigned_local() -> str:
    """The local name the method assigns most often: the variable a rename would pick."""
    names = Counter(
        node.id
        for node in ast.walk(ast.parse(SOURCE))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    )
    return names.most_common(1)[0][0]


def _code_line(index: int) -> int:
    """The first line at or after `index` that holds code, not a comment or blank."""
    while not LINES[index].strip() or LINES[index].lstrip().startswith("#"):
        index += 1
    return index


def test_the_answer_that_copies_the_prediction_is_drafted_whole() -> None:
    done = replay(SOURCE, SOURCE)
    assert done.accepted == done.drafted  # nothing thrown away
    assert done.lost_at == []
    written = len(tokens(SOURCE)) - 1
    assert done.steps == -(-written // (K + 1))  # every pass writes K + 1 tokens


def test_a_renamed_variable_costs_one_pass_or_two_per_occurrence() -> None:
    name = _most_assigned_local()
    renamed = re.sub(rf"\b{name}\b", f"{name}_renamed", SOURCE)
    occurrences = len(re.findall(rf"\b{name}\b", SOURCE))
    assert occurrences >= 5
    done = replay(SOURCE, renamed)
    # Each occurrence: the draft runs into the old name (one pass), the new name is written, and the cursor
    # takes the token after it (the one after the old name) at once.
    assert done.steps <= ideal(renamed) + 2 * occurrences
    assert len(done.lost_at) <= occurrences  # lost only on the new name's token, once each


def test_after_an_inserted_block_the_cursor_takes_up_where_the_answer_left_the_prediction() -> None:
    at = _code_line(len(LINES) // 2)
    indent = LINES[at][: len(LINES[at]) - len(LINES[at].lstrip())]
    block = [
        f"{indent}if self.trace_wrapping is not None:\n",
        f"{indent}    self.trace_wrapping.append(('wrapping', len(lines), width))\n",
        f"{indent}    self.trace_wrapping.flush()\n",
    ]
    answer = "".join(LINES[:at] + block + LINES[at:])
    done = replay(SOURCE, answer)
    inserted = len(tokens("".join(block)))
    # The block is written a token or so a pass (nothing can draft it), and what follows it is drafted as
    # before it: the cursor takes up where the answer left the prediction.
    assert done.steps <= ideal(answer) + inserted
    assert max(done.lost_at) <= at_token(answer, at + len(block)) + 2  # found again on the line after it
    # Common tokens of the block (spaces, brackets) pull the cursor a few places ahead and those drafts
    # are thrown away; adaptive drafts throw away less for the same passes.
    adaptive = replay(SOURCE, answer, adaptive=True)
    assert done.drafted - done.accepted <= 3 * inserted
    assert adaptive.drafted - adaptive.accepted < done.drafted - done.accepted
    assert adaptive.steps <= done.steps + 2


def test_after_a_deleted_block_the_cursor_jumps_over_it() -> None:
    at = _code_line(len(LINES) // 3)
    answer = "".join(LINES[:at] + LINES[at + 8 :])
    deleted = len(tokens("".join(LINES[at : at + 8])))
    assert deleted > align.NEAR  # farther than a one-token match may jump
    done = replay(SOURCE, answer)
    # Found again after MIN_AHEAD tokens matching in a row: a pass or two more than the answer's own text.
    assert done.steps <= ideal(answer) + 3
    assert len(done.lost_at) <= align.MIN_AHEAD


def test_a_moved_line_is_drafted_where_it_was_and_where_it_went() -> None:
    line = _code_line(len(LINES) // 2)
    target = _code_line(line + 6)
    moved = LINES[:line] + LINES[line + 1 : target] + [LINES[line]] + LINES[target:]
    answer = "".join(moved)
    done = replay(SOURCE, answer)
    # Leaving the line's old place, writing it at the new one (a jump back), coming back: a few passes.
    assert done.steps <= ideal(answer) + 6


def test_an_answer_that_leaves_the_prediction_is_not_drafted_from_it() -> None:
    prose = (
        "The code above wraps text. It keeps a list of lines and a list of chunks, and it fills each line "
        "with chunks while they fit, then starts the next one. " * 4
    )
    done = replay(SOURCE, prose)
    # Nothing here is the prediction: the answer takes a pass for nearly every token, as without drafts.
    # Single common tokens (spaces, "the") give the cursor a place for a pass now and then, and those
    # drafts are thrown away; in between it has none and drafts nothing.
    assert done.steps >= 0.75 * len(tokens(prose))
    assert len(done.lost_at) >= done.steps // 3


def test_a_lost_cursor_looks_at_a_bounded_number_of_places_whatever_the_prediction() -> None:
    """The worst case for the search: a prediction of one pair repeated, an answer that never follows it.
    Each token compares at most NEAR + MAX_CANDIDATES places, however long the prediction."""
    calls = 0
    cursor = Alignment([1, 2] * 50_000)
    real_match = cursor._match

    def counted(i: int) -> int:
        nonlocal calls
        calls += 1
        return real_match(i)

    cursor._match = counted  # type: ignore[method-assign]  # counting the comparisons
    answer = [1, 2, 3] * 300
    started = time.perf_counter()
    for token in answer:
        cursor.feed([token])
    elapsed = time.perf_counter() - started
    assert calls <= len(answer) * (align.NEAR + align.MAX_CANDIDATES)
    assert elapsed / len(answer) < 0.005  # generous: a few tens of microseconds a token when the machine is idle


def test_prompt_lookup_drafts_what_followed_the_first_occurrence() -> None:
    lookup = PromptLookup(min_n=2, max_n=3)
    lookup.feed([1, 2, 3, 4, 5, 9, 1, 2])
    assert lookup.draft(3) == [3, 4, 5]
    lookup.feed([7])
    assert lookup.draft(3) == []  # (2, 7) and (1, 2, 7) occurred nowhere before
