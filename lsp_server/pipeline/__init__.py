"""The refactor pipeline: a refactor from its plan to its result, alone or as a batch.

- `plan`: a refactor planned (scope, instruction, prompt and prediction, backend) into a `Plan`;
- `engine`: the `Engine` that runs a plan (stream, hygiene, edits, stats) and owns what outlives one
  refactor (clients, what each backend taught);
- `context_fit`: the prompt and the answer's cap fitted into the backend's context window;
- `prediction_guard`: whether the prediction is sent, from what it recently saved (`prediction = "auto"`);
- `batch`: one instruction for many definitions, run at once through the one engine;
- `batch_stats`: a batch's totals, its line and its stats record.

Imported lazily by the server (after `initialize`): nothing here loads with this folder.
"""
