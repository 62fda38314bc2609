import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import {
  CLIENT_SETTINGS,
  RESTRICTED_SETTINGS,
  ROUTING_SETTINGS,
  SERVER_SETTINGS,
  sectionForServer,
  userScopeValue,
} from "../../src/trust";

// out/test/trust.test.cjs → the extension's package.json
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
const contributed: string[] = Object.keys(manifest.contributes.configuration.properties);
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
