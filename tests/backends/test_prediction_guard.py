"""The cost guard on the prediction, against the loopback backend over real HTTP: what the backend
RECEIVED (the `prediction` field or not) as its refactors accept little or most of it, the reason the
stats and the line people read give, and the history: the CLI writes it and its next run learns from
it; the bench writes it only when asked.

The fake answers "uppercase" by rewriting every word (a prediction it accepts a few per cent of),
and "rename describe to summary" by changing the one line that names it (it accepts about 80 %)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.cli.main import main
from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.config.schema import Config
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.plan import RefactorRequest
from lsp_server.pipeline.prediction_guard import MIN_ACCEPTANCE, MIN_SAMPLES, RETRY_EVERY, PredictionGuard
from lsp_server.stats.history import History, history_path
from lsp_server.stats.measured import RefactorStats
from lsp_server.stats.words import summary
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.responders import region_of
from tests.cli_harness import run_cli
from tests.conftest import backend_table, write_config

SOURCE = (
    "def area(radius):\n"
    "    scale = radius * radius\n"
    "    return scale * 3\n"
    "\n\n"
    "def describe(radius):\n"
    '    return f"area {area(radius)} for radius {radius}"\n'
)
REWRITES_EVERYTHING = "uppercase every word"
CHANGES_ONE_NAME = "rename describe to summary"


# Uppercased Python no longer parses, and the check before an edit would refuse it: these tests want a
# rewrite of every word (little of the prediction accepted), not valid code.
UNCHECKED = {"verify": "off"}


def config(fake: FakeBackend, **backend: Any) -> Config:
    table = backend_table(fake) | backend
    layer = {"default_backend": "fake", "backends": {"fake": table}, "refactor": UNCHECKED}
    return build_config([Layer("test config", layer)])


def request(instruction: str) -> RefactorRequest:
    return RefactorRequest(path="area.py", text=SOURCE, start=0, end=len(SOURCE), instruction=instruction)


def sent_prediction(fake: FakeBackend) -> list[bool]:
    """For each refactor the backend received (not the warm-ups), whether it carried the prediction field."""
    return ["prediction" in r for r in fake.requests if region_of(r["messages"])]


@pytest.fixture
async def guarded() -> AsyncIterator[Engine]:
    """The engine as the server and the CLI make it: `prediction = "auto"` decided by the cost guard."""
    engine = Engine(prediction_guard=PredictionGuard())
    yield engine
    await engine.close()


async def test_a_backend_that_accepts_little_gets_no_prediction_after_a_few_refactors_then_a_try(
    guarded: Engine, fake_backend: FakeBackend
) -> None:
    settings = config(fake_backend)
    stats: list[RefactorStats] = []
    for _ in range(MIN_SAMPLES + RETRY_EVERY):
        stats.append((await guarded.refactor(request(REWRITES_EVERYTHING), settings)).stats)
    first = stats[:MIN_SAMPLES]
    assert all(s.acceptance_rate is not None and s.acceptance_rate < MIN_ACCEPTANCE for s in first)
    # Sent while there was nothing to judge by, then not for nine refactors, then once again.
    assert sent_prediction(fake_backend) == [True] * MIN_SAMPLES + [False] * (RETRY_EVERY - 1) + [True]
    accepted = sum(s.accepted_prediction_tokens or 0 for s in first)
    drafted = accepted + sum(s.rejected_prediction_tokens or 0 for s in first)
    reason = f"prediction off: {accepted / drafted:.0%} accepted over the last 3 refactors with it"
    off = stats[MIN_SAMPLES]
    assert (off.prediction, off.prediction_via, off.prediction_reason) == (False, "off", reason)
    parts = summary(off).split(" · ")
    assert reason in parts and "no prediction" not in parts  # the reason in place of "no prediction"
    retry = stats[-1]
    assert (retry.prediction, retry.prediction_reason) == (True, "prediction on: trying it again (1 in 10)")
    assert summary(retry).startswith("refactor ") and " · prediction on: trying it again (1 in 10)" in summary(retry)
    # Every answer was applied all the same: the guard changes what is sent, never the result.
    assert all(s.edit_format == "region" for s in stats)


async def test_a_backend_that_accepts_most_keeps_getting_the_prediction(
    guarded: Engine, fake_backend: FakeBackend
) -> None:
    settings = config(fake_backend)
    stats = [(await guarded.refactor(request(CHANGES_ONE_NAME), settings)).stats for _ in range(2 * MIN_SAMPLES)]
    assert sent_prediction(fake_backend) == [True] * (2 * MIN_SAMPLES)
    assert all(s.acceptance_rate is not None and s.acceptance_rate >= MIN_ACCEPTANCE for s in stats)
    assert stats[-1].prediction_reason.startswith("prediction on: ")
    assert f"accepted over the last {2 * MIN_SAMPLES - 1} refactors with it" in stats[-1].prediction_reason
    assert " · prediction on: " in summary(stats[-1])


async def test_always_and_never_are_not_guarded(guarded: Engine, fake_backend: FakeBackend) -> None:
    for prediction in ("always", "never"):
        settings = config(fake_backend, prediction=prediction)
        for _ in range(MIN_SAMPLES + 1):
            result = await guarded.refactor(request(REWRITES_EVERYTHING), settings)
            assert result.stats.prediction_reason == ""
    assert sent_prediction(fake_backend) == [True] * (MIN_SAMPLES + 1) + [False] * (MIN_SAMPLES + 1)


# -- the CLI writes the history, and its next run learns from it ---------------------------------------


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    (tmp_path / "area.py").write_text(SOURCE, encoding="utf-8")
    return {"dir": tmp_path, "config": write_config(tmp_path, fake=fake_backend, refactor=UNCHECKED)}


def cli_refactor(project: dict[str, Any], *args: str) -> Any:
    """`refactor-lsp refactor area.py ARGS`, a process of its own as a user runs it."""
    return run_cli("refactor", "area.py", *args, config=project["config"], cwd=project["dir"])


def test_the_cli_writes_the_history_and_its_next_run_decides_by_it(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    for _ in range(MIN_SAMPLES):
        assert cli_refactor(project, "-i", REWRITES_EVERYTHING).returncode == 0
    records = History().read()
    assert [(r.served_by, r.prediction_via, r.applied) for r in records] == [("fake", "field", None)] * MIN_SAMPLES
    assert all(r.acceptance_rate is not None and r.acceptance_rate < MIN_ACCEPTANCE for r in records)

    result = cli_refactor(project, "-i", REWRITES_EVERYTHING, "--json")
    assert result.returncode == 0, result.stderr
    assert sent_prediction(fake_backend) == [True] * MIN_SAMPLES + [False]
    stats = json.loads(result.stdout)["stats"]
    assert stats["prediction_reason"].startswith("prediction off: ")
    assert stats["prediction_reason"].endswith(" accepted over the last 3 refactors with it")
    assert stats["prediction_reason"] in result.stderr  # the line people read says it too
    assert len(History().read()) == MIN_SAMPLES + 1


def test_the_cli_tries_again_after_nine_refactors_without_across_runs(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """The count of refactors without the prediction lives in the history, so one-off runs reach the try."""
    low = RefactorStats(
        backend="fake",
        served_by="fake",
        model="fake-model",
        edit_format="region",
        prediction=True,
        prediction_via="field",
        accepted_prediction_tokens=5,
        rejected_prediction_tokens=95,
    )
    history = History()
    for _ in range(MIN_SAMPLES):
        history.append(low)
    for _ in range(RETRY_EVERY - 1):
        history.append(RefactorStats(backend="fake", served_by="fake", model="fake-model", edit_format="region"))
    result = cli_refactor(project, "-i", CHANGES_ONE_NAME)
    assert result.returncode == 0, result.stderr
    assert sent_prediction(fake_backend) == [True]
    assert " · prediction on: trying it again (1 in 10)" in result.stderr


# -- the bench leaves the history alone unless asked -----------------------------------------------------

TASKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
SMALL_EDIT = "js-fetch-add-timeout-option"


@pytest.mark.parametrize("record", [False, True])
def test_the_bench_writes_no_history_unless_asked(
    tmp_path: Path, fake_backend: FakeBackend, record: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = write_config(tmp_path, fake=fake_backend)
    asked = ["--record-history"] if record else []
    bench = ["bench", "--config", str(settings), "--tasks", str(TASKS_DIR), "--task", SMALL_EDIT, "--repeat", "2"]
    assert main([*bench, *asked]) == 0, capsys.readouterr().err
    records = History().read()
    if not record:
        assert records == [] and not history_path().exists()
        return
    # Every measured run, with and without the prediction, as a refactor of yours would be recorded.
    assert sorted(r.prediction_via for r in records) == ["field", "field", "off", "off"]
    assert len(records) == len([r for r in fake_backend.requests if region_of(r["messages"])])
