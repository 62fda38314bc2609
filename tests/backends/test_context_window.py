"""The standard library's textwrap.py (19 KB) against a backend with a 4,096-token window, over real
HTTP, from the command line: fitted when the region fits, refused before sending when it cannot, the
window learned from the backend's refusal when it reports none, and remembered by the next process."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lsp_server.backend.memory import FILE_NAME
from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.formats.hunks import SEARCH_MARKER
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.plan import RefactorRequest
from lsp_server.testing.context_limit import prompt_tokens
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.cli_harness import run_cli
from tests.conftest import without_probes, write_config
from tests.stdlib_targets import smallest_function_looping_over

WINDOW = 4096
# The issue's `--at 483` (a loop over `line` in Python 3.11's file), found by its structure in any version.
TARGET = smallest_function_looping_over(Path(textwrap.__file__), "line")
SOURCE = TARGET.source
AT = TARGET.cursor_line
RENAMED = TARGET.renamed("line", "row")


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Any]:
    assert len(SOURCE) > 14_000 and RENAMED != SOURCE  # the large file the issue is about, and the edit we ask
    source = tmp_path / "textwrap.py"
    source.write_text(SOURCE, encoding="utf-8")
    return {"dir": tmp_path, "source": source}


def run(project: dict[str, Any], fake: FakeBackend, *args: str) -> Any:
    config = write_config(project["dir"], small=fake)
    return run_cli(*args, config=config, cwd=project["dir"])


def sent_tokens(request: dict[str, Any]) -> int:
    """What the request asks of the window, counted as the backend counts (its own tokenizer)."""
    return prompt_tokens(request) + request["max_tokens"]


def state_file(isolated_env: dict[str, Path]) -> Path:
    return isolated_env["XDG_STATE_HOME"] / "refactor-lsp" / FILE_NAME


def test_the_large_file_is_fitted_to_a_window_the_backend_reports(project: dict[str, Any], make_fake) -> None:
    fake = make_fake("vllm", context_window=WINDOW)
    result = run(project, fake, "refactor", "textwrap.py", "--at", str(AT), "-i", "rename line to row", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["new_text"] == RENAMED
    (request,) = without_probes(fake.requests)  # the first attempt fits: nothing refused
    assert sent_tokens(request) <= WINDOW
    content = request["messages"][1]["content"]
    assert "(shortened around the region)" in content and TARGET.header in content
    assert "fitted to the backend's context window of 4,096 tokens (from /v1/models: max_model_len)" in result.stdout


def test_a_region_that_cannot_fit_is_refused_before_sending(project: dict[str, Any], make_fake) -> None:
    fake = make_fake("vllm", context_window=WINDOW)
    lines = SOURCE.count("\n")
    result = run(project, fake, "refactor", "textwrap.py", "--lines", f"1:{lines}", "-i", "add type hints", "--write")
    assert result.returncode == 1
    message = result.stderr
    assert message.startswith("refactor-lsp: the region (") and "Traceback" not in message
    assert f"({lines} lines, about " in message and " tokens) does not fit the context window" in message
    assert "4,096 tokens (from /v1/models: max_model_len)" in message
    assert "nothing was sent" in message and "select a smaller region" in message and "--max-model-len" in message
    assert fake.requests == []  # nothing reached the backend
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def test_a_backend_that_reports_nothing_teaches_its_window_by_refusing_once(
    project: dict[str, Any], make_fake, isolated_env: dict[str, Path]
) -> None:
    fake = make_fake("vllm", context_window=WINDOW, reports_window=False)
    args = ("refactor", "textwrap.py", "--at", str(AT), "-i", "rename line to row", "--json")
    first = run(project, fake, *args)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["new_text"] == RENAMED
    refused, fitted = without_probes(fake.requests)  # one failed attempt, then the fitted one
    assert sent_tokens(refused) > WINDOW and sent_tokens(fitted) <= WINDOW
    notes = json.loads(first.stdout)["stats"]["notes"]
    assert any("refused the first attempt as too long for its context window of 4,096 tokens" in n for n in notes)
    saved = json.loads(state_file(isolated_env).read_text())["backends"]
    assert [(e["base_url"], e["window"], e["window_source"]) for e in saved] == [(fake.url, WINDOW, "error")]
    # The next process knows the window from the state file: fitted the first time.
    fake.requests.clear()
    second = run(project, fake, *args)
    assert second.returncode == 0, second.stderr
    (request,) = without_probes(fake.requests)
    assert sent_tokens(request) <= WINDOW
    assert not any("refused" in n for n in json.loads(second.stdout)["stats"]["notes"])


def test_a_hunks_answer_that_fails_where_the_region_cannot_fit_says_so(project: dict[str, Any], make_fake) -> None:
    """`auto` asks 180 lines as hunks; the answer's block matches nothing; the region format, in which
    `auto` would ask again, does not fit the window. One request was sent and answered: the message says
    what became of it, and does not advise the format that just failed."""
    fake = make_fake("vllm", context_window=WINDOW)
    first = SOURCE[: SOURCE.index("class TextWrapper:")].count("\n") + 1
    fake.enqueue(Reply(text=f"{SEARCH_MARKER}\n    no such line\n=======\n    nor this\n>>>>>>> REPLACE\n"))
    lines = f"{first}:{first + 179}"
    result = run(project, fake, "refactor", "textwrap.py", "--lines", lines, "-i", "add type hints", "--write")
    assert result.returncode == 3, result.stdout  # an answer came and was refused
    (request,) = without_probes(fake.requests)  # the hunks attempt was sent and answered; nothing else
    assert SEARCH_MARKER in request["messages"][0]["content"] and sent_tokens(request) <= WINDOW
    message = result.stderr
    assert message.startswith("refactor-lsp: the hunks answer could not be applied (the model's edit block 1 ")
    assert "the region format, in which it would be asked again, does not fit the context window of the " in message
    assert "backend 'small', 4,096 tokens (from /v1/models: max_model_len)" in message
    assert "nothing was applied" in message and "select a smaller region" in message and "--max-model-len" in message
    assert "nothing was sent" not in message and "use the hunks edit format" not in message
    assert project["source"].read_text(encoding="utf-8") == SOURCE


@pytest.mark.parametrize(
    "plant",
    ["corrupt", "oversized", "symlink"],
)
def test_a_bad_state_file_is_ignored_safely(
    project: dict[str, Any], make_fake, isolated_env: dict[str, Path], tmp_path: Path, plant: str
) -> None:
    fake = make_fake("vllm", context_window=WINDOW, reports_window=False)
    path = state_file(isolated_env)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Read, this would refuse every refactor: a window of 256 tokens for this very backend.
    lie = {
        "v": 1,
        "backends": [{"base_url": fake.url, "model": "fake-model", "window": 256, "window_source": "models"}],
    }
    target = tmp_path / "not-ours.json"
    if plant == "corrupt":
        path.write_bytes(b'{"v": 1, "backends": [{"base_url": ')
    elif plant == "oversized":
        path.write_text(json.dumps(lie) + " " * 70_000)
    else:
        target.write_text(json.dumps(lie))
        os.symlink(target, path)
    result = run(project, fake, "refactor", "textwrap.py", "--at", str(AT), "-i", "rename line to row", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["new_text"] == RENAMED  # the refusal still teaches the window
    assert len(without_probes(fake.requests)) == 2 and sent_tokens(fake.requests[-1]) <= WINDOW
    assert not path.is_symlink() and json.loads(path.read_text())["backends"][0]["window"] == WINDOW
    if plant == "symlink":
        assert json.loads(target.read_text()) == lie  # the link's target is never written


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("vllm", "context window: 4,096 tokens (from /v1/models: max_model_len)"),
        ("llamacpp", "context window: 4,096 tokens (from /props: n_ctx)"),
        ("openai", "context window: unknown: the backend does not report it"),
    ],
)
def test_check_reports_the_window(tmp_path: Path, make_fake, kind: str, expected: str) -> None:
    fake = make_fake(kind, context_window=WINDOW)
    result = run_cli("check", config=write_config(tmp_path, small=fake), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert any(line.startswith(expected) for line in result.stdout.splitlines()), result.stdout


def test_a_llamacpp_server_is_fitted_by_its_props(project: dict[str, Any], make_fake) -> None:
    fake = make_fake("llamacpp", context_window=WINDOW)
    result = run(project, fake, "refactor", "textwrap.py", "--at", str(AT), "-i", "rename line to row", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["new_text"] == RENAMED
    (request,) = without_probes(fake.requests)
    assert sent_tokens(request) <= WINDOW


@pytest.mark.parametrize("reports", [True, False], ids=["reports-it", "reports-nothing"])
def test_a_window_an_earlier_process_heard_is_asked_again_before_refusing(
    project: dict[str, Any], make_fake, isolated_env: dict[str, Path], reports: bool
) -> None:
    """The user followed the advice and restarted the server with a larger window: the one remembered
    from before does not refuse the refactor; the server says its window again (its report, or its
    refusal of the prompt as planned)."""
    fake = make_fake("vllm", context_window=WINDOW, reports_window=reports)
    path = state_file(isolated_env)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    before = {"base_url": fake.url, "model": "fake-model", "window": 256, "window_source": "error", "seen": 1}
    path.write_text(json.dumps({"v": 1, "backends": [before]}))
    result = run(project, fake, "refactor", "textwrap.py", "--at", str(AT), "-i", "rename line to row", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["new_text"] == RENAMED
    assert len(without_probes(fake.requests)) == (1 if reports else 2) and sent_tokens(fake.requests[-1]) <= WINDOW
    assert json.loads(path.read_text())["backends"][0]["window"] == WINDOW


async def test_characters_per_token_outlive_the_process(make_fake) -> None:
    """The live rate's estimate and the prompt's budget start from what the last process measured."""
    fake = make_fake("openai")
    table = {"type": "openai", "base_url": fake.url, "model": "fake-model"}
    config = build_config([Layer("test", {"default_backend": "f", "backends": {"f": table}})])
    request = RefactorRequest(
        path="textwrap.py",
        text=SOURCE,
        start=SOURCE.index("def indent"),
        end=SOURCE.index("def indent"),
        instruction="rename line to row",
    )
    first = Engine()
    try:
        stats = (await first.refactor(request, config)).stats
    finally:
        await first.close()
    useful, prompt = stats.useful_tokens(), without_probes(fake.requests)[0]["messages"]
    assert useful and stats.prompt_tokens
    later = Engine()  # another process would read the same file
    learned = later.backend_memory.learned(config.backend())
    await later.close()
    assert learned.output_chars_per_token == pytest.approx(stats.output_chars / useful)
    assert learned.prompt_chars_per_token == pytest.approx(sum(len(m["content"]) for m in prompt) / stats.prompt_tokens)
