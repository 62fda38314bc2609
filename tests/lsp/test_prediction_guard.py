"""The cost guard over real LSP: within one session the server learns from each refactor it finishes,
so a backend that accepts little of the prediction stops getting it, and the editor is told why (the
stats notification and the message)."""

from __future__ import annotations

from lsp_server.pipeline.prediction_guard import MIN_SAMPLES
from lsp_server.stats.history import History, history_path
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.responders import region_of
from tests.conftest import editor_settings
from tests.lsp_harness import server_setup, start_session

SOURCE = "def area(radius):\n    scale = radius * radius\n    return scale * 3\n"


async def test_a_session_stops_sending_a_prediction_the_backend_accepts_little_of(fake_backend: FakeBackend) -> None:
    setup = server_setup()
    workspace = setup.state_dir / "workspace"
    # Uppercased Python does not parse, and the check would refuse it: this is about the guard.
    editor = await start_session(setup, workspace, editor_settings(fake_backend, refactor={"verify": "off"}))
    try:
        for index in range(MIN_SAMPLES + 1):  # a file each: every answer rewrites lowercase code
            uri = editor.open(workspace / f"m{index}.py", SOURCE)
            args = {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "uppercase every word"}
            assert (await editor.execute("refactorLsp.refactor", args))["status"] == "applied"
            assert editor.buffers[uri] == SOURCE.upper()
        sent = ["prediction" in r for r in fake_backend.requests if region_of(r["messages"])]
        assert sent == [True] * MIN_SAMPLES + [False]
        reason = editor.stats[-1]["prediction_reason"]
        assert reason.startswith("prediction off: ") and reason.endswith(" accepted over the last 3 refactors with it")
        assert [s["prediction_reason"] for s in editor.stats[:MIN_SAMPLES]] == [""] * MIN_SAMPLES
        assert reason in editor.messages()[-1]  # the line the user reads says why
        assert reason in editor.stats[-1]["summary"]
    finally:
        await editor.client.shutdown_session()
    # ...and the history the next session (or CLI run) learns from holds every one of them.
    records = History(history_path(setup.env)).read()
    assert [r.prediction_reason for r in records] == [""] * MIN_SAMPLES + [reason]
