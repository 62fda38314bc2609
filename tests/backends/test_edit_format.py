"""Edit formats end to end against the loopback backend: `hunks` answers applied to the region,
`auto` choosing by size and by history, a hunks answer that does not apply retried in `region`
(said in the notes), and never a partial or truncated hunks answer applied."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.config.schema import Config, ConfigError
from lsp_server.formats.choice import FormatHistory
from lsp_server.formats.hunks import SEARCH_MARKER
from lsp_server.formats.hunks_diff import DIFF_ANSWER_INSTRUCTION, DIFF_SYSTEM_PROMPT
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.plan import RefactorError, RefactorRequest
from lsp_server.stats.words import summary
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from lsp_server.testing.responders import region_of
from tests.conftest import backend_table

# A 162-line class: one rename touches 1 of its lines.
BODY = "".join(
    f"    def step_{i}(self, value):\n        value = abs(value)\n        return value + {i}\n\n" for i in range(40)
)
SOURCE = "import os\n\n\nclass Pipeline:\n    limit = 3\n\n" + BODY + "\ndef main():\n    return Pipeline()\n"
RENAMED = SOURCE.replace("limit", "ceiling")


def config(fake: FakeBackend, **refactor: Any) -> Config:
    return build_config(
        [
            Layer(
                "test config",
                {"default_backend": "fake", "backends": {"fake": backend_table(fake)}, "refactor": refactor},
            )
        ]
    )


def request(edit_format: str | None = None, text: str = SOURCE, at: str = "    limit = 3") -> RefactorRequest:
    offset = text.index(at)
    return RefactorRequest(
        path="pipeline.py",
        text=text,
        start=offset,
        end=offset,
        instruction="rename limit to ceiling",
        edit_format=edit_format,  # type: ignore[arg-type]
    )


def system_prompt(sent: dict[str, Any]) -> str:
    return next(m["content"] for m in sent["messages"] if m["role"] == "system")


async def test_hunks_answers_only_the_change_and_the_file_is_the_expected_one(
    engine: Engine, fake_backend: FakeBackend
) -> None:
    result = await engine.refactor(request("hunks"), config(fake_backend))
    assert result.new_text == RENAMED
    sent = fake_backend.requests[-1]
    assert SEARCH_MARKER in system_prompt(sent) and "prediction" not in sent  # no whole-region prediction
    assert result.stats.edit_format == "hunks" and result.stats.region_lines == 162
    assert result.stats.completion_tokens is not None and result.stats.completion_tokens < 60
    assert " · hunks (set by the request)" in summary(result.stats)
    assert [(e.start, e.end) for e in result.edits] == [(SOURCE.index("limit"), SOURCE.index("limit") + len("limit"))]


async def test_the_diff_form_asks_for_diff_hunks_and_applies_them(engine: Engine, fake_backend: FakeBackend) -> None:
    blocks = await engine.refactor(request("hunks"), config(fake_backend))
    result = await engine.refactor(request("hunks"), config(fake_backend, hunks_form="diff"))
    assert result.new_text == RENAMED and result.edits == blocks.edits
    sent = fake_backend.requests[-1]
    assert system_prompt(sent) == DIFF_SYSTEM_PROMPT and "prediction" not in sent
    assert sent["messages"][-1]["content"].endswith(DIFF_ANSWER_INSTRUCTION)
    assert result.stats.edit_format == "hunks" and not result.stats.notes
    assert result.stats.completion_tokens is not None and blocks.stats.completion_tokens is not None
    assert result.stats.completion_tokens < blocks.stats.completion_tokens  # the form's point: fewer tokens
    # A model that slips into the blocks it knows is read as it answered, and the notes say so.
    fake_backend.enqueue(Reply(text=f"{SEARCH_MARKER}\n    limit = 3\n=======\n    ceiling = 3\n>>>>>>> REPLACE\n"))
    slipped = await engine.refactor(request("hunks"), config(fake_backend, hunks_form="diff"))
    assert slipped.new_text == SOURCE.replace("limit = 3", "ceiling = 3")
    assert list(slipped.stats.notes) == [
        "the model answered in SEARCH/REPLACE blocks, not the diff hunks asked for: read as it answered"
    ]


def test_a_bad_hunks_form_names_the_key_and_its_choices() -> None:
    with pytest.raises(ConfigError) as info:
        build_config([Layer("user config", {"refactor": {"hunks_form": "udiff"}})])
    assert str(info.value) == "user config: `refactor.hunks_form` must be one of 'search-replace', 'diff', not 'udiff'"


async def test_a_hunks_answer_that_rewrites_every_line_has_room_to_finish(
    engine: Engine, fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every line of the class changes: the blocks copy the whole region into SEARCH and write it again
    # in REPLACE, more than the region format's room (about twice the region's tokens) would allow.
    def shout(text: str) -> str:
        return "".join(line.upper() if line.startswith(" ") else line for line in text.splitlines(True))

    monkeypatch.setattr(fake_backend, "responder", lambda sent: shout(region_of(sent["messages"])))
    # An uppercased class is no longer Python (`RETURN VALUE`): the check would refuse it, and this is
    # about the answer's room to finish, not its syntax.
    result = await engine.refactor(request("hunks"), config(fake_backend, verify="off"))
    start, end = SOURCE.index("class Pipeline"), SOURCE.index("\ndef main")
    assert result.new_text == SOURCE[:start] + shout(SOURCE[start:end]) + SOURCE[end:]
    assert fake_backend.requests[-1]["max_tokens"] > result.stats.completion_tokens


async def test_auto_chooses_by_the_region_size(engine: Engine, fake_backend: FakeBackend) -> None:
    big = await engine.refactor(request(), config(fake_backend, hunks_min_lines=100))
    assert big.stats.edit_format == "hunks"
    assert big.stats.format_reason == "auto, 162 lines ≥ hunks_min_lines 100"
    small = await engine.refactor(request(at="    return Pipeline()"), config(fake_backend, hunks_min_lines=100))
    assert small.stats.edit_format == "region" and small.stats.format_reason == "auto, 2 lines < hunks_min_lines 100"
    assert fake_backend.requests[-1]["prediction"]["content"] == "def main():\n    return Pipeline()\n"


async def test_auto_asks_for_a_region_holding_a_divider_line_in_the_region_format(
    engine: Engine, fake_backend: FakeBackend
) -> None:
    # A docstring's heading underline: a SEARCH/REPLACE block around it would hold two dividers.
    text = SOURCE.replace("    limit = 3\n", '    """limit\n=======\n"""\n\n    limit = 3\n')
    result = await engine.refactor(request(text=text), config(fake_backend, hunks_min_lines=100))
    assert result.new_text == text.replace("limit", "ceiling")
    assert result.stats.edit_format == "region"
    assert result.stats.format_reason == "auto, the region holds a `=======` line, which SEARCH/REPLACE blocks use"
    asked = await engine.refactor(request("hunks", text=text), config(fake_backend, hunks_min_lines=100))
    assert asked.stats.edit_format == "hunks" and asked.new_text == result.new_text  # asked for: read at its match
    diff = await engine.refactor(request(text=text), config(fake_backend, hunks_min_lines=100, hunks_form="diff"))
    assert diff.stats.edit_format == "hunks"  # the diff form reads any line as code


AMBIGUOUS = f"{SEARCH_MARKER}\n        value = abs(value)\n=======\n        value = -value\n>>>>>>> REPLACE\n"
MISSING = f"{SEARCH_MARKER}\n    limit = 4\n=======\n    ceiling = 4\n>>>>>>> REPLACE\n"


async def test_auto_retries_a_hunks_answer_that_does_not_apply_in_the_region_format(
    engine: Engine, fake_backend: FakeBackend
) -> None:
    fake_backend.enqueue(Reply(text=MISSING))
    result = await engine.refactor(request(), config(fake_backend, hunks_min_lines=100))
    assert result.new_text == RENAMED
    first, retry = fake_backend.requests[-2:]
    assert SEARCH_MARKER in system_prompt(first) and SEARCH_MARKER not in system_prompt(retry)
    assert retry["prediction"]["content"] == SOURCE[SOURCE.index("class Pipeline") : SOURCE.index("\n\ndef main")]
    stats = result.stats
    assert stats.edit_format == "region" and stats.retried_from == "hunks"
    assert stats.first_attempt_ms and stats.waited_ms() > stats.latency_ms
    assert stats.notes[0].startswith("the hunks answer did not apply (the model's edit block 1 does not match")
    assert "retried in the region format" in stats.notes[0]
    assert "region (the hunks answer did not apply; retried" in summary(stats)


async def test_a_hunks_answer_from_a_fallback_is_retried_where_it_came_from(
    engine: Engine, fake_backend: FakeBackend, make_fake
) -> None:
    """The first backend is down, its fallback answers hunks that do not apply: the region retry goes to
    the backend that answered, and the stats keep both stories (the fallback and the retry)."""
    down = make_fake()
    down.enqueue(Reply(status=503, error="overloaded"))
    backends = {"down": backend_table(down, fallback=["fake"]), "fake": backend_table(fake_backend)}
    layer = {"default_backend": "down", "backends": backends, "refactor": {"hunks_min_lines": 100, "max_retries": 0}}
    fake_backend.enqueue(Reply(text=MISSING))
    result = await engine.refactor(request(), build_config([Layer("test config", layer)]))
    assert result.new_text == RENAMED
    assert len(down.requests) == 1 and len(fake_backend.requests) == 2
    first, retry = fake_backend.requests
    assert SEARCH_MARKER in system_prompt(first) and SEARCH_MARKER not in system_prompt(retry)
    stats = result.stats
    assert (stats.served_by, stats.edit_format, stats.retried_from) == ("fake", "region", "hunks")
    assert stats.notes[0].startswith("the hunks answer did not apply (the model's edit block 1 does not match")
    assert any(note.startswith("served by fallback backend 'fake' because ") for note in stats.notes)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (MISSING, "block 1 does not match the code"),
        (AMBIGUOUS, "block 1 matches the code in 40 places"),
        (MISSING + "and that is all I changed\n", "text outside the SEARCH/REPLACE blocks"),
    ],
    ids=["missing", "ambiguous", "prose"],
)
async def test_a_hunks_answer_that_does_not_apply_changes_nothing(
    engine: Engine, fake_backend: FakeBackend, answer: str, problem: str
) -> None:
    fake_backend.enqueue(Reply(text=answer))
    with pytest.raises(RefactorError) as info:
        await engine.refactor(request("hunks"), config(fake_backend))
    assert problem in str(info.value) and "nothing was applied" in str(info.value)
    assert info.value.stats is not None and info.value.stats.edit_format_failed
    assert info.value.output == answer  # kept for the user to see
    assert len(fake_backend.requests) == 1  # asked for hunks explicitly: no retry


async def test_a_truncated_hunks_answer_is_never_applied(engine: Engine, fake_backend: FakeBackend) -> None:
    whole = f"{SEARCH_MARKER}\n    limit = 3\n=======\n    ceiling = 3\n>>>>>>> REPLACE\n"
    # Cut off by the token cap: refused as any cut-off answer is (a retry would be longer still).
    fake_backend.enqueue(Reply(text=whole, finish_reason="length"))
    with pytest.raises(RefactorError) as info:
        await engine.refactor(request(), config(fake_backend, hunks_min_lines=100))
    assert "nothing was applied" in str(info.value) and len(fake_backend.requests) == 1
    # A block that never ends although the stream did: not applied; asked for hunks, that is the end...
    fake_backend.reset()
    fake_backend.enqueue(Reply(text=whole[: whole.index(">>>>>>>")]))
    with pytest.raises(RefactorError) as info:
        await engine.refactor(request("hunks"), config(fake_backend))
    assert "nothing was applied" in str(info.value) and len(fake_backend.requests) == 1
    # ...and with auto, the region format gets its chance.
    fake_backend.reset()
    fake_backend.enqueue(Reply(text=whole[: whole.index(">>>>>>>")]))
    result = await engine.refactor(request(), config(fake_backend, hunks_min_lines=100))
    assert result.new_text == RENAMED and result.stats.retried_from == "hunks"


async def test_indentation_fallback_is_applied_and_said(engine: Engine, fake_backend: FakeBackend) -> None:
    shifted = f"{SEARCH_MARKER}\nlimit = 3\n=======\nceiling = 3\n>>>>>>> REPLACE\n"
    fake_backend.enqueue(Reply(text=shifted))
    result = await engine.refactor(request("hunks"), config(fake_backend))
    assert result.new_text == SOURCE.replace("limit = 3", "ceiling = 3")
    assert any("indented" in note for note in result.stats.notes)


async def test_history_outweighs_the_size_rule(engine: Engine, fake_backend: FakeBackend) -> None:
    for _ in range(3):
        engine.formats.record("fake", "hunks", 162, False, 900.0)
        engine.formats.record("fake", "region", 162, True, 2000.0)
    result = await engine.refactor(request(), config(fake_backend, hunks_min_lines=100))
    assert result.stats.edit_format == "region"
    assert result.stats.format_reason.startswith("auto, by fake's history for 51-200 lines: hunks")


@pytest.fixture
async def trying_engine() -> AsyncIterator[Engine]:
    """The server's policy: its refactors are recorded, so `auto` may try the other format to learn."""
    engine = Engine(FormatHistory(tries=True))
    yield engine
    await engine.close()


async def test_auto_tries_the_other_format_near_the_threshold_and_then_lets_history_choose(
    trying_engine: Engine, fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = trying_engine
    # 162 lines, under hunks_min_lines 170, in its size bucket (51-200): region by size, hunks tried.
    monkeypatch.setattr(fake_backend, "step_s", 0.002)  # region ~260 ms, hunks ~80: clear of any jitter
    settings = config(fake_backend, hunks_min_lines=170)
    ran = []
    for _ in range(16):
        result = await engine.refactor(request(), settings)
        assert result.new_text == RENAMED
        ran.append((result.stats.edit_format, result.stats.format_reason))
    formats = "".join(f[0] for f, _ in ran)
    assert formats[:12] == "rrrhrrrhrrrh"  # a try after every three runs of the size rule's choice
    assert ran[3][1].startswith("auto, trying hunks (1 of 3) against region, the size rule's choice (162 lines")
    # The fake answers hunks with fewer tokens, so faster: from then on the history picks hunks.
    assert formats[12:] == "hhhh"
    assert ran[-1][1].startswith("auto, by fake's history for 51-200 lines: hunks")
    sent = fake_backend.requests
    assert [SEARCH_MARKER in system_prompt(r) for r in sent] == [f == "h" for f in formats]


async def test_a_preset_can_set_its_format_and_a_request_overrides_it(
    engine: Engine, fake_backend: FakeBackend
) -> None:
    layer = {
        "default_backend": "fake",
        "backends": {"fake": backend_table(fake_backend)},
        "actions": [
            {"id": "rename", "title": "Rename", "instruction": "rename limit to ceiling", "edit_format": "hunks"}
        ],
    }
    cfg = build_config([Layer("test config", layer)])
    offset = SOURCE.index("    limit")
    preset = RefactorRequest(path="p.py", text=SOURCE, start=offset, end=offset, action_id="rename")
    result = await engine.refactor(preset, cfg)
    assert result.stats.edit_format == "hunks" and result.stats.format_reason == "set by action 'rename'"
    overridden = RefactorRequest(
        path="p.py", text=SOURCE, start=offset, end=offset, action_id="rename", edit_format="region"
    )
    assert (await engine.refactor(overridden, cfg)).stats.edit_format == "region"


def test_a_bad_edit_format_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        build_config([Layer("user config", {"refactor": {"edit_format": "diff"}})])
    assert "edit_format" in str(info.value) and "'diff'" in str(info.value)
