"""The command line (`refactor-lsp`): the language server (default), `refactor`, `check` and `bench`.

- `main`: the entry point (`main`), each subcommand run through the same pipeline as the server;
- `args`: the subcommands, their options and help;
- `io`: what the subcommands share (exit codes, error lines, the config near a file, the diffs printed);
- `batch`: `refactor --each definition`, one instruction for many definitions as one batch;
- `bench`: `bench`, the task corpus measured with and without prediction.

The server itself is imported only when it is started, and after its imports are made fast (`main`).
"""
