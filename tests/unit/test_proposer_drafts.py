"""The proposer as vLLM drives it, without vLLM: the class built with a config, `load_model` called by
a model runner, `propose` called each step with the batch's rows, as vLLM 0.32's custom-class
interface does (lsp_server/proposer/vllm_adapter.py says where). The runner here is a stand-in with
the attributes the adapter reads; the tokenizer one word a token."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from lsp_server.proposer import PREDICTION_KEY, PROBE_DRAFT, PROBE_KEY, PROBE_SILENT
from lsp_server.proposer.drafts import Drafter
from lsp_server.proposer.vllm_adapter import AdaptivePredictionProposer, HybridPredictionProposer, PredictionProposer

WORDS: dict[str, int] = {}


def ids(text: str) -> list[int]:
    return [WORDS.setdefault(word, len(WORDS) + 1) for word in text.split()]


class Row(list[int]):
    """A row of vLLM's `token_ids_cpu` (a numpy array there): sliced, then `.tolist()`."""

    def __getitem__(self, item: Any) -> Any:
        got = super().__getitem__(item)
        return Row(got) if isinstance(item, slice) else got

    def tolist(self) -> list[int]:
        return list(self)


class Runner:
    """The model runner's attributes the adapter reads, and its `load_model` that calls the drafter's."""

    def __init__(self, proposer: PredictionProposer) -> None:
        self.drafter = proposer
        self.requests: dict[str, Any] = {}
        self.input_batch = SimpleNamespace(req_ids=[], num_prompt_tokens=[])
        self.rows: list[Row] = []

    def load_model(self) -> None:
        self.drafter.load_model(object())

    def add(self, request_id: str, prompt: str, xargs: dict[str, object] | None) -> None:
        params = SimpleNamespace(extra_args=xargs)
        self.requests[request_id] = SimpleNamespace(sampling_params=params)
        self.input_batch.req_ids.append(request_id)
        self.input_batch.num_prompt_tokens.append(len(ids(prompt)))
        self.rows.append(Row(ids(prompt)))

    def step(self, written: dict[str, str]) -> list[list[int]]:
        """The model wrote these words for these requests; what the proposer drafts next for each row."""
        sampled = []
        for request_id, row in zip(self.input_batch.req_ids, self.rows, strict=True):
            new = ids(written.get(request_id, ""))
            row.extend(new)
            sampled.append(new)
        return self.drafter.propose(sampled, [len(row) for row in self.rows], self.rows, None)


def config(k: int = 3, window: int = 4096) -> Any:
    return SimpleNamespace(
        model_config=SimpleNamespace(max_model_len=window),
        speculative_config=SimpleNamespace(num_speculative_tokens=k),
    )


def proposer(cls: type[PredictionProposer] = PredictionProposer, k: int = 3, window: int = 4096) -> Runner:
    made = cls(config(k, window))
    made._tokenizer = SimpleNamespace(encode=lambda text, add_special_tokens: ids(text))
    runner = Runner(made)
    runner.load_model()
    return runner


PREDICTION = "def total ( items ) : return sum ( item . price for item in items )"


def test_each_request_is_drafted_from_its_own_prediction_or_by_prompt_lookup() -> None:
    runner = proposer()
    assert runner.drafter.runner is runner  # found up the stack, from its load_model
    runner.add("a", "rewrite it : " + PREDICTION, {PREDICTION_KEY: PREDICTION})
    runner.add("b", "copy : one two three four five", None)
    runner.add("c", "rewrite it : " + PREDICTION, {PREDICTION_KEY: "def total ( rows ) : return len ( rows )"})
    drafts = runner.step({"a": "def", "b": "one", "c": "def"})
    assert drafts == [ids("total ( items"), [], ids("total ( rows")]
    # "b" has no prediction: prompt lookup drafts what followed "one two" in its prompt. "c" wrote a word its
    # prediction does not have there: no draft, until the answer is back in it.
    drafts = runner.step({"a": "total ( items", "b": "two", "c": "total ( items"})
    assert drafts == [ids(") : return"), ids("three four five"), []]
    assert runner.step({"a": ") : return", "b": "three", "c": ")"}) == [
        ids("sum ( item"),
        ids("four five one"),
        ids(": return len"),
    ]


def test_the_prediction_is_tokenized_once_per_request_and_forgotten_when_the_request_ends() -> None:
    runner = proposer()
    calls: list[str] = []
    runner.drafter._tokenizer = SimpleNamespace(encode=lambda text, add_special_tokens: calls.append(text) or ids(text))
    runner.add("a", "rewrite it", {PREDICTION_KEY: PREDICTION})
    for word in ["def", "total", "(", "items"]:
        runner.step({"a": word})
    assert calls == [PREDICTION]
    assert len(runner.drafter.drafter) == 1
    del runner.requests["a"]  # vLLM drops a finished request from its runner
    runner.step({})
    assert len(runner.drafter.drafter) == 0


def test_the_probe_drafts_at_every_step_or_never_whatever_the_request() -> None:
    runner = proposer(k=4)
    runner.add("draft", "reply ok", {PROBE_KEY: PROBE_DRAFT})
    runner.add("silent", "reply ok ok ok", {PROBE_KEY: PROBE_SILENT, PREDICTION_KEY: "ok ok ok"})
    assert runner.step({"draft": "ok", "silent": "ok"}) == [ids("ok ok ok ok"), []]
    assert runner.step({"draft": "sure", "silent": "ok"}) == [ids("sure sure sure sure"), []]


def test_no_draft_runs_past_the_servers_window_nor_for_a_prompt_still_being_read() -> None:
    runner = proposer(k=6, window=20)
    prompt = " ".join(f"w{i}" for i in range(15))
    runner.add("a", prompt, {PREDICTION_KEY: "x y z u v w t"})
    runner.add("b", "short prompt", None)
    drafts = runner.step({"a": "x", "b": ""})  # "b": its prompt is read in chunks, nothing written yet
    assert drafts == [ids("y z u"), []]  # 16 tokens in a window of 20: room for 3 more drafted


def test_a_runner_of_another_shape_gets_no_drafts_and_the_server_goes_on() -> None:
    runner = proposer()
    runner.add("a", "rewrite it", {PREDICTION_KEY: PREDICTION})
    del runner.input_batch.num_prompt_tokens  # vLLM moved what the adapter reads
    assert runner.step({"a": "def"}) == [[]]
    runner.input_batch.num_prompt_tokens = [2]
    assert runner.step({"a": "total"}) == [[]]  # it stays out of the way from then on


def test_without_a_runner_up_the_stack_it_drafts_nothing() -> None:
    made = PredictionProposer(config())
    made.load_model(object())  # called by something that is not a model runner
    assert made.runner is None
    assert made.propose([[1], [2]], [3, 4], [Row([1, 2, 3]), Row([1, 2, 3, 4])]) == [[], []]


def test_adaptive_drafts_grow_with_the_tokens_matched_in_a_row() -> None:
    runner = proposer(AdaptivePredictionProposer, k=6)
    runner.add("a", "rewrite it", {PREDICTION_KEY: PREDICTION})
    assert runner.step({"a": "def"}) == [ids("total ( items")[:2]]
    assert runner.step({"a": "total ("}) == [ids("items ) : return")]
    assert runner.step({"a": "items ) : return"}) == [ids("sum ( item . price for")]


def test_the_requests_kept_are_bounded() -> None:
    drafter = Drafter(3, ids, window=100, max_requests=2)
    for request_id in "abc":
        drafter.step(request_id, {PREDICTION_KEY: PREDICTION}, 3, 2, lambda start, end: [1, 2, 3][start:end])
    assert len(drafter) == 2


def test_the_hybrid_drafts_by_prompt_lookup_only_while_the_answer_is_off_the_prediction() -> None:
    runner = proposer(HybridPredictionProposer, k=3)
    runner.add("a", "rewrite it : " + PREDICTION + " . note : it is fine as it is", {PREDICTION_KEY: PREDICTION})
    assert runner.step({"a": "def"}) == [ids("total ( items")]  # on the prediction: from it
    # Prose, nowhere in the prediction: what followed "it is" in the prompt, not nothing.
    assert runner.step({"a": "note : it is"}) == [ids("fine as it")]
    plain = proposer(PredictionProposer, k=3)
    plain.add("a", "rewrite it : " + PREDICTION + " . note : it is fine as it is", {PREDICTION_KEY: PREDICTION})
    plain.step({"a": "def"})
    assert plain.step({"a": "note : it is"}) == [[]]
