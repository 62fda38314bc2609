"""How `auto` picks an edit format: the region's size until the backend has history, then its own
medians; a format that often failed to apply is not picked however fast it was."""

from __future__ import annotations

from lsp_server.formats.choice import DEFAULT_HUNKS_MIN_LINES, FormatHistory, choose_format, size_bucket
from lsp_server.stats.history import HistoryRecord


def test_a_format_asked_for_is_used_and_said() -> None:
    choice = choose_format("hunks", "action 'rename'", 3, 80, "cloud", None)
    assert (choice.format, choice.reason, choice.retry_in_region) == ("hunks", "set by action 'rename'", False)


def test_without_history_the_size_decides() -> None:
    assert choose_format("auto", "", 79, 80, "cloud", FormatHistory()).format == "region"
    big = choose_format("auto", "", 80, 80, "cloud", FormatHistory())
    assert (big.format, big.retry_in_region) == ("hunks", True)


def test_unset_the_threshold_is_the_default_for_how_the_backend_gets_the_prediction() -> None:
    # One default per way (the calibrated profiles' crossovers, checked in tests/backends/test_profiles.py),
    # and the reason names which one decided.
    lookup, field, off = (DEFAULT_HUNKS_MIN_LINES[via] for via in ("prompt", "field", "off"))
    choice = choose_format("auto", "", lookup, 0, "local", None, "prompt")
    assert (choice.format, choice.reason) == (
        "hunks",
        f"auto, {lookup} lines ≥ {lookup} (hunks_min_lines with a server that drafts from the prompt)",
    )
    assert choose_format("auto", "", lookup - 1, 0, "local", None, "prompt").format == "region"
    assert choose_format("auto", "", field - 1, 0, "cloud", None, "field").reason == (
        f"auto, {field - 1} lines < {field} (hunks_min_lines with a prediction field)"
    )
    assert choose_format("auto", "", off, 0, "cloud", None, "off").reason == (
        f"auto, {off} lines ≥ {off} (hunks_min_lines with no prediction)"
    )
    # Set, it is the threshold for every backend.
    assert choose_format("auto", "", 90, 80, "local", None, "prompt").reason == "auto, 90 lines ≥ hunks_min_lines 80"


def test_history_decides_once_every_format_has_enough_runs_of_that_size() -> None:
    history = FormatHistory()
    for _ in range(3):
        history.record("cloud", "region", 300, True, 1500.0)
    for _ in range(2):
        history.record("cloud", "hunks", 300, True, 9000.0)
    assert choose_format("auto", "", 300, 80, "cloud", history).reason.startswith("auto, 300 lines")
    history.record("cloud", "hunks", 300, True, 9000.0)
    choice = choose_format("auto", "", 300, 80, "cloud", history)
    assert choice.format == "region"
    assert (
        choice.reason
        == "auto, by cloud's history for 201-800 lines: hunks 9.0 s, 100% applied vs region 1.5 s, 100% applied"
    )
    # Another size or another backend has no history yet.
    assert choose_format("auto", "", 100, 80, "cloud", history).format == "hunks"
    assert choose_format("auto", "", 300, 80, "local", history).format == "hunks"


def test_a_fast_format_that_often_fails_is_not_chosen() -> None:
    history = FormatHistory()
    for ok in (True, False, False, True):
        history.record("cloud", "hunks", 300, ok, 500.0)
    for _ in range(3):
        history.record("cloud", "region", 300, True, 4000.0)
    assert choose_format("auto", "", 300, 80, "cloud", history).format == "region"


def test_the_history_file_teaches_failures_retries_and_successes() -> None:
    records = [
        HistoryRecord(served_by="cloud", edit_format="hunks", region_lines=300, latency_ms=800.0, applied=True),
        HistoryRecord(
            served_by="cloud",
            edit_format="region",
            region_lines=300,
            latency_ms=3000.0,
            applied=True,
            retried_from="hunks",
            first_attempt_ms=700.0,
        ),
        HistoryRecord(served_by="cloud", edit_format="hunks", region_lines=300, edit_format_failed=True, applied=False),
        # A refactor the user rejected, or that timed out, says nothing about its format.
        HistoryRecord(served_by="cloud", edit_format="region", region_lines=300, latency_ms=1.0, applied=False),
    ]
    history = FormatHistory().learn(records)
    assert history.medians("cloud", 300) is None  # region has 1 run only
    history.learn(records[1:2] * 2)
    medians = history.medians("cloud", 300)
    assert medians is not None
    assert medians["region"] == (3000.0, 1.0, 3)
    assert medians["hunks"][1:] == (0.2, 5)  # 1 applied of 5: three failed and were retried, one failed alone


def test_size_buckets() -> None:
    assert [size_bucket(n) for n in (1, 50, 51, 200, 800, 801)] == [
        "1-50 lines",
        "1-50 lines",
        "51-200 lines",
        "51-200 lines",
        "201-800 lines",
        "over 800 lines",
    ]


def test_near_the_threshold_auto_tries_the_other_format_until_history_can_compare() -> None:
    """Run by size alone, `auto` would only measure one format there and never learn from history."""
    history = FormatHistory()
    chosen = []
    for _ in range(14):  # 80 lines: region by size (under 100 on a server that drafts from the prompt)
        choice = choose_format("auto", "", 80, 0, "local", history, "prompt")
        chosen.append(choice.format)
        history.record("local", choice.format, 80, True, 900.0 if choice.format == "hunks" else 2000.0)
    # A try after every three runs of the usual format, until hunks has three runs: then history decides.
    assert "".join(f[0] for f in chosen) == "rrrhrrrhrrrhhh"
    third_try = choose_format("auto", "", 80, 0, "local", _history_of("rrrhrrrhrrr", lines=80), "prompt")
    assert (third_try.format, third_try.retry_in_region) == ("hunks", True)
    assert third_try.reason == (
        "auto, trying hunks (3 of 3) against region, the size rule's choice (80 lines < 100 (hunks_min_lines "
        "with a server that drafts from the prompt)), to choose by local's history for 51-200 lines"
    )
    assert choose_format("auto", "", 80, 0, "local", history, "prompt").reason.startswith(
        "auto, by local's history for 51-200 lines: hunks 0.9 s"
    )
    # Above the threshold, region is the one tried; it is never retried in anything.
    big = _history_of("hhh", lines=190)
    trying_region = choose_format("auto", "", 190, 0, "local", big, "prompt")
    assert (trying_region.format, trying_region.retry_in_region) == ("region", False)


def test_far_from_the_threshold_the_size_rule_stands() -> None:
    # Under 50 lines and over 200 the bench's gap is wide: no slower refactor is spent to measure it.
    history = _history_of("r" * 12, lines=30)
    assert choose_format("auto", "", 30, 0, "local", history, "prompt").format == "region"
    history = _history_of("h" * 12, lines=400)
    assert choose_format("auto", "", 400, 0, "local", history, "prompt").format == "hunks"
    # Set by the user, the threshold moves the band of tries with it: at 600, to 201-800 lines.
    assert choose_format("auto", "", 120, 600, "cloud", _history_of("r" * 12, "cloud"), "field").format == "region"
    assert choose_format("auto", "", 300, 600, "cloud", _history_of("rrr", "cloud", 300), "field").format == "hunks"


def _history_of(formats: str, backend: str = "local", lines: int = 120) -> FormatHistory:
    history = FormatHistory()
    for f in formats:
        history.record(backend, "hunks" if f == "h" else "region", lines, True, 1000.0)
    return history


def test_a_batchs_latencies_teach_auto_nothing() -> None:
    """A refactor run beside others took longer for that: its latency compares with no single one."""
    loaded = [
        HistoryRecord(served_by="cloud", edit_format=f, region_lines=300, latency_ms=ms, applied=True, concurrency=4)
        for f, ms in (("hunks", 9000.0), ("region", 100.0))
    ]
    assert FormatHistory().learn(loaded * 3).medians("cloud", 300) is None
