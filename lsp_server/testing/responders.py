"""What the fake backend answers: the region our prompt marks, read back as a model reads it, and the
responders that play the model (`rule_responder`, `corpus_responder` for the bench's corpus).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config.schema import HunksForm
from ..formats.hunks import SEARCH_MARKER
from ..formats.hunks_diff import DIFF_SYSTEM_PROMPT
from ..formats.lazy_merge import lazy_merge
from .hunks_write import diff_for, hunks_for
from .snippet_prompt import snippet_of

REGION_START = "<<<REGION\n"
REGION_END = "REGION>>>"


def region_of(messages: list[dict[str, Any]]) -> str:
    """The region between the markers of our prompt (what an ideal model starts from)."""
    text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    start = text.find(REGION_START)
    end = text.find("\n" + REGION_END, start)
    if start < 0 or end < 0:
        return ""
    return text[start + len(REGION_START) : end + 1]


def hunks_form_asked(request: dict[str, Any]) -> HunksForm | None:
    """The form of the `hunks` edit format the prompt asks for (by its system prompt); None: the region."""
    for message in request.get("messages", []):
        if message.get("role") == "system":
            content = str(message.get("content", ""))
            if SEARCH_MARKER in content:
                return "search-replace"
            if DIFF_SYSTEM_PROMPT in content:
                return "diff"
    return None


def asks_for_hunks(request: dict[str, Any]) -> bool:
    """The prompt asks for the `hunks` edit format, in either form (SEARCH/REPLACE blocks or diff hunks)."""
    return hunks_form_asked(request) is not None


def model_answer(request: dict[str, Any], responder: Callable[[dict[str, Any]], str]) -> str:
    """What the model the fake plays writes: the responder says what the region becomes, and a model
    asked for hunks answers them in the form asked for, as our prompt asks: each hunk's context and
    removed lines as few as they can be and still occur only once."""
    answer = responder(request)
    form = hunks_form_asked(request)
    if form is not None:
        write = diff_for if form == "diff" else hunks_for
        return write(region_of(request.get("messages", [])), answer, context=0)
    return answer


def language_asked(messages: list[dict[str, Any]]) -> str | None:
    """The language our prompt names (`Language: python`), as a model reads it; None when it names none."""
    text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    match = re.search(r"^Language: (\S+)$", text, re.M)
    return match.group(1) if match else None


def instruction_of(messages: list[dict[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    match = re.search(r"^Instruction: (.*)$", text, re.M)
    return match.group(1) if match else ""


def rule_responder(request: dict[str, Any]) -> str:
    """A model that follows simple instructions exactly: "rename A to B", "replace A with B"; merges an
    apply's snippet into the region as a good model does (`lazy_merge`); else echo."""
    messages = request.get("messages", [])
    region = region_of(messages)
    snippet = snippet_of(messages)
    if snippet is not None:
        return lazy_merge(region, snippet, language_asked(messages))
    instruction = instruction_of(messages)
    for pattern in (r"rename `?(\w+)`? to `?(\w+)`?", r"replace `?(\w+)`? with `?(\w+)`?"):
        match = re.search(pattern, instruction, re.I)
        if match:
            return re.sub(rf"\b{re.escape(match.group(1))}\b", match.group(2), region)
    if "uppercase" in instruction.lower():
        return region.upper()
    return region


def corpus_responder(tasks_dir: Path | str, prime_applies: bool = False) -> Callable[[dict[str, Any]], str]:
    """A perfect model for a bench corpus (benchmarks/tasks/): a task's region gets the task's expected
    region, and each definition of a batch task its expected definition; an apply (a prompt with a
    snippet) of an apply task's part, or of its whole file, what the expected file has there
    (bench/apply_tasks.py); a request without a region (the bench's warm-up) gets "ok"; any other
    region, `rule_responder`. The apply tasks' answers take a few seconds to make: on the first apply
    asked, or now with `prime_applies` (a server started for a bench, so that no merge it times waits).

    Asked for hunks, the server turns that answer into hunks of the form asked for, as for any responder.
    """
    # The bench's own loaders: the same regions, `at` tasks and batch targets resolved alike.
    from ..bench.batch_tasks import load_batch_tasks
    from ..bench.tasks import load_tasks

    answers = {}
    for task in load_tasks(Path(tasks_dir)):
        start, end = task.span()
        answers[task.source[start:end]] = task.expected_region()
    for batch in load_batch_tasks(Path(tasks_dir)):
        answers |= batch.answers()

    merges: dict[str, str] = {}

    def prime() -> None:
        from ..bench.apply_tasks import load_apply_tasks

        for task in load_apply_tasks(Path(tasks_dir))[0]:
            merges.update(task.answer_map())

    if prime_applies:
        prime()

    def respond(request: dict[str, Any]) -> str:
        messages = request.get("messages", [])
        region = region_of(messages)
        if not region:
            return "ok"
        if snippet_of(messages) is not None:
            if not merges:
                prime()
            if region in merges:
                return merges[region]
        return answers[region] if region in answers else rule_responder(request)

    return respond


class SlippingResponder:
    """A model that slips (`slips.SLIPS`) in its answers and, asked to repair one, writes the answer it
    meant (`fixes`), or the broken one again. It knows a repair by its region: an answer it broke.

    `every`: one answer in this many slips (1: each); `slip`: the slip's name in `slips.SLIPS`;
    `language`: the code's languageId, None to read it from the prompt's `Language:` line. Asked for
    hunks, the hunks of the broken region come back, as for any responder (`model_answer`).
    """

    def __init__(
        self,
        responder: Callable[[dict[str, Any]], str] = rule_responder,
        slip: str = "dropped closing bracket",
        every: int = 1,
        fixes: bool = True,
        language: str | None = "python",
        seed: int = 0,
    ) -> None:
        from .slips import SLIPS

        self.responder, self.slip, self.every, self.fixes = responder, SLIPS[slip], max(every, 1), fixes
        self.language = language
        self.random = random.Random(seed)
        self.answers = 0
        self.meant: dict[str, str] = {}  # a broken answer → the answer it was meant to be

    def __call__(self, request: dict[str, Any]) -> str:
        region = region_of(request.get("messages", []))
        if region in self.meant:
            return self.meant[region] if self.fixes else region
        answer = self.responder(request)
        self.answers += 1
        if (self.answers - 1) % self.every:
            return answer
        broken = self.slip(answer, self.language or _language_in(request), self.random)
        if broken is None or broken == answer:
            return answer
        self.meant[broken] = answer
        return broken


def _language_in(request: dict[str, Any]) -> str:
    """The languageId the prompt names (`Language: go`), else plaintext."""
    for message in request.get("messages", []):
        found = re.search(r"^Language: (\S+)$", str(message.get("content", "")), re.M)
        if found:
            return found.group(1)
    return "plaintext"
