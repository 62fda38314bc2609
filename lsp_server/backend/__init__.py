"""Backends: talking to an OpenAI-compatible server, and what it taught us.

- `chat`: one chat completion streamed with the prediction, retried within bounds (`stream_completion`);
- `stream`: one streamed answer read under the refactor's bounds (`StreamRequest`, `Completion`);
- `clients`: one SDK client per backend, key and timeouts, reused between refactors;
- `errors`: `BackendError`, the one error a backend call raises, its message naming what to fix;
- `window`: a backend's context window, from where the backend says it;
- `memory`: what each backend taught (its window, its characters per token), kept across processes;
- `served`: which model a backend serves, as its `/v1/models` says (the demo's small model, told apart);
- `acceptance`: prediction acceptance as the answer's final chunk reports it;
- `metrics`: vLLM's Prometheus counters, the fallback source of draft acceptance;
- `proposer_probe`: whether a vLLM server runs refactor-lsp's proposer (which drafts from `vllm_xargs`).

The SDK (`openai`) is imported on the first request, not with this folder: it costs start-up time.
"""
