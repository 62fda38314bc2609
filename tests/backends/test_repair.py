"""Verified edits against the loopback backend: an answer that brings a syntax error is sent back once
to the backend that answered, the broken answer as its prediction, and applied only when the repair
parses; a valid answer costs one request; a file already broken takes a valid answer."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from lsp_server.check import verify as verify_module
from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.config.schema import Config
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.plan import RefactorError, RefactorRequest
from lsp_server.stats.words import status_text, summary
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from lsp_server.testing.responders import SlippingResponder, region_of, rule_responder
from tests.cli_harness import run_cli
from tests.conftest import backend_table, without_probes, write_config

FUNCTION = "def load(path):\n    data = open(path).read()\n    return len(data)\n"
SOURCE = f"import os\n\n\n{FUNCTION}\n\ndef main():\n    return load('x')\n"
RENAMED = FUNCTION.replace("data", "content")
BROKEN = RENAMED.replace("len(content)", "len(content")  # line 6 of the file
ERROR = "'(' was never closed at line 6"


def config(fake: FakeBackend, **refactor: Any) -> Config:
    table: dict[str, Any] = {"default_backend": "fake", "backends": {"fake": backend_table(fake)}}
    return build_config([Layer("test config", {**table, "refactor": refactor})])


def request(text: str = SOURCE, edit_format: str = "region") -> RefactorRequest:
    at = text.index("data =")
    return RefactorRequest("loader.py", text, at, at, "rename data to content", edit_format=edit_format)  # type: ignore[arg-type]


def prediction_of(sent: dict[str, Any]) -> str | None:
    return (sent.get("prediction") or {}).get("content")


async def test_a_broken_answer_is_repaired_with_itself_as_the_prediction(
    engine: Engine, fake_backend: FakeBackend
) -> None:
    fake_backend.enqueue(Reply(text=BROKEN), Reply(text=RENAMED))
    result = await engine.refactor(request(), config(fake_backend))
    assert result.new_text == SOURCE.replace(FUNCTION, RENAMED)
    first, repair = fake_backend.requests
    assert prediction_of(first) == FUNCTION and prediction_of(repair) == BROKEN
    assert region_of(repair["messages"]) == BROKEN  # the answer between the markers: what the model mends
    prompt = repair["messages"][1]["content"]
    assert "syntax error that the code did not have before at line 3 of the region: '(' was never closed" in prompt
    assert ">    3 |     return len(content\n" in prompt
    stats = result.stats
    assert (stats.checked, stats.repaired, stats.repair_problem) == ("python", True, ERROR)
    assert stats.repair_ms and stats.repair_ms > 0 and stats.repair_completion_tokens
    assert stats.waited_ms() == stats.latency_ms + stats.repair_ms
    assert f"repaired: {ERROR} · +" in summary(stats) and status_text(stats).endswith(" · repaired")


async def test_a_repair_that_does_not_mend_it_applies_nothing_and_names_the_error(
    engine: Engine, fake_backend: FakeBackend
) -> None:
    still = RENAMED.replace("read()", "read(")
    fake_backend.enqueue(Reply(text=BROKEN), Reply(text=still))
    with pytest.raises(RefactorError) as info:
        await engine.refactor(request(), config(fake_backend))
    assert str(info.value) == (
        f"the model's answer had a syntax error that the code did not have ({ERROR}), and asked to fix it, it "
        "still has one: '(' was never closed at line 5; nothing was applied — run it again, or ask for a smaller "
        "change"
    )
    assert info.value.output == still  # kept for the user, as refused answers are
    assert info.value.stats is not None and info.value.stats.repaired is False
    assert len(fake_backend.requests) == 2


async def test_a_valid_answer_costs_one_request(engine: Engine, fake_backend: FakeBackend) -> None:
    result = await engine.refactor(request(), config(fake_backend))
    assert result.new_text == SOURCE.replace(FUNCTION, RENAMED)
    assert len(fake_backend.requests) == 1
    assert (result.stats.checked, result.stats.repaired) == ("python", None)
    assert "repair" not in summary(result.stats)


async def test_a_file_already_broken_takes_a_valid_answer_and_refuses_a_broken_one(
    engine: Engine, fake_backend: FakeBackend
) -> None:
    broken_file = SOURCE.replace("    return load('x')", "    return load('x'")  # the user is mid-edit, below
    result = await engine.refactor(request(broken_file), config(fake_backend))
    assert result.new_text == broken_file.replace(FUNCTION, RENAMED)
    assert len(fake_backend.requests) == 1
    fake_backend.enqueue(Reply(text=BROKEN), Reply(text=BROKEN))
    with pytest.raises(RefactorError, match="still has one: '\\(' was never closed at line 6"):
        await engine.refactor(request(broken_file), config(fake_backend))


async def test_with_no_repairs_allowed_a_broken_answer_is_refused_at_once(
    engine: Engine, fake_backend: FakeBackend
) -> None:
    fake_backend.enqueue(Reply(text=BROKEN))
    with pytest.raises(RefactorError) as info:
        await engine.refactor(request(), config(fake_backend, repairs=0))
    assert str(info.value) == (
        f"the model's answer has a syntax error that the code did not have: {ERROR}; nothing was applied — run "
        "it again, or let refactor.repairs ask the model to fix it"
    )
    assert len(fake_backend.requests) == 1


async def test_one_repair_at_most_whatever_refactor_repairs_says(engine: Engine, fake_backend: FakeBackend) -> None:
    fake_backend.enqueue(Reply(text=BROKEN), Reply(text=BROKEN), Reply(text=RENAMED))
    with pytest.raises(RefactorError, match="asked to fix it, it still has one"):
        await engine.refactor(request(), config(fake_backend, repairs=5))
    assert len(fake_backend.requests) == 2  # the answer and one repair; the third reply is never asked for


async def test_with_the_check_off_the_answer_is_applied_as_it_came(engine: Engine, fake_backend: FakeBackend) -> None:
    fake_backend.enqueue(Reply(text=BROKEN))
    result = await engine.refactor(request(), config(fake_backend, verify="off"))
    assert result.new_text == SOURCE.replace(FUNCTION, BROKEN)
    assert result.stats.checked == "off"


async def test_a_broken_hunks_answer_is_repaired_in_the_region_format(engine: Engine, make_fake: Any) -> None:
    fake = make_fake("openai", responder=SlippingResponder(slip="dropped closing bracket", seed=3))
    result = await engine.refactor(request(edit_format="hunks"), config(fake))
    assert result.new_text == SOURCE.replace(FUNCTION, RENAMED)
    first, repair = fake.requests
    assert "SEARCH" in first["messages"][0]["content"] and "SEARCH" not in repair["messages"][0]["content"]
    broken = region_of(repair["messages"])
    assert broken != RENAMED and prediction_of(repair) == broken  # the broken region, as the hunks left it
    assert result.stats.edit_format == "hunks" and result.stats.repaired is True


async def test_a_local_server_drafts_the_repair_from_the_broken_answer_in_its_prompt(
    engine: Engine, make_fake: Any
) -> None:
    fake = make_fake("vllm", responder=SlippingResponder(slip="unterminated string", seed=1))
    text = SOURCE.replace("open(path)", "open(path, 'r')")
    result = await engine.refactor(request(text), config(fake))
    assert result.new_text == text.replace("data", "content")
    _, repair = without_probes(fake.requests)
    assert "prediction" not in repair and "unterminated string literal" in repair["messages"][1]["content"]
    assert region_of(repair["messages"]).count("'") == 1  # the broken answer is what the server drafts from
    assert result.stats.repaired is True


async def test_a_backend_error_on_the_repair_applies_nothing(engine: Engine, fake_backend: FakeBackend) -> None:
    fake_backend.enqueue(Reply(text=BROKEN), Reply(status=400, error="bad request"))
    with pytest.raises(RefactorError) as info:
        await engine.refactor(request(), config(fake_backend))
    message = str(info.value)
    assert message.startswith(f"the model's answer has a syntax error that the code did not have: {ERROR}, and ")
    assert "asking to fix it failed" in message and info.value.output == BROKEN


async def test_the_check_runs_off_the_event_loop(
    engine: Engine, fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[threading.Thread] = []
    real = verify_module.syntax_check

    def watched(*args: Any) -> Any:
        threads.append(threading.current_thread())
        return real(*args)

    monkeypatch.setattr(verify_module, "syntax_check", watched)
    await engine.refactor(request(), config(fake_backend))
    assert threads and threads[0] is not threading.main_thread()
    assert asyncio.get_running_loop().is_running()


# -- through the command line --------------------------------------------------------------------------


def cli(tmp_path: Path, fake: FakeBackend, text: str = SOURCE, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "loader.py").write_text(text, encoding="utf-8")
    config = write_config(tmp_path, fake=fake)
    args = ["refactor", "loader.py", "-i", "rename data to content", "--at", "5", "--write", "--json", *extra]
    return run_cli(*args, config=config, cwd=tmp_path)


def test_the_cli_writes_a_repaired_answer_and_says_so(tmp_path: Path, make_fake: Any) -> None:
    fake = make_fake("openai", responder=SlippingResponder(slip="dropped closing bracket", seed=5))
    done = cli(tmp_path, fake)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "loader.py").read_text(encoding="utf-8") == SOURCE.replace(FUNCTION, RENAMED)
    report = json.loads(done.stdout)
    assert report["outcome"] == "applied" and report["repaired"] is True
    assert "never closed at line " in report["stats"]["repair_problem"]
    _, repair = without_probes(fake.requests)
    assert prediction_of(repair) == region_of(repair["messages"]) != RENAMED  # the broken answer, predicted
    assert f"repaired: {report['stats']['repair_problem']} · +" in done.stderr  # the summary line


def test_the_cli_refuses_an_answer_its_repair_does_not_mend(tmp_path: Path, make_fake: Any) -> None:
    fake = make_fake("openai", responder=SlippingResponder(slip="dropped closing bracket", fixes=False, seed=5))
    done = cli(tmp_path, fake)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert (tmp_path / "loader.py").read_text(encoding="utf-8") == SOURCE  # untouched
    report = json.loads(done.stdout)
    assert report["outcome"] == "refused" and report["repaired"] is False
    error = report["error"]
    assert error["kind"] == "syntax error" and error["line"] >= 5 and "never closed" in error["message"]
    assert done.stderr.startswith("refactor-lsp: the model's answer had a syntax error that the code did not have")
    assert f"{error['message']} at line {error['line']}; nothing was applied" in done.stderr
    kept = Path(report["answer_file"])
    assert kept.read_text(encoding="utf-8") == report["answer"] == region_of(fake.requests[1]["messages"])
    assert len(fake.requests) == 2


def test_the_cli_applies_a_valid_answer_to_a_broken_file_with_one_request(tmp_path: Path, make_fake: Any) -> None:
    fake = make_fake("openai")
    broken_file = SOURCE.replace("    return load('x')", "    return load('x'")
    done = cli(tmp_path, fake, broken_file)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "loader.py").read_text(encoding="utf-8") == broken_file.replace(FUNCTION, RENAMED)
    report = json.loads(done.stdout)
    assert report["repaired"] is None and report["stats"]["checked"] == "python"
    assert len(fake.requests) == 1


GO = (
    "package loader\n\nfunc Load(path string) int {\n\tdata := read(path)\n"
    '\tif data == "" {\n\t\treturn 0\n\t}\n\treturn len(data)\n}\n'
)


def test_the_fake_backends_command_line_slips_in_the_prompts_language_and_mends_on_repair(tmp_path: Path) -> None:
    """`fake_backend --slip` (what the recorded bench of repairs runs): a Go answer with a dropped bracket,
    found by Go's bracket reader, repaired by the next request; the CLI writes the mended answer."""
    command = [sys.executable, "-m", "lsp_server.testing.fake_backend", "--kind", "openai", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--slip", "dropped closing bracket", "--slip-every", "1"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        (tmp_path / "loader.go").write_text(GO, encoding="utf-8")
        config = write_config(tmp_path, fake={"type": "openai", "base_url": url, "model": "fake-model"})
        args = ["refactor", "loader.go", "-i", "rename data to content", "--at", "4", "--write", "--json"]
        done = run_cli(*args, config=config, cwd=tmp_path)
    finally:
        process.terminate()
        process.wait(10)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "loader.go").read_text(encoding="utf-8") == GO.replace("data", "content")
    report = json.loads(done.stdout)
    assert report["repaired"] is True and report["stats"]["checked"] == "brackets"
    refused = subprocess.run([*command, "--slip", "nosuch"], capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "--slip: one of 'dropped closing bracket'" in refused.stderr


def slips_in(repaired: str, refused: str) -> Any:
    """A model whose answer for `repaired` and `refused` drops a bracket; asked to repair, it mends the
    first and writes the second broken again. The other definitions are renamed."""

    def respond(request: dict[str, Any]) -> str:
        region, answer = region_of(request["messages"]), rule_responder(request)
        if region.startswith(f"def {repaired}(") and region.count("(") > region.count(")"):
            return region.replace("len(content + ", "len(content) + ")  # the repair mends it
        if region.startswith((f"def {repaired}(", f"def {refused}(")):
            return answer.replace("len(content)", "len(content")
        return answer

    return respond


def test_the_cli_batch_repairs_or_refuses_each_definition_alone_and_writes_the_rest(
    tmp_path: Path, make_fake: Any
) -> None:
    batch = "".join(f"def f{n}(data):\n    return len(data) + {n}\n\n\n" for n in range(4))
    (tmp_path / "batch.py").write_text(batch, encoding="utf-8")
    fake = make_fake("openai", responder=slips_in("f1", "f2"))
    config = write_config(tmp_path, fake=fake)
    args = ["refactor", "batch.py", "--each", "definition", "-i", "rename data to content", "--write", "--json"]
    done = run_cli(*args, config=config, cwd=tmp_path)
    assert done.returncode == 3, done.stderr  # not every definition applied: each that failed was refused
    f2 = "def f2(data):\n    return len(data) + 2\n"
    expected = batch.replace("data", "content").replace(f2.replace("data", "content"), f2)
    assert (tmp_path / "batch.py").read_text(encoding="utf-8") == expected  # f0, f1 (repaired), f3 written
    targets = {t["definition"]: t for t in json.loads(done.stdout)["targets"]}
    assert {name: t["outcome"] for name, t in targets.items()} == {
        "f0": "applied",
        "f1": "applied",
        "f2": "refused",
        "f3": "applied",
    }
    assert targets["f1"]["stats"]["repaired"] is True and targets["f2"]["stats"]["repaired"] is False
    assert "'(' was never closed at line 10" in targets["f2"]["reason"]
    assert "4 definitions: 3 applied, 1 refused (1 repaired)" in done.stderr
    assert len(fake.requests) == 6  # four answers, two repairs
