"""The vLLM backend type and refactor-lsp's proposer, end to end: `refactor-lsp check` and `refactor`
as child processes against the loopback backend over real HTTP, one playing a vLLM server with the
proposer (it drafts from the prediction in `vllm_xargs`, and answers the probe as the proposer does),
one playing a vLLM server with n-gram lookup. Where the proposer is, the refactor's request carries
the region as the prediction and its drafts come from it; where it is not, the request is the one
sent before the proposer existed."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path
from typing import Any

import pytest

from lsp_server.bench import load_tasks
from lsp_server.proposer import PREDICTION_KEY, PROBE_DRAFT, PROBE_KEY, PROBE_SILENT
from lsp_server.testing.fake_backend import FakeBackend
from tests.backends.test_bench import SMALL_EDIT, TASKS_DIR, chat_requests, corpus_responder, run_bench
from tests.backends.test_cli import SOURCE, run_cli
from tests.backends.test_cli_apply import DIFFLIB, SET_SEQ2, method_text
from tests.conftest import STEP_S, without_probes, write_config

# The refactor's request as vLLM got it before the proposer existed (keys of the JSON body).
PLAIN_KEYS = {"model", "messages", "temperature", "max_tokens", "stream", "stream_options"}


def _refactor_requests(fake: Any) -> list[dict[str, Any]]:
    """The refactors' requests the fake received (the probe's and the warm-ups' left out)."""
    return [r for r in fake.requests if any("<<<REGION" in str(m.get("content")) for m in r["messages"])]


def _probes(fake: Any) -> list[Any]:
    return [r["vllm_xargs"][PROBE_KEY] for r in fake.requests if PROBE_KEY in (r.get("vllm_xargs") or {})]


def test_check_finds_the_proposer_by_its_probe(tmp_path: Path, make_fake) -> None:
    fake = make_fake("vllm", proposer=True)
    result = run_cli("check", config=write_config(tmp_path, local=fake), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "proposer: yes: refactor-lsp's proposer drafts from the prediction" in result.stdout
    assert _probes(fake) == [PROBE_DRAFT, PROBE_SILENT]
    probe = next(r for r in fake.requests if PROBE_KEY in (r.get("vllm_xargs") or {}))
    assert probe["ignore_eos"] is True and probe["max_tokens"] == 4 and probe["temperature"] == 0


def test_check_on_a_server_without_it_says_how_to_serve_it(tmp_path: Path, make_fake) -> None:
    fake = make_fake("vllm")  # n-gram lookup: it ignores vllm_xargs, and drafts the same for both probes
    result = run_cli("check", config=write_config(tmp_path, local=fake), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("proposer:"))
    assert line.startswith("proposer: no: no proposer reads `vllm_xargs` there")
    assert 'README, "Your own vLLM"' in line


def test_a_refactor_sends_the_region_as_the_prediction_where_the_proposer_is(tmp_path: Path, make_fake) -> None:
    fake = make_fake("vllm", proposer=True)
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, local=fake)
    result = run_cli("refactor", "geometry.py", "--at", "5", "-i", "rename foo to area", config=config, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [request] = _refactor_requests(fake)
    region = "def foo(radius):\n    return math.pi * radius**2\n"
    assert request["vllm_xargs"] == {PREDICTION_KEY: region}
    assert set(request) == PLAIN_KEYS | {"vllm_xargs"}
    # The server's drafts, now from the prediction, and their acceptance as the server reports them.
    assert "server-side speculation: " in result.stderr and "% accepted" in result.stderr


def test_where_the_proposer_is_not_the_refactor_sends_what_it_always_sent(tmp_path: Path, make_fake) -> None:
    fake = make_fake("vllm")
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, local=fake)
    result = run_cli("refactor", "geometry.py", "--at", "5", "-i", "rename foo to area", config=config, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [request] = _refactor_requests(fake)
    assert set(request) == PLAIN_KEYS
    assert _probes(fake) == [PROBE_DRAFT, PROBE_SILENT]  # asked once, before the refactor


def test_an_apply_predicts_the_region_with_the_snippets_change_placed(tmp_path: Path, make_fake) -> None:
    """`apply` to a server with the proposer: the answer is drafted from the method with the snippet merged
    in (the merged method, as the expected file has it), not from the method as it was; the prompt is
    unchanged (it still shows the region as it was, and the snippet)."""
    fake = make_fake("vllm", proposer=True)
    shutil.copy(DIFFLIB, tmp_path / "difflib.py")
    (tmp_path / "snippet.py").write_text(SET_SEQ2, encoding="utf-8")
    config = write_config(tmp_path, local=fake)
    result = run_cli("apply", "difflib.py", "snippet.py", "--write", config=config, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    original = DIFFLIB.read_text(encoding="utf-8")
    [request] = without_probes(fake.requests)
    method = method_text(original, difflib.SequenceMatcher.set_seq2)
    assert request["vllm_xargs"] == {PREDICTION_KEY: method.replace("self.b = b\n", "self.b = list(b)\n")}
    assert (tmp_path / "difflib.py").read_text(encoding="utf-8") == original.replace(
        "        self.b = b\n", "        self.b = list(b)\n"
    )


def test_the_bench_sends_every_run_the_prediction_and_names_the_proposer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bench asks before it measures, so its first run is sent as its last; its header says the server
    drafts from the prediction, and the acceptance it reads is the proposer's (drafted from the region)."""
    with (
        FakeBackend("vllm", step_s=STEP_S, responder=corpus_responder, proposer=True) as spec,
        FakeBackend("vllm", step_s=STEP_S, responder=corpus_responder, speculation=False) as plain,
    ):
        config = write_config(tmp_path, spec=spec, plain=plain)
        code, report, markdown = run_bench(
            tmp_path, config, "--backend", "spec", "--baseline-backend", "plain", "--task", SMALL_EDIT, "--repeat", "1"
        )
        measured = chat_requests(spec)
    assert code == 0, capsys.readouterr().err
    task = load_tasks(TASKS_DIR, [SMALL_EDIT])[0]
    start, end = task.span()
    assert [r["vllm_xargs"] for r in measured] == [{PREDICTION_KEY: task.source[start:end]}]
    assert report["meta"]["backend"]["proposer"].startswith("refactor-lsp's proposer drafts from the prediction")
    assert "drafts from the prediction: refactor-lsp's proposer" in markdown
    assert not any(PROBE_KEY in (r.get("vllm_xargs") or {}) for r in plain.requests)  # it does not speculate
