"""The refactor pipeline: a request, its targets run as refactors, and what it comes to.

Read top-down, the one path of every request (the server's job and the CLI's command drive it alike):
- `request`: what a request's targets are, by its kind (a cursor's region, each definition, a
  snippet's parts: `KINDS`), and whether they settle each alone or all or none (`Request`);
- `runner`: the targets run through the one engine, at most N at once (`Runner`), each a refactor;
- `outcome`: the targets settled, then recorded once: history, refused answers, the message, the
  stats record, the `--json` shape (`settle`, `end_request`, `Ended`);
- `totals`: a request of several targets' figures, its line and its stats record;
- `merge`: a snippet's parts as targets (where each part goes is `placement.where`'s);
- `splice`: a complete snippet's part, spliced as written and checked, no request;
- `review`: the settled answers as changes to keep or drop, and what is kept checked.

One refactor, below the runner:
- `plan`: a refactor planned (scope, instruction, backend chain, format asked) into a `Plan`: what
  does not change between the requests it may send;
- `attempt`: one request (`Attempt`: its format, prompt, cap, how the prediction travels), and how
  each kind of attempt is made from the plan (the only place an attempt's format is decided);
- `engine`: the `Engine`, whose attempt loop runs a plan (send, read the outcome, make the next
  attempt) and which owns what outlives one refactor (clients, what each backend taught);
- `answer`: an answered attempt read: its stats, the region it gives (hygiene, edits);
- `context_fit`: an attempt's prompt and answer cap fitted into the backend's context window;
- `prediction_guard`: whether the prediction is sent, from what it recently saved (`prediction = "auto"`).

Imported lazily by the server (after `initialize`): nothing here loads with this folder.
"""
