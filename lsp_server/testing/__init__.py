"""What the tests and the benchmarks run against: the loopback backend, an OpenAI-compatible server on
127.0.0.1, and the server started on real pipes.

Apart from the layers: it may import any of them, and nothing in the package imports it (the layering
test checks both), so it stays out of the wheel and runs from a checkout.

- `fake_backend`: the server (`FakeBackend`; `python -m lsp_server.testing.fake_backend` runs it alone);
- `replies`: how it answers one chat completion, scripted faults included, streamed as SSE;
- `responders`: what it answers, playing the model (`rule_responder`, `corpus_responder`);
- `hunks_write`: the `hunks` answer a good model would give, in either form;
- `snippet_prompt`: an apply's snippet as the loopback backend reads it from the prompt;
- `slips`: the slips models make in code (a bracket dropped, a string unterminated), made on purpose;
- `speculation`, `pacing`, `profiles`: speculative decoding simulated, paced pass by pass, calibrated to
  real backends;
- `context_limit`: its context window, reported and enforced as its kind's real server does;
- `calibration`: what the bench would measure against it, in simulated time;
- `lsp_pipe`: the language server on real pipes, byte for byte, for what no LSP client library sends.
"""
