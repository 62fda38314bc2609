"""The loopback fake itself: the other tests trust its simulation and its wire format, so check them."""

from __future__ import annotations

import http.client
import json
import socket
import struct
import time
from typing import Any
from urllib.parse import urlparse

import pytest

from lsp_server.formats.prompt import build_prompt
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from lsp_server.testing.responders import instruction_of, region_of, rule_responder
from lsp_server.testing.speculation import simulate, tokenize

ANSWER = "def total(items):\n    return sum(item.price for item in items)\n"


def post(fake: FakeBackend, body: dict[str, Any], path: str = "/v1/chat/completions") -> tuple[int, Any]:
    """(status, parsed answer): a list of SSE payloads for a stream, else the JSON body."""
    url = urlparse(fake.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        raw = response.read().decode()
    finally:
        conn.close()
    if response.getheader("Content-Type") != "text/event-stream":
        return response.status, json.loads(raw)
    events = [block.removeprefix("data: ") for block in raw.split("\n\n") if block.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return response.status, [json.loads(e) for e in events[:-1]]


def get(fake: FakeBackend, path: str) -> tuple[int, str]:
    url = urlparse(fake.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def chat(prediction: str | None = None, **extra: Any) -> dict[str, Any]:
    prompt = build_prompt(text=ANSWER, start=0, end=len(ANSWER), instruction="rename items to rows", path="t.py")
    body: dict[str, Any] = {
        "model": "fake-model",
        "messages": prompt.messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if prediction is not None:
        body["prediction"] = {"type": "content", "content": prediction}
    body.update(extra)
    return body


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(c["delta"].get("content") or "" for e in events for c in e.get("choices", []))


# -- the simulation -----------------------------------------------------------------------------------


def test_tokenize_keeps_every_character() -> None:
    assert tokenize("a  b\n\tc.d") == ["a", "  ", "b", "\n\t", "c", ".", "d"]
    assert "".join(tokenize(ANSWER)) == ANSWER


def test_without_a_draft_every_pass_emits_one_token() -> None:
    sim = simulate(ANSWER, None)
    assert sim.steps == tokenize(ANSWER)
    assert (sim.accepted, sim.drafted, sim.rejected) == (0, 0, 0)


def test_a_perfect_prediction_is_accepted_almost_whole() -> None:
    n = len(tokenize(ANSWER))
    sim = simulate(ANSWER, ANSWER, draft_len=8)
    assert "".join(sim.steps) == ANSWER
    assert sim.rejected == 0
    assert sim.accepted >= n - len(sim.steps)
    assert len(sim.steps) <= -(-n // 8)  # at least 8 tokens a pass


def test_a_small_edit_costs_a_few_extra_passes() -> None:
    edited = ANSWER.replace("items", "rows")
    perfect, edit, none = simulate(ANSWER, ANSWER), simulate(edited, ANSWER), simulate(edited, None)
    assert "".join(edit.steps) == edited
    assert len(perfect.steps) <= len(edit.steps) < len(none.steps) / 2
    assert 0 < edit.accepted < edit.drafted


def test_an_unrelated_prediction_gains_nothing() -> None:
    sim = simulate(ANSWER, "SELECT name FROM users WHERE id = 1;")
    assert "".join(sim.steps) == ANSWER
    assert sim.accepted <= 1
    assert len(sim.steps) >= len(tokenize(ANSWER)) - 1


def test_prompt_lookup_drafts_after_an_ngram_matches() -> None:
    prompt = "Some text\n" + ANSWER + "\nInstruction: rename"
    aligned = simulate(ANSWER, ANSWER, aligned=True)
    lookup = simulate(ANSWER, prompt, aligned=False)
    assert "".join(lookup.steps) == ANSWER
    assert lookup.steps[0] == tokenize(ANSWER)[0]  # nothing to look up before the first token
    assert len(lookup.steps) < len(tokenize(ANSWER)) / 3
    assert len(aligned.steps) <= len(lookup.steps)


def test_lookup_in_the_answer_so_far_drafts_what_the_answer_repeats() -> None:
    # A line that is not in the prompt, written twice: vLLM's n-gram proposer searches the generated
    # tokens too, so the second copy is drafted; drafting from the prompt alone cannot.
    line = "    audit.record(event, severity=Severity.HIGH, retries=3)\n"
    answer = ANSWER + line + "    pass\n" + line
    prompt = "Rewrite:\n" + ANSWER
    prompt_only = simulate(answer, prompt, aligned=False)
    with_output = simulate(answer, prompt, aligned=False, from_output=True)
    assert "".join(with_output.steps) == answer
    assert len(with_output.steps) < len(prompt_only.steps) - len(tokenize(line)) / 2
    assert with_output.accepted > prompt_only.accepted


def test_prefill_makes_the_first_token_wait_in_proportion_to_the_prompt(make_fake) -> None:
    fake = make_fake("vllm", step_s=0.002, prefill_tokens_per_pass=20)
    body = chat()
    prompt_tokens = sum(len(tokenize(m["content"])) for m in body["messages"])
    assert fake.prefill_s(prompt_tokens) == pytest.approx(0.002 * prompt_tokens / 20)
    assert make_fake("vllm").prefill_s(prompt_tokens) == 0.0  # off by default: the prompt costs nothing
    sent = time.time()
    _, events = post(fake, body)
    assert events[-1]["usage"]["prompt_tokens"] == prompt_tokens
    assert fake.first_content_sent_at[0] - sent >= fake.prefill_s(prompt_tokens)
    assert "prompt read at 20 tokens a pass" in fake.describe()
    with pytest.raises(ValueError, match="prefill_tokens_per_pass"):
        FakeBackend(prefill_tokens_per_pass=-1)


# -- the prompt helpers and the rule-following model ---------------------------------------------------


def test_region_and_instruction_are_read_back_from_our_prompt() -> None:
    body = chat()
    assert region_of(body["messages"]) == ANSWER
    assert instruction_of(body["messages"]) == "rename items to rows"
    assert region_of([{"role": "user", "content": "no markers here"}]) == ""


@pytest.mark.parametrize(
    ("instruction", "expected"),
    [
        ("rename items to rows", ANSWER.replace("items", "rows")),
        ("Rename `item` to `row`", ANSWER.replace("item.", "row.").replace("for item ", "for row ")),
        ("replace total with grand_total", ANSWER.replace("total", "grand_total")),
        ("make it uppercase", ANSWER.upper()),
        ("tidy up", ANSWER),
    ],
)
def test_rule_responder(instruction: str, expected: str) -> None:
    prompt = build_prompt(text=ANSWER, start=0, end=len(ANSWER), instruction=instruction, path="t.py")
    assert rule_responder({"messages": prompt.messages}) == expected


# -- the wire format of each kind ------------------------------------------------------------------------


def test_models_and_unknown_routes(make_fake) -> None:
    fake = make_fake(models=("a", "b"))
    status, body = get(fake, "/v1/models")
    assert status == 200
    assert [m["id"] for m in json.loads(body)["data"]] == ["a", "b"]
    status, body = post(fake, {}, "/v1/embeddings")
    assert status == 404 and "no route" in body["error"]["message"]


def test_openai_kind_stream(fake_backend: FakeBackend) -> None:
    status, events = post(fake_backend, chat(prediction=ANSWER))
    assert status == 200
    expected = ANSWER.replace("items", "rows")
    assert text_of(events) == expected
    assert events[-2]["choices"][0]["finish_reason"] == "stop"
    usage = events[-1]["usage"]
    assert events[-1]["choices"] == []
    sim = simulate(expected, ANSWER, fake_backend.draft_len)
    assert usage["completion_tokens"] == len(tokenize(expected)) + sim.rejected  # billed, as OpenAI does
    assert usage["completion_tokens_details"]["accepted_prediction_tokens"] == sim.accepted
    assert usage["completion_tokens_details"]["rejected_prediction_tokens"] == sim.rejected
    assert fake_backend.requests[0]["prediction"]["content"] == ANSWER


def test_openai_kind_without_prediction_or_usage_request(fake_backend: FakeBackend) -> None:
    _, events = post(fake_backend, chat())
    assert "completion_tokens_details" not in events[-1]["usage"]
    _, events = post(fake_backend, chat(stream_options={}))
    assert all("usage" not in e for e in events)
    assert events[-1]["choices"][0]["finish_reason"] == "stop"


def test_vllm_kind_stream_and_metrics(make_fake) -> None:
    fake = make_fake("vllm")
    body = chat(prediction="ignored by vllm")
    _, events = post(fake, body)
    expected = ANSWER.replace("items", "rows")
    sim = simulate(
        expected, "\n".join(m["content"] for m in body["messages"]), fake.draft_len, aligned=False, from_output=True
    )
    final = events[-1]
    assert final["choices"] == []
    spec = final["metrics"]["speculative_decoding"]
    assert (spec["num_accepted_draft_tokens"], spec["num_draft_tokens"]) == (sim.accepted, sim.drafted)
    status, metrics = get(fake, "/metrics")
    assert status == 200
    assert f"vllm:spec_decode_num_accepted_tokens_total {sim.accepted}.0" in metrics
    assert f"vllm:spec_decode_num_draft_tokens_total {sim.drafted}.0" in metrics


def test_llamacpp_kind_reports_timings_on_the_last_chunk(make_fake) -> None:
    fake = make_fake("llamacpp")
    body = chat()
    _, events = post(fake, body)
    expected = ANSWER.replace("items", "rows")
    sim = simulate(
        expected, "\n".join(m["content"] for m in body["messages"]), fake.draft_len, aligned=False, from_output=True
    )
    assert text_of(events) == expected
    assert all("usage" not in e for e in events)
    timings = events[-1]["timings"]
    assert (timings["draft_n_accepted"], timings["draft_n"]) == (sim.accepted, sim.drafted)
    assert timings["predicted_n"] == len(tokenize(expected))


def test_no_speculation_means_one_token_a_pass(make_fake) -> None:
    fake = make_fake("vllm", speculation=False)
    _, events = post(fake, chat())
    pieces = [c["delta"]["content"] for e in events for c in e.get("choices", []) if c["delta"].get("content")]
    assert pieces == tokenize(ANSWER.replace("items", "rows"))
    assert "metrics" not in events[-1]


def test_max_tokens_cuts_the_answer(fake_backend: FakeBackend) -> None:
    _, events = post(fake_backend, chat(max_tokens=4))
    assert len(tokenize(text_of(events))) <= 4
    assert events[-2]["choices"][0]["finish_reason"] == "length"


def test_scripted_replies_then_the_default(fake_backend: FakeBackend) -> None:
    fake_backend.enqueue(
        Reply(status=503, error="loading", headers={"Retry-After": "2"}),
        Reply(text="x = 1\n", finish_reason="length"),
        Reply(reject_prediction=True),
    )
    status, body = post(fake_backend, chat())
    assert (status, body) == (503, {"error": {"message": "loading"}})
    _, events = post(fake_backend, chat())
    assert text_of(events) == "x = 1\n"
    assert events[-2]["choices"][0]["finish_reason"] == "length"
    status, body = post(fake_backend, chat(prediction="x"))
    assert status == 400 and "prediction" in body["error"]["message"]
    _, events = post(fake_backend, chat())
    assert text_of(events) == ANSWER.replace("items", "rows")
    assert len(fake_backend.requests) == 4


def test_unknown_model(fake_backend: FakeBackend) -> None:
    status, body = post(fake_backend, chat(model="gpt-5"))
    assert status == 404
    assert body["error"]["message"] == "The model `gpt-5` does not exist."


def test_raw_body_is_sent_verbatim(fake_backend: FakeBackend) -> None:
    fake_backend.enqueue(Reply(raw_body=b'data: {"choices": []}\n\ndata: [DONE]\n\n'))
    status, events = post(fake_backend, chat())
    assert status == 200
    assert events == [{"choices": []}]


def stalled_stream(fake: FakeBackend) -> socket.socket:
    """A raw connection whose answer has begun (its status line read) and then stalls for 10 s."""
    fake.enqueue(Reply(stall_after_chars=0, stall_s=10))
    url = urlparse(fake.url)
    sock = socket.create_connection((url.hostname, url.port), timeout=10)
    body = json.dumps(chat()).encode()
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    assert sock.recv(15) == b"HTTP/1.1 200 OK"
    return sock


def wait_for_disconnect(fake: FakeBackend) -> None:
    deadline = time.monotonic() + 5
    while fake.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_client_that_resets_the_connection_mid_stall_is_noticed_at_once(fake_backend: FakeBackend) -> None:
    """An abortive close (RST, as a client that gives up may send) ends the stall as a FIN does."""
    sock = stalled_stream(fake_backend)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # linger 0: a reset, no FIN
    wait_for_disconnect(fake_backend)
    assert fake_backend.disconnects == 1


def test_reset_forgets_every_count_and_record(make_fake) -> None:
    fake = make_fake("vllm")
    post(fake, chat())  # counts drafts, records the request, its headers and its first content
    # A client that hangs up mid-answer is counted as a disconnect.
    with stalled_stream(fake) as sock:
        sock.shutdown(socket.SHUT_WR)  # hang up (a FIN; closing with unread data would reset instead)
        wait_for_disconnect(fake)
    fake.enqueue(Reply(status=503, error="still queued"))
    assert fake.disconnects == 1 and fake.counters["drafted"] > 0 and fake.first_content_sent_at
    assert len(fake.requests) == len(fake.headers_seen) == 2 and len(fake.replies) == 1

    fake.reset()

    assert (fake.requests, fake.headers_seen, fake.replies, fake.first_content_sent_at) == ([], [], [], [])
    assert fake.disconnects == 0
    assert fake.counters == {"accepted": 0, "drafted": 0}
    status, metrics = get(fake, "/metrics")  # what a vLLM-metrics reader sees
    assert status == 200
    assert metrics == "vllm:spec_decode_num_accepted_tokens_total 0.0\nvllm:spec_decode_num_draft_tokens_total 0.0\n"
    status, events = post(fake, chat())  # the queued 503 is gone: the default behaviour answers
    assert status == 200 and text_of(events) == ANSWER.replace("items", "rows")
