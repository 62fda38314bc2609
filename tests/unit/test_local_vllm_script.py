"""benchmarks/local_vllm.sh without installing vLLM: which speculation `make demo` ends up running.

The venv's python is a stand-in that records its arguments and fails, as a pip install that cannot
build arctic-inference does, so the fallback and the bench note are checked in well under a second.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "local_vllm.sh"
NGRAM = '{"method":"ngram","num_speculative_tokens":6,"prompt_lookup_max":3,"prompt_lookup_min":2}'


def _home(tmp_path: Path) -> Path:
    """A benchmarks/.vllm that looks set up: vLLM installed, the model converted."""
    home = tmp_path / "vllm"
    python = home / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> "{home}/calls.log"\nexit 1\n')
    python.chmod(0o755)
    (home / "venv" / ".refactor-lsp-vllm-0.32.0").touch()
    (home / "models" / "smollm2").mkdir(parents=True)
    (home / "models" / "smollm2" / "config.json").write_text("{}")
    return home


def _run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"SPEC_METHOD", "SPEC_CONFIG", "SPEC_PORT"}}
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env={**clean, "VLLM_HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _pip_installs(home: Path) -> list[str]:
    log = home / "calls.log"
    return [line for line in log.read_text().splitlines() if " pip install" in line] if log.exists() else []


def test_suffix_decoding_is_the_default_and_falls_back_to_ngram_when_arctic_inference_cannot_install(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    done = _run(home, "setup")
    assert done.returncode == 0, done.stderr
    assert [line.split()[-1] for line in _pip_installs(home)] == ["arctic-inference==0.1.1"]
    assert "uses n-gram prompt lookup instead" in done.stderr
    assert "rm " + str(home / "venv" / ".arctic-inference-failed") in done.stderr

    # The next start does not spend minutes on the same failed build; it says why it runs n-gram.
    again = _run(home, "setup")
    assert again.returncode == 0, again.stderr
    assert len(_pip_installs(home)) == 1
    assert "uses n-gram prompt lookup instead" in again.stderr


def test_ngram_installs_nothing_more(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = _run(home, "setup", SPEC_METHOD="ngram")
    assert done.returncode == 0, done.stderr
    assert _pip_installs(home) == []
    assert "arctic-inference" not in done.stderr


def test_an_unknown_method_is_refused_by_name(tmp_path: Path) -> None:
    done = _run(_home(tmp_path), "setup", SPEC_METHOD="eagle")
    assert done.returncode == 1
    assert "SPEC_METHOD must be suffix, ngram or prediction, not 'eagle'" in done.stderr


def test_prediction_installs_this_checkout_without_its_dependencies_once(tmp_path: Path) -> None:
    """SPEC_METHOD=prediction: refactor-lsp's proposer, installed as the README tells a user to (`--no-deps`),
    and again only when its code changed."""
    home = _home(tmp_path)
    python = home / "venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "$*" >> "{home}/calls.log"\nexit 0\n')
    done = _run(home, "setup", SPEC_METHOD="prediction")
    assert done.returncode == 0, done.stderr
    checkout = str(SCRIPT.parents[1])
    assert [line.split()[-3:] for line in _pip_installs(home)] == [["--no-deps", "--force-reinstall", checkout]]
    assert "arctic-inference" not in done.stderr
    again = _run(home, "setup", SPEC_METHOD="prediction")
    assert again.returncode == 0 and len(_pip_installs(home)) == 1


def test_the_bench_note_names_the_config_the_speculating_server_was_started_with(tmp_path: Path) -> None:
    home = _home(tmp_path)
    assert "(not started by this script)" in _run(home, "note").stdout
    (home / "run").mkdir()
    args = ["--speculative-config", NGRAM, "--per-request-spec-decode-metrics", "summary"]
    (home / "run" / "spec-8000.args").write_text("\n".join(args) + "\n")
    note = _run(home, "note").stdout.strip()
    assert note == (
        f"speculative server: vLLM --speculative-config {NGRAM}; "
        "both servers: --max-model-len 4096 --dtype bfloat16 --enforce-eager"
    )
