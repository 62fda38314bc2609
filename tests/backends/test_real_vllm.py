"""Through the real local vLLM pair (`benchmarks/local_vllm.sh`): one LSP refactor and one bench task.

Skipped unless both servers answer on 127.0.0.1:8000 and :8001. The tiny models of the demo cannot
really edit code, so these tests check what must hold whatever the model says: the edit is applied
or cleanly refused, and the acceptance figures and the speedup are there.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from lsp_server.cli.main import main
from tests.lsp_harness import editor_of, server_setup, session

SETUP = server_setup()

SPEC_URL = "http://127.0.0.1:8000/v1"
PLAIN_URL = "http://127.0.0.1:8001/v1"
TASKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
WORKSPACE = SETUP.state_dir / "real-workspace"
SOURCE = """def add_all(xs):
    total = 0
    for x in xs:
        total += x
    return total


def mean(xs):
    return add_all(xs) / len(xs)
"""


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/models", timeout=2) as response:
            return any(m.get("id") == "local" for m in json.load(response).get("data", []))
    except (OSError, ValueError):
        return False


pytestmark = [
    pytest.mark.real_backend,
    pytest.mark.skipif(
        not (_answers(SPEC_URL) and _answers(PLAIN_URL)),
        reason="the local vLLM pair is not up (benchmarks/local_vllm.sh start)",
    ),
]


# The built-in default backend is the local speculative server; only the answer is bounded.
client = session(SETUP, WORKSPACE, lambda: {"refactor": {"maxTokens": 96, "timeoutS": 120}})


async def test_lsp_refactor_through_real_vllm(client: LanguageClient) -> None:
    editor = editor_of(client)
    uri = editor.open(WORKSPACE / "sums.py", SOURCE)
    rng = editor.range_of(uri, SOURCE.split("\n\n\n")[0] + "\n")
    result = await editor.execute(
        "refactorLsp.refactor", {"uri": uri, "range": rng, "instruction": "Rename the variable total to acc."}
    )
    status = result["status"]
    assert status in ("applied", "unchanged", "error"), result
    if status == "applied":
        assert editor.buffers[uri] != SOURCE and editor.buffers[uri].endswith(SOURCE.split("\n\n\n")[1])
    else:
        assert editor.buffers[uri] == SOURCE  # refused (cut off, or not code): nothing was touched
        assert "nothing was applied" in result.get("message", "") or status == "unchanged"
    stats = result["stats"]
    assert stats is not None and stats["backend"] == "local" and stats["prediction_via"] == "prompt"
    assert stats["completion_tokens"] > 0 and stats["latency_ms"] > 0
    # The speculative server drafted from the prompt and said how much of it was accepted.
    assert stats["accepted_prediction_tokens"] is not None and stats["rejected_prediction_tokens"] is not None
    assert stats["acceptance_source"] in ("vllm-spec-decode-metrics", "vllm-metrics", "vllm-metrics-approximate")
    assert editor.stats and editor.stats[-1]["accepted_prediction_tokens"] == stats["accepted_prediction_tokens"]
    assert any(m.startswith("refactor-lsp: ") for m in editor.messages())


def test_bench_task_through_the_real_pair(tmp_path: Path) -> None:
    report_path = tmp_path / "bench.json"
    code = main(
        [
            "bench",
            "--backend",
            "local",
            "--baseline-backend",
            "local-plain",
            "--tasks",
            str(TASKS_DIR),
            "--task",
            "py-metrics-loops-to-comprehensions",
            "--repeat",
            "1",
            "--max-tokens",
            "64",
            "--json",
            str(report_path),
        ]
    )
    assert code == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    total = report["total"]
    assert total["speedup"] is not None and total["speedup"] > 0
    assert total["prediction"]["accepted_prediction_tokens"] is not None
    assert total["prediction"]["acceptance_rate"] is not None
    assert total["baseline"]["accepted_prediction_tokens"] is None  # the plain server does not speculate
    assert report["meta"]["backend"]["speculative_decoding"].startswith("on")
    assert report["meta"]["baseline"]["speculative_decoding"].startswith("off")
    assert report["meta"]["backend"]["server_version"].startswith("vLLM")
