"""The demo advice comes off a refusal's reason whole, whichever way it was joined, and nothing else does."""

from __future__ import annotations

import pytest

from lsp_server.backend.served import with_small_model_advice, without_small_model_advice


@pytest.mark.parametrize(
    "reason",
    [
        "the answer was cut off — run it again or try another model",  # the advice replaces "run it again"
        "the answer does not parse: line 2; nothing was applied",  # joined with "; "
        "a reason that names this backend serves nothing; fine",  # the words alone are not the advice
    ],
)
def test_the_advice_comes_off_whole(reason: str) -> None:
    advised = with_small_model_advice(reason, "SmolLM2-135M")
    problem, advice = without_small_model_advice(advised)
    assert advice is not None and advice.startswith("this backend serves SmolLM2-135M, the local demo's model: ")
    assert advice.endswith('(README, "A real model")')
    assert problem in reason and "demo" not in problem
    assert without_small_model_advice(reason) == (reason, None)
