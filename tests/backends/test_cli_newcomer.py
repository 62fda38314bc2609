"""What a new user meets first on the command line: messages that fit the case, plurals, help that
says what the output holds, and `check` telling only what it verified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.backends.test_cli import SOURCE, assert_clean_failure, refactor
from tests.cli_harness import run_cli
from tests.conftest import write_config


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    source = tmp_path / "geometry.py"
    source.write_text(SOURCE, encoding="utf-8")
    return {"dir": tmp_path, "source": source, "config": write_config(tmp_path, fake=fake_backend)}


def test_reversed_lines_are_said_to_be_reversed(project: dict[str, Any]) -> None:
    message = assert_clean_failure(refactor(project, "--lines", "5:2", "-i", "x"), code=2)
    assert "--lines 5:2 is reversed: give the first line, then the last (2:5)" in message
    assert "outside" not in message


def test_a_one_line_file_is_one_line(tmp_path: Path, fake_backend: FakeBackend) -> None:
    (tmp_path / "one.py").write_text("x = 1\n", encoding="utf-8")
    config = write_config(tmp_path, fake=fake_backend)
    result = run_cli("refactor", "one.py", "--at", "3", "-i", "x", config=config, cwd=tmp_path)
    assert "--at 3 is outside the file's 1 line\n" in assert_clean_failure(result, code=2)


def test_a_one_line_region_is_named_in_the_singular(project: dict[str, Any]) -> None:
    result = refactor(project, "--lines", "5:5", "-i", "rename radius to r")
    assert result.returncode == 0, result.stderr
    assert "auto, 1 line <" in result.stderr and "1 lines" not in result.stderr


def test_a_successful_write_says_what_it_wrote(project: dict[str, Any]) -> None:
    result = refactor(project, "--at", "5", "-i", "rename foo to area", "--write")
    assert result.returncode == 0, result.stderr
    assert "wrote geometry.py\n" in result.stderr
    assert "def area(radius)" in project["source"].read_text(encoding="utf-8")


def test_an_answer_cut_off_at_the_automatic_cap_is_not_told_to_raise_it_or_select_less(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    # The automatic cap already gave the two-line region room to double: the model is looping.
    fake_backend.enqueue(Reply(text="    return 1\n" * 400))
    message = assert_clean_failure(refactor(project, "--lines", "5:5", "-i", "x"), code=3)
    assert "cut off at 256 tokens, more than twice what the 1-line region takes" in message
    assert "repeating itself" in message and "select a smaller region" not in message


def test_an_answer_cut_off_at_a_tight_cap_the_user_set_says_to_raise_that_cap(
    tmp_path: Path, fake_backend: FakeBackend
) -> None:
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, fake=fake_backend, refactor={"max_tokens": 8})
    result = run_cli("refactor", "geometry.py", "-i", "rename foo to area", config=config, cwd=tmp_path)
    message = assert_clean_failure(result, code=3)
    assert "cut off at its token limit (8 tokens, refactor.max_tokens)" in message
    assert "raise refactor.max_tokens or select a smaller region" in message


def test_the_bench_names_its_own_cap(tmp_path: Path, fake_backend: FakeBackend) -> None:
    config = write_config(tmp_path, fake=fake_backend)
    result = run_cli(
        "bench",
        "--backend",
        "fake",
        "--task",
        "py-metrics-loops-to-comprehensions",
        "--repeat",
        "1",
        "--max-tokens",
        "4",
        config=config,
        cwd=tmp_path,
    )
    assert "(4 tokens, bench --max-tokens)" in result.stdout + result.stderr
    assert "refactor.max_tokens" not in result.stdout + result.stderr
    # The progress line keeps its advice whole: the problem before it gives way.
    (line,) = [line for line in result.stderr.splitlines() if "(without, #1)" in line]
    assert line.endswith("nothing was applied — raise bench --max-tokens or select a smaller region"), line


def test_help_says_what_the_outputs_hold() -> None:
    refactor_help = run_cli("refactor", "--help", config=None, cwd=Path.cwd()).stdout
    text = " ".join(refactor_help.split())
    for field in ('"outcome"', '"new_text"', '"reason"', '"answer"', '"stats"'):
        assert field in text
    bench_help = " ".join(run_cli("bench", "--help", config=None, cwd=Path.cwd()).stdout.split())
    assert "--backend BACKEND the backend to measure" in bench_help
    assert "--repeat REPEAT runs of each task" in bench_help


def test_check_on_a_server_that_does_not_speculate_says_so(tmp_path: Path, make_fake) -> None:
    plain = make_fake("vllm", speculation=False)
    result = run_cli("check", config=write_config(tmp_path, local=plain), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("prediction:"))
    assert "this server does not speculate" in line and "drafts from it" not in line


def test_check_on_a_speculating_server_says_where_it_saw_it(tmp_path: Path, make_fake) -> None:
    result = run_cli("check", config=write_config(tmp_path, local=make_fake("vllm")), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "drafts from it by speculative decoding (speculative-decoding counters on /metrics)" in result.stdout


def test_json_failure_names_the_file_that_kept_the_answer(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    fake_backend.enqueue(Reply(text="Sure! Here is the code you asked for.\n"))
    result = refactor(project, "--at", "5", "-i", "x", "--json")
    assert result.returncode == 3  # refused
    outcome = json.loads(result.stdout)
    assert outcome["outcome"] == "refused"
    kept = Path(outcome["answer_file"])
    assert kept.read_text(encoding="utf-8") == outcome["answer"]
    assert f"(the model's answer: {kept})" in result.stderr


def test_check_fails_on_a_config_with_problems_and_names_each(tmp_path: Path, fake_backend: FakeBackend) -> None:
    config = write_config(tmp_path, fake=fake_backend, refactor={"timeout_s": -3, "context_chars": "big"})
    result = run_cli("check", "--config", str(config), config=None, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "`refactor.timeout_s`" in result.stderr and "`refactor.context_chars`" in result.stderr
    assert "config: FAIL, 2 settings not applied as written (above)" in result.stdout
    assert "config: ok" not in result.stdout and "loaded, with the problems above" not in result.stdout


def test_check_passes_with_advice_only(tmp_path: Path, fake_backend: FakeBackend) -> None:
    # Plain http to another host is advice (your network may be yours), not a failed setting.
    config = write_config(
        tmp_path,
        fake=fake_backend,
        other={"type": "openai-compatible", "base_url": "http://192.0.2.1:8000/v1", "model": "m"},
    )
    result = run_cli("check", "--backend", "fake", "--config", str(config), config=None, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "unencrypted over plain http" in result.stderr
    assert "config: ok, with the advice above" in result.stdout


DEMO_WEIGHTS = "/home/me/refactor-lsp/benchmarks/.vllm/models/smollm2"  # benchmarks/local_vllm.sh's folder


@pytest.mark.parametrize(
    ("served", "root", "demo"),
    [
        ("local", DEMO_WEIGHTS, True),  # the demo, as benchmarks/local_vllm.sh serves it
        ("HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct", True),  # the same weights
        ("local", "/srv/models/Qwen2.5-Coder-7B-Instruct", False),  # a real model under the demo's name
        ("local", "/srv/models/smollm2-but-not-under-models/x", False),
    ],
    ids=["demo", "hub-name", "real-model", "other-folder"],
)
def test_a_refusal_from_the_demo_model_does_not_say_run_it_again(
    tmp_path: Path, make_fake, served: str, root: str, demo: bool
) -> None:
    """The demo's model is too small for the edit: "run it again" seldom helps (another run gives another
    answer, not a usable one), a real model can. The message says what is true of it: the demo's server
    is not deterministic (`bench` reports its answers differing between repetitions), so it never claims
    the same answer every time. What the backend's /v1/models says decides (vLLM's `root`: where the
    weights are)."""
    fake = make_fake("vllm", models=(served,), roots={served: root})
    fake.enqueue(Reply(text="    return 1\n" * 400))  # loops to the automatic cap, as the demo's model does
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, local=fake)
    result = run_cli("refactor", "geometry.py", "--lines", "5:5", "-i", "x", config=config, cwd=tmp_path)
    message = assert_clean_failure(result, code=3)
    assert "cut off at 256 tokens, more than twice what the 1-line region takes" in message
    if demo:
        assert "— this backend serves SmolLM2-135M, the local demo's model: too small for most edits" in message
        assert "its answers differ from run to run, but running it again seldom gives one you can use" in message
        assert "same way every time" not in message and 'README, "A real model"' in message
        assert "run it again or try another model" not in message
    else:
        assert "demo" not in message and "run it again or try another model" in message


def test_the_readme_has_the_section_the_demo_advice_names() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "\n## A real model\n" in readme


def test_each_definition_refused_by_the_demo_model_gets_the_advice_once(tmp_path: Path, make_fake) -> None:
    """The advice is about the backend, not about a definition: a batch lists each definition's reason
    and says it once, at the end."""
    fake = make_fake("vllm", models=("local",), roots={"local": DEMO_WEIGHTS})
    for _ in range(2):
        fake.enqueue(Reply(text="    return 1\n" * 400))
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, local=fake)
    result = run_cli("refactor", "geometry.py", "--each", "definition", "-i", "x", config=config, cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    said = result.stdout + result.stderr
    assert "foo" in said and "describe" in said, said
    assert said.count("the local demo's model") == 1, said
    assert said.rstrip().endswith('point refactor-lsp at a real model (README, "A real model")'), said
