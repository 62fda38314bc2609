"""The refactor pipeline: a refactor from its plan to its result, alone or as a batch.

- `plan`: a refactor planned (scope, instruction, backend chain, format asked) into a `Plan`: what
  does not change between the requests it may send;
- `attempt`: one request (`Attempt`: its format, prompt, cap, how the prediction travels), and how
  each kind of attempt is made from the plan;
- `engine`: the `Engine`, whose attempt loop runs a plan (send, read the outcome, make the next
  attempt) and which owns what outlives one refactor (clients, what each backend taught);
- `answer`: an answered attempt read: its stats, the region it gives (hygiene, edits);
- `context_fit`: an attempt's prompt and answer cap fitted into the backend's context window;
- `prediction_guard`: whether the prediction is sent, from what it recently saved (`prediction = "auto"`);
- `batch`: one instruction for many definitions, run at once through the one engine;
- `batch_stats`: a batch's totals, its line and its stats record.

Imported lazily by the server (after `initialize`): nothing here loads with this folder.
"""
