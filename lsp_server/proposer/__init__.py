"""A vLLM speculative-decoding proposer that drafts from the request's prediction: what OpenAI's
Predicted Outputs do, on your own vLLM server (docs/proposer.md).

The client sends the code being rewritten in the request's `vllm_xargs` (vLLM's per-request extra
arguments, `SamplingParams.extra_args`) under PREDICTION_KEY; vLLM loads the proposer as
`speculative_config.method = "custom_class"` and asks it for draft tokens at each step.

- `align`: the cursor that follows the model's answer through the prediction's tokens;
- `lookup`: prompt lookup (n-grams), what a request without a prediction is drafted from;
- `drafts`: the work for a batch of requests, step by step, and the probe `refactor-lsp check` sends;
- `vllm_adapter`: the class vLLM loads; the only module here that imports vLLM, and nothing imports it.

Apart from `vllm_adapter` this folder imports nothing but the standard library and nothing of the
package above it: installed into vLLM's environment with `pip install --no-deps`, it brings no
dependency, and the language server never imports vLLM.
"""

# The key of `vllm_xargs` that carries the prediction (the text the answer will mostly copy).
PREDICTION_KEY = "refactor_lsp_prediction"
# The key of `vllm_xargs` that marks `refactor-lsp check`'s probe, and its two values: draft at every
# step whatever the request, or never. Only a proposer that reads `vllm_xargs` drafts differently for
# two requests that differ in nothing else (backend/proposer_probe.py).
PROBE_KEY = "refactor_lsp_probe"
PROBE_DRAFT, PROBE_SILENT = "draft", "silent"
