"""The language server: wiring between the editor and the pipeline, thin and typed.

- `language_server`: the server object (what the editor told, its documents, the refactors running);
- `handlers`: the LSP handlers, and `serve`;
- `stdio`: stdin read by the event loop itself, stdout written by it;
- `startup`: getting to `initialize` fast (the attrs code cache);
- `settings`: the config layers as the server sees them, per workspace folder;
- `actions`: what the code action menu offers (listing never calls a model);
- `job`: one request of any kind (a refactor, each definition, a snippet), from the arguments to the report;
- `progress`: a request's progress in the editor (one refactor's, or several targets');
- `edit`: a request's edits sent to the editor as one versioned edit, rebased onto the user's typing, each
  change annotated (its checkbox in the editor's preview);
- `offer`: a review offered to a plugin and held until it answers, or ticked in the editor's preview;
- `wire`: everything that crosses between the server and an editor plugin, typed.

The pipeline is imported after `initialize`, not with this folder (the editor waits for that answer).
"""
