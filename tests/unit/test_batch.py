"""A batch's pieces on their own: its targets (regions/targets.py), the rebase of many regions at once
(edits.rebase_each), its totals (pipeline/totals.py) and how a request's targets settle (pipeline/outcome.py)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from lsp_server.backend.metrics import SOURCE_APPROXIMATE
from lsp_server.config.schema import Config
from lsp_server.formats.edits import Replacement, apply_replacements, rebase_each, region_replacements
from lsp_server.pipeline.outcome import settle
from lsp_server.pipeline.plan import RefactorRequest
from lsp_server.pipeline.request import Request
from lsp_server.pipeline.runner import Item, Outcome, TargetOutcome
from lsp_server.pipeline.totals import batch_summary, batch_totals
from lsp_server.regions import choose_region
from lsp_server.regions.definition import Definition
from lsp_server.regions.targets import Target, definitions_touched, top_level_definitions, touched_within
from lsp_server.stats.measured import RefactorStats

PYTHON = """import os

SETTINGS = {
    "a": 1,
}


def load(path):
    def inner():
        return 1
    return inner()


# about parse
def parse(text):
    return text.split()


class Store:
    size = 3

    def get(self, key):
        return self.items[key]

    def put(self, key, value):
        self.items[key] = value


@decorated
async def fetch():
    pass
"""

JS = """import x from "y";

export function a(b) {
  return b;
}

const f = (x) => {
  return x * 2;
};

class K {
  m() { return 1; }
  n() {
    return 2;
  }
}
"""


def names(targets: list[Target]) -> list[str]:
    return [t.name for t in targets]


def between(text: str, first: str, last: str) -> tuple[int, int]:
    return text.index(first), text.index(last) + len(last)


def test_every_top_level_definition_of_a_file_once_and_no_statement():
    targets = top_level_definitions(PYTHON, "python")
    assert names(targets) == ["load", "parse", "Store", "fetch"]  # the dict and the import are no definitions
    # Each region is the one the single refactor chooses for a cursor in it: comment and decorator included.
    for target in targets:
        region = choose_region(PYTHON, target.cursor, target.cursor, "block", "python")
        assert (region.start, region.end) == (target.start, target.end)
    assert PYTHON[targets[1].start : targets[1].end].startswith("# about parse\ndef parse")
    assert PYTHON[targets[3].start : targets[3].end].startswith("@decorated\nasync def fetch")


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        ("    def get", "self.items[key] = value", ["Store.get", "Store.put"]),  # two methods: the two
        ("    size = 3", "self.items[key] = value", ["Store"]),  # the class's own line too: the class
        ("        return 1", "return text.split()", ["load", "parse"]),  # a nested one: its outermost
        ("    return inner()", "    return inner()", ["load"]),
        ("import os", "SETTINGS = {", []),  # no definition at all
    ],
)
def test_the_outermost_definitions_a_selection_touches(first: str, last: str, expected: list[str]):
    assert names(definitions_touched(PYTHON, *between(PYTHON, first, last), "python")) == expected


def test_other_languages_and_regions_never_overlap():
    assert names(top_level_definitions(JS, "javascript")) == ["a", "f", "K"]
    assert names(definitions_touched(JS, *between(JS, "  m()", "return 2;"), "javascript")) == ["m", "n"]
    for text, language in ((PYTHON, "python"), (JS, "javascript")):
        targets = top_level_definitions(text, language)
        assert all(a.end <= b.start for a, b in pairwise(targets))


def test_rebase_each_refuses_only_the_region_typed_in():
    snapshot = "a = 1\n\ndef f():\n    return 1\n\ndef g():\n    return 2\n\ndef h():\n    return 3\n"
    regions = [
        (snapshot.index(n), snapshot.index(n) + len(n))
        for n in ("def f():\n    return 1\n", "def g():\n    return 2\n", "def h():\n    return 3\n")
    ]
    parts = [
        (region, region_replacements(snapshot, *region, snapshot[slice(*region)].replace("return", "yield")))
        for region in regions
    ]
    typed = snapshot.replace("a = 1", "a = 100").replace("return 2", "return 22")
    f, g, h = rebase_each(snapshot, typed, parts)
    assert g.edits is None  # typed inside g
    assert f.edits is not None and h.edits is not None
    result = apply_replacements(typed, sorted([*f.edits, *h.edits], key=lambda e: e.start))
    assert result == "a = 100\n\ndef f():\n    yield 1\n\ndef g():\n    return 22\n\ndef h():\n    yield 3\n"
    # Unchanged: every region as it was computed.
    assert [r.edits for r in rebase_each(snapshot, snapshot, parts)] == [edits for _, edits in parts]


def _outcome(outcome: Outcome, stats: RefactorStats | None = None, reason: str | None = None) -> TargetOutcome:
    target = Target(0, 1, 0, 0, Definition(0, 0, "function", "f"), 0)
    item = Item("a.py", target, RefactorRequest("a.py", "x\n", 0, 0, "do it"), Config())
    return TargetOutcome(item, outcome, reason, stats=stats)


def _stats(**fields: Any) -> RefactorStats:
    base: dict[str, Any] = {"prediction": True, "prediction_via": "field", "acceptance_source": "usage"}
    return RefactorStats(**(base | fields))


def test_totals_add_up_and_leave_approximate_acceptance_out():
    outcomes = [
        _outcome(
            "applied",
            _stats(
                latency_ms=1000, completion_tokens=120, accepted_prediction_tokens=80, rejected_prediction_tokens=20
            ),
        ),
        _outcome(
            "applied",
            _stats(latency_ms=1500, completion_tokens=60, accepted_prediction_tokens=40, rejected_prediction_tokens=0),
        ),
        # Read from /metrics while the others ran: counts their drafts too, so it is not added.
        _outcome(
            "refused",
            _stats(
                latency_ms=500,
                completion_tokens=30,
                accepted_prediction_tokens=900,
                rejected_prediction_tokens=900,
                acceptance_source=SOURCE_APPROXIMATE,
            ),
        ),
        _outcome("error", None, "the backend is down"),
    ]
    totals = batch_totals(outcomes, wall_ms=1500.0, concurrency=4)
    assert totals.outcomes == {"applied": 2, "refused": 1, "error": 1}
    assert totals.latency_sum_ms == 3000 and totals.overlap == 2.0
    assert (totals.accepted_prediction_tokens, totals.rejected_prediction_tokens) == (120, 20)
    assert totals.acceptance_rate == pytest.approx(120 / 140) and totals.acceptance_targets == 2
    # OpenAI bills rejected prediction tokens as completion tokens: they are not output. vLLM never counts its drafts.
    assert totals.output_tokens == (120 - 20) + 60 + 30
    assert totals.tokens_per_s == pytest.approx(totals.output_tokens / 1.5)
    text = batch_summary(totals)
    assert text.startswith("4 definitions: 2 applied, 1 refused, 1 error · 1.5 s, 4 at a time (their latencies add up")
    assert "prediction 86% accepted (120 accepted, 20 rejected; from 2 of the 3 answers)" in text


def shared_failure(outcomes: list[TargetOutcome], whole: bool = False) -> str | None:
    request = Request("each", tuple(o.item for o in outcomes), "", whole=whole)
    return settle(request, outcomes).failure


def test_one_reason_for_every_failure_is_said_once():
    assert shared_failure([_outcome("error", None, "unknown backend"), _outcome("error", None, "unknown backend")]) == (
        "unknown backend"
    )
    assert shared_failure([_outcome("error", None, "a"), _outcome("error", None, "b")]) is None
    assert shared_failure([_outcome("error", None, "a"), _outcome("applied", _stats())]) is None


def test_a_request_applied_whole_holds_every_part_once_one_failed():
    outcomes = [_outcome("edit", _stats()), _outcome("refused", _stats(), "cut off"), _outcome("unchanged", _stats())]
    request = Request("apply", tuple(o.item for o in outcomes), "", whole=True)
    settled = settle(request, outcomes)
    assert [o.outcome for o in settled.outcomes] == ["refused", "refused", "refused"]
    assert settled.edited() == []
    assert settled.failure is not None and settled.failure.startswith("function `f` (lines 1-1): cut off")
    assert "the snippet's other parts were not applied either" in settled.failure


def test_the_edits_of_disjoint_regions_apply_together():
    text = "def f():\n    return 1\n\ndef g():\n    return 2\n"
    first = region_replacements(text, 0, 21, "def f():\n    return 10\n")
    second = region_replacements(text, 22, len(text), "def g():\n    return 20\n")
    edits: list[Replacement] = sorted([*first, *second], key=lambda e: e.start)
    assert apply_replacements(text, edits) == "def f():\n    return 10\n\ndef g():\n    return 20\n"


def test_the_menu_counts_within_a_budget():
    many = "\n\n".join(f"def f{n}():\n    return {n}\n" for n in range(50))
    touched, counted = touched_within(many, 0, len(many), "python", None, 10)
    assert (len(touched), counted) == (10, False)  # two or more, but how many is not known
    touched, counted = touched_within(many, 0, len(many), "python", None, None)
    assert (len(touched), counted) == (50, True)
