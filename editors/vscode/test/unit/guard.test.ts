import assert from "node:assert/strict";
import { test } from "node:test";
import { editRefusal, plainText } from "../../src/guard";
import { Host, serverLaunch } from "../../src/launch";

// VS Code's own pattern for a link in a notification (src/vs/workbench/common/notifications.ts): what
// must never match anything the extension shows from the server.
const VSCODE_LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/gi;
const TRUST = "[Trust this folder](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22x%22%7D)";

// The cases of tests/unit/test_shown_text.py: the server's text.neutralise_links gives the same.
test("server text loses its link syntax, as the server's own text.neutralise_links leaves it", () => {
  const cases: [string, string][] = [
    ["![img](https://x.example/p.png) and [a](b)", "![img] (https://x.example/p.png) and [a] (b)"],
    ["ok\n[trust]: command:foo\n   [x]:y", "ok\n[trust] : command:foo\n   [x] :y"],
    [`ignored \`${TRUST}\``, "ignored `[Trust this folder] (command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22x%22%7D)`"],
    ["see <command:foo.bar> and <https://x.example>", "see < command:foo.bar> and < https://x.example>"],
    ["ok\n[t]: command:foo", "ok\n[t] : command:foo"],
    ["refactor 0.4 s · prediction 88% accepted (72 accepted)", "refactor 0.4 s · prediction 88% accepted (72 accepted)"],
  ];
  for (const [text, shown] of cases) {
    assert.equal(plainText(text), shown);
    assert.equal(plainText(shown), shown);
    assert.doesNotMatch(plainText(text), VSCODE_LINK);
  }
});

const running = (uri: string): boolean => uri === "file:///project/app.py";

test("a server-sent edit is accepted for the document being refactored only", () => {
  const edit = { textDocument: { uri: "file:///project/app.py", version: 3 }, edits: [] };
  assert.equal(editRefusal({ documentChanges: [edit] }, running), undefined);
  assert.equal(editRefusal({ changes: { "file:///project/app.py": [] } }, running), undefined);
  const other = { textDocument: { uri: "file:///home/me/.bashrc", version: null }, edits: [] };
  assert.match(editRefusal({ documentChanges: [edit, other] }, running) ?? "", /edit file:\/\/\/home\/me\/\.bashrc/);
  assert.match(editRefusal({ changes: { "file:///project/other.py": [] } }, running) ?? "", /other\.py/);
  for (const kind of ["create", "rename", "delete"]) {
    const change = { kind, uri: "file:///project/app.py", oldUri: "file:///project/app.py", newUri: "file:///x" };
    assert.match(editRefusal({ documentChanges: [edit, change] }, running) ?? "", new RegExp(`to ${kind} a file`));
  }
});

function host(overrides: Partial<Host> = {}): Host {
  const executables = new Set(["/usr/local/bin/refactor-lsp", "/home/me/venv/bin/refactor-lsp", "C:\\tools\\refactor-lsp.EXE"]);
  return {
    home: "/home/me",
    folder: "/home/me/.vscode/extensions/refactor-lsp",
    env: { PATH: "/usr/bin:.:/usr/local/bin", HOME: "/home/me" },
    platform: "linux",
    isExecutable: (file) => executables.has(file),
    ...overrides,
  };
}

test("the server starts from the extension's folder, found on PATH or where you said, never in the workspace", () => {
  const started = serverLaunch({}, host());
  assert.ok(!("missing" in started));
  assert.equal(started.command, "/usr/local/bin/refactor-lsp"); // `.` on PATH is skipped: it would be the workspace
  assert.equal(started.cwd, "/home/me/.vscode/extensions/refactor-lsp");
  assert.equal(started.env.PYTHONSAFEPATH, "1"); // `python -m lsp_server` never imports a folder's own package
  assert.equal(started.env.HOME, "/home/me");
  const yours = serverLaunch({ command: "~/venv/bin/refactor-lsp", args: ["--log-file", "~/x.log"] }, host());
  assert.ok(!("missing" in yours));
  assert.equal(yours.command, "/home/me/venv/bin/refactor-lsp");
  assert.deepEqual(yours.args, ["--log-file", "/home/me/x.log"]);
  // A relative path would be relative to a folder nobody chose: refused, with what to do.
  const relative = serverLaunch({ command: ".venv/bin/refactor-lsp" }, host());
  assert.ok("missing" in relative && /absolute path/.test(relative.missing));
  const absent = serverLaunch({}, host({ env: { PATH: "/usr/bin" } }));
  assert.ok("missing" in absent && /on PATH/.test(absent.missing));
});

test("on Windows a bare name is looked up on PATH alone, with PATHEXT, never in the current folder", () => {
  const windows = host({ platform: "win32", env: { PATH: ".;C:\\tools", PATHEXT: ".COM;.EXE" } });
  const started = serverLaunch({}, windows);
  assert.ok(!("missing" in started));
  assert.equal(started.command, "C:\\tools\\refactor-lsp.EXE");
});
