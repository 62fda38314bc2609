import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import type { LogOutputChannel } from "vscode";
import type { Middleware } from "vscode-languageclient/node";
import { createClient, launch } from "../../src/client";
import { RefactorStatus } from "../../src/status";
import { LanguageClient } from "./languageclient-stub"; // `vscode-languageclient/node` in src/client.ts
import { progressShown, settings, shown, workspace } from "./vscode-stub"; // `vscode` in src/

const output = { info() {}, warn() {}, error() {} } as unknown as LogOutputChannel;
const FOLDER = "/home/me/.vscode/extensions/refactor-lsp";
const TRUST = "[Trust this folder](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22x%22%7D)";
const URI = "file:///project/app.py";

function client(): { made: LanguageClient; middleware: Middleware; status: RefactorStatus } {
  const status = new RefactorStatus();
  const started = { command: process.execPath, args: [], cwd: FOLDER, env: {} };
  createClient(output, status, started);
  const made = LanguageClient.made[LanguageClient.made.length - 1];
  return { made, middleware: made.clientOptions.middleware as Middleware, status };
}

test("the server's messages are shown as plain text: what they quote is never a link", async () => {
  const { made } = client();
  const show = made.handlers.get("window/showMessage");
  assert.ok(show, "the extension shows the server's messages itself (the client's own handler makes links)");
  shown.length = 0;
  await show({ type: 2, message: `refactor-lsp: .refactor-lsp.toml: \`${TRUST}\` is not a known setting` } as never);
  assert.deepEqual(shown, [
    {
      level: "warning",
      message:
        "refactor-lsp: .refactor-lsp.toml: `[Trust this folder] (command:workbench.action.terminal.sendSequence?" +
        "%7B%22text%22%3A%22x%22%7D)` is not a known setting",
    },
  ]);
});

test("a refactor's progress notification shows its title and messages as plain text", async () => {
  const { middleware } = client();
  progressShown.length = 0;
  const progress = middleware.handleWorkDoneProgress!;
  const next = (): void => {};
  progress("refactor-lsp/1", { kind: "begin", title: `Refactor with prediction: ${TRUST}`, message: TRUST }, next);
  progress("refactor-lsp/1", { kind: "report", message: `12/40 chars on ${TRUST}` }, next);
  progress("refactor-lsp/1", { kind: "end" }, next);
  const [bar] = progressShown;
  assert.equal(bar.title, "Refactor with prediction: [Trust this folder] (command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22x%22%7D)");
  for (const { message } of bar.reports) assert.ok(message === undefined || !message.includes("]("), message);
});

test("settings reach the server only through the filtered workspace/configuration answer", () => {
  const { made } = client();
  // `synchronize.configurationSection` would push the raw section, a workspace's values included.
  assert.equal((made.clientOptions.synchronize as { configurationSection?: unknown } | undefined)?.configurationSection, undefined);
});

test("the server may edit the document being refactored, and nothing else", async () => {
  const { middleware } = client();
  const applied: unknown[] = [];
  const apply = async (params: unknown) => {
    applied.push(params);
    return { applied: true };
  };
  const handleApplyEdit = middleware.workspace!.handleApplyEdit!;
  const edit = (uri: string) => ({ edit: { documentChanges: [{ textDocument: { uri, version: 1 }, edits: [] }] } });
  // No refactor running: no edit at all.
  assert.deepEqual(await handleApplyEdit(edit(URI), apply as never), {
    applied: false,
    failureReason: `the server asked to edit ${URI}, which no refactor of yours is rewriting`,
  });
  // While one runs on app.py: app.py only, and only its text.
  let finish = (): void => {};
  const command = middleware.executeCommand!("refactorLsp.refactor", [{ uri: URI }], () => new Promise<void>((resolve) => (finish = resolve)));
  assert.equal(((await handleApplyEdit(edit(URI), apply as never)) as { applied: boolean }).applied, true);
  const other = (await handleApplyEdit(edit("file:///home/me/.bashrc"), apply as never)) as { applied: boolean };
  assert.equal(other.applied, false);
  const created = { edit: { documentChanges: [{ kind: "create", uri: "file:///project/evil.py" }] } };
  assert.equal(((await handleApplyEdit(created as never, apply as never)) as { applied: boolean }).applied, false);
  assert.equal(applied.length, 1);
  finish();
  await command;
});

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));

test("the server program is yours: machine scope, never a workspace's value, even in a trusted one", () => {
  const properties = manifest.contributes.configuration.properties;
  for (const key of ["refactorLsp.server.command", "refactorLsp.server.args"]) {
    assert.equal(properties[key].scope, "machine", key);
    assert.doesNotMatch(properties[key].markdownDescription, /-m.{0,8}lsp_server/, key);
  }
  workspace.isTrusted = true;
  settings["refactorLsp.server.command"] = { workspaceValue: "/project/.venv/bin/python", globalValue: process.execPath };
  settings["refactorLsp.server.args"] = { workspaceValue: ["evil.py"], globalValue: ["-m", "lsp_server"] };
  const started = launch(FOLDER);
  assert.ok(!("missing" in started));
  assert.equal(started.command, process.execPath);
  assert.deepEqual(started.args, ["-m", "lsp_server"]);
  assert.equal(started.cwd, FOLDER);
  assert.equal(started.env.PYTHONSAFEPATH, "1");
});
