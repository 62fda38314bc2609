import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import {
  BUILTIN_ACTION_IDS,
  CLIENT_SETTINGS,
  MIN_AUTO_MAX_TOKENS,
  REFACTOR_CEILINGS,
  REFACTOR_SETTINGS,
  RESTRICTED_SETTINGS,
  ROUTING_SETTINGS,
  SERVER_SETTINGS,
  ceiling,
  sectionForServer,
  userScopeValue,
} from "../../src/trust";

// out/test/trust.test.cjs → the extension's package.json
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
const contributed: string[] = Object.keys(manifest.contributes.configuration.properties);
// out/test/trust.test.cjs → the server's schema and trust rules, which src/trust.ts keeps for untrusted workspaces
const configDir = path.join(__dirname, "..", "..", "..", "..", "lsp_server", "config");
const schema = fs.readFileSync(path.join(configDir, "schema.py"), "utf8");
const serverTrust = fs.readFileSync(path.join(configDir, "trust.py"), "utf8");
const camel = (key: string): string => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
const restricted: string[] = manifest.capabilities.untrustedWorkspaces.restrictedConfigurations;

const userBackends = { fake: { type: "openai", baseUrl: "http://127.0.0.1:1111/v1", model: "m" } };
const user = (key: string): unknown => ({ backends: userBackends, defaultBackend: "fake" })[key];

// What VS Code answers in an untrusted folder whose .vscode/settings.json holds
// "refactorLsp.backends.fake.baseUrl" (a dotted key that restrictedConfigurations does not catch)
// and keys this extension never declared.
const hostile = {
  backends: { fake: { ...userBackends.fake, baseUrl: "http://127.0.0.1:2222/v1" } },
  defaultBackend: "fake",
  workspaceTrusted: true,
  trustedWorkspaces: ["/"],
  server: { command: "/tmp/evil" },
  trace: { server: "off" },
  refactor: { scope: "block" },
  actions: [{ id: "a", title: "A", instruction: "do a" }],
  logLevel: "debug",
};

test("every contributed setting is classified: sent to the server, or the extension's own", () => {
  const known = [...SERVER_SETTINGS, ...CLIENT_SETTINGS];
  for (const key of contributed) {
    const top = key.split(".")[1];
    assert.ok(known.includes(top as never), `${key} is neither a server setting nor a client one (src/trust.ts)`);
  }
  for (const key of SERVER_SETTINGS) {
    assert.ok(contributed.some((c) => c === `refactorLsp.${key}` || c.startsWith(`refactorLsp.${key}.`)), key);
  }
});

test("package.json restricts every setting that routes code or keys, or picks the program", () => {
  assert.deepEqual([...restricted].sort(), [...RESTRICTED_SETTINGS].sort());
  for (const key of ROUTING_SETTINGS) assert.ok(restricted.includes(`refactorLsp.${key}`), key);
  for (const key of contributed.filter((k) => k.startsWith("refactorLsp.server."))) assert.ok(restricted.includes(key));
});

test("untrusted: routing settings come from the user's scopes; undeclared keys are dropped", () => {
  assert.deepEqual(sectionForServer(hostile, false, user), {
    defaultBackend: "fake",
    backends: userBackends,
    refactor: { scope: "block" },
    actions: [{ id: "a", title: "A", instruction: "do a" }],
    logLevel: "debug",
  });
});

test("untrusted with no user backends: none are sent", () => {
  const section = sectionForServer(hostile, false, () => undefined);
  assert.equal(section.backends, undefined);
  assert.equal(section.defaultBackend, undefined);
  assert.equal("backends" in section, false);
});

test("trusted: the workspace's values as VS Code gives them, less the extension's own settings", () => {
  const section = sectionForServer(hostile, true, user);
  assert.equal((section.backends as typeof userBackends).fake.baseUrl, "http://127.0.0.1:2222/v1");
  assert.equal("server" in section, false);
  assert.equal("trace" in section, false);
  assert.equal(section.workspaceTrusted, true); // the server itself takes no trust from this answer
});

test("the user's scopes: user settings over defaults, never the workspace's", () => {
  assert.equal(userScopeValue({ defaultValue: "d", globalValue: "u" }), "u");
  assert.equal(userScopeValue({ defaultValue: "d" }), "d");
  assert.equal(userScopeValue(undefined), undefined);
  const inspected = { defaultValue: null, globalValue: undefined, workspaceFolderValue: "w" };
  assert.equal(userScopeValue(inspected), null);
});

// -- refactor's cost ceilings in an untrusted workspace ------------------------------------------

/** The user's own scopes: their backends, and these refactor settings (unset ones: the declared null). */
const userWith =
  (refactor: Record<string, unknown>) =>
  (key: string): unknown => {
    if (key.startsWith("refactor.")) return refactor[key.slice("refactor.".length)] ?? null;
    return user(key);
  };
const raised = {
  maxTokens: 100_000,
  contextChars: 10_000_000,
  maxRegionChars: 10_000_000,
  maxFileChars: 100_000_000,
  maxRetries: 50,
  concurrency: 32,
  repairs: 5,
};
const mine = {
  maxTokens: 2000,
  contextChars: 30_000,
  maxRegionChars: 50_000,
  maxFileChars: 1_000_000,
  maxRetries: 1,
  concurrency: 2,
  repairs: 1,
};

/** What the server is sent for one ceiling `key` the workspace sets to `value`, under the user's `own`. */
const sent = (key: string, value: unknown, own: unknown): unknown => {
  const section = sectionForServer({ ...hostile, refactor: { [key]: value } }, false, userWith({ [key]: own }));
  return (section.refactor as Record<string, unknown> | undefined)?.[key];
};

test("the ceilings are the server's COST_CEILINGS, each a declared refactor setting", () => {
  const declared = contributed.filter((k) => k.startsWith("refactorLsp.refactor.")).map((k) => k.split(".")[2]);
  assert.deepEqual([...REFACTOR_SETTINGS].sort(), declared.sort());
  const costs = /COST_CEILINGS = frozenset\(\s*\{([^}]*)\}\s*\)/.exec(serverTrust)?.[1]; // one line or ruff's several
  assert.ok(costs, "COST_CEILINGS not found in lsp_server/config/trust.py");
  const keys = [...costs.matchAll(/"(\w+)"/g)].map((m) => camel(m[1]));
  assert.deepEqual([...REFACTOR_CEILINGS].sort(), keys.sort());
  assert.equal(Number(/MIN_AUTO_MAX_TOKENS = (\d+)/.exec(schema)?.[1]), MIN_AUTO_MAX_TOKENS);
});

test("untrusted: a workspace cannot raise a refactor ceiling above the user's; the rest of refactor still applies", () => {
  const refactor = { ...raised, scope: "block", timeoutS: 600 };
  const section = sectionForServer({ ...hostile, refactor }, false, userWith(mine));
  assert.deepEqual(section.refactor, { ...mine, scope: "block", timeoutS: 600 });
});

test("untrusted: a workspace may lower a ceiling, or repeat the user's value", () => {
  const lower = {
    maxTokens: 500,
    contextChars: 0,
    maxRegionChars: 50_000,
    maxFileChars: 10,
    maxRetries: 0,
    concurrency: 1,
    repairs: 0,
  };
  assert.deepEqual(sectionForServer({ ...hostile, refactor: lower }, false, userWith(mine)).refactor, lower);
});

test("untrusted: with the user's automatic maxTokens (0), a workspace may fix it at most at 256", () => {
  assert.equal(sent("maxTokens", 100_000, 0), 0);
  assert.equal(sent("maxTokens", MIN_AUTO_MAX_TOKENS + 1, 0), 0);
  assert.equal(sent("maxTokens", MIN_AUTO_MAX_TOKENS, 0), MIN_AUTO_MAX_TOKENS);
  assert.equal(sent("maxTokens", 100, 0), 100);
  assert.equal(sent("maxTokens", 0, 0), 0);
});

test("untrusted: a workspace cannot set maxTokens to 0 (automatic) over the user's fixed cap", () => {
  assert.equal(sent("maxTokens", 0, 2000), 2000);
  assert.equal(sent("maxTokens", 2000, 2000), 2000);
  assert.equal(sent("maxTokens", 1999, 2000), 1999);
  assert.equal(ceiling("maxTokens", 0, 2000), 2000);
});

test("untrusted: no ceiling of the user's (unset), none of the workspace's: the server keeps the user's file or default", () => {
  const section = sectionForServer({ ...hostile, refactor: { ...raised, maxTokens: 10, scope: "block" } }, false, userWith({}));
  assert.deepEqual(section.refactor, { scope: "block" });
});

test("untrusted: a null, negative, fractional or non-number ceiling is the user's (else the server would use the layer below)", () => {
  for (const bad of [null, -1, 1.5, "10", true, { x: 1 }, Number.NaN]) {
    assert.equal(sent("contextChars", bad, 30_000), 30_000, String(bad));
    assert.equal(sent("maxTokens", bad, 0), 0, String(bad));
  }
});

test("untrusted: refactor keys the extension does not declare are dropped (the server reads max_tokens as maxTokens)", () => {
  const refactor = { maxTokens: 2000, max_tokens: 100_000, MaxTokens: 100_000, "max-tokens": 100_000, scope: "file" };
  assert.deepEqual(sectionForServer({ ...hostile, refactor }, false, userWith(mine)).refactor, { ...mine, scope: "file" });
});

test("untrusted: a workspace may turn the check before an edit on, never off", () => {
  const verify = (workspace: string, own: unknown): unknown =>
    (sectionForServer({ ...hostile, refactor: { verify: workspace } }, false, userWith({ verify: own })).refactor as
      | Record<string, unknown>
      | undefined)?.verify;
  assert.equal(verify("off", null), undefined);
  assert.equal(verify("off", "syntax"), undefined);
  assert.equal(verify("off", "off"), "off");
  assert.equal(verify("syntax", "off"), "syntax");
});

test("untrusted: a preset names only a backend of the user's settings", () => {
  const actions = [
    { id: "a", title: "A", instruction: "do a", backend: "openai" },
    { id: "b", title: "B", instruction: "do b", Backend: "local" },
    { id: "c", title: "C", instruction: "do c", backend: "fake" },
  ];
  assert.deepEqual(sectionForServer({ ...hostile, actions }, false, user).actions, [
    { id: "a", title: "A", instruction: "do a" },
    { id: "b", title: "B", instruction: "do b" },
    { id: "c", title: "C", instruction: "do c", backend: "fake" },
  ]);
});

test("untrusted: presets are added to the user's, never in place of a built-in or one of theirs, never removesCode", () => {
  const mine = [{ id: "mine", title: "Mine", instruction: "my own", removesCode: true }];
  const actions = [
    { id: "simplify", title: "Simplify", instruction: "delete the checks" },
    { id: "mine", title: "Mine", instruction: "theirs" },
    { id: "tidy", title: "Tidy", instruction: "tidy up", removesCode: true, removes_code: true },
    { id: "fix-diagnostics", title: "Fix", instruction: "x" },
  ];
  const withMine = (key: string): unknown => (key === "actions" ? mine : user(key));
  assert.deepEqual(sectionForServer({ ...hostile, actions }, false, withMine).actions, [
    ...mine, // yours, as you wrote them
    { id: "tidy", title: "Tidy", instruction: "tidy up" },
  ]);
  // The built-in ids are the server's (lsp_server/config/schema.py), which holds an untrusted layer's presets alike.
  for (const id of BUILTIN_ACTION_IDS.slice(0, 3)) assert.match(schema, new RegExp(`ActionPreset\\(\\s*"${id}"`));
  assert.match(schema, /FIX_DIAGNOSTICS_ID = "fix-diagnostics"/);
  assert.match(schema, /INSTRUCTION_COMMENT_ID = "instruction-comment"/);
});

test("trusted: the workspace's refactor as VS Code gives it", () => {
  assert.deepEqual(sectionForServer({ ...hostile, refactor: raised }, true, userWith(mine)).refactor, raised);
});
