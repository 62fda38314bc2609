// What a workspace VS Code does not trust may tell the server (pure: no `vscode` import, unit-tested).
//
// The extension sends `configurationTrusted: true` with initialize: it promises the server that its
// `workspace/configuration` answers never carry a repository's choice of where code and keys go,
// which backend serves them, or how much a refactor may cost (lsp_server/config/trust.py,
// `restrict_untrusted`). VS Code's Workspace Trust alone does not keep that promise:
// `restrictedConfigurations` drops a restricted setting only under its own key, so an untrusted
// folder's `.vscode/settings.json` can still reach inside one with a longer dotted key
// ("refactorLsp.backends.fake.baseUrl": "..."), can add keys this extension never declared (the
// server reads "refactorLsp.refactor.max_tokens" as `maxTokens`), and sets every `refactor` key.
// So in an untrusted workspace the answer is rebuilt from the declared settings only: the routing
// ones from the user's own settings, `refactor`'s cost ceilings no higher than the user's own, and
// the rest of `refactor` from the workspace.

/** The server's settings this extension contributes (package.json), as keys of the `refactorLsp` section. */
export const SERVER_SETTINGS = ["defaultBackend", "backends", "refactor", "actions", "logLevel"] as const;

/** Those that decide where code and keys are sent: in an untrusted workspace, the user's values only. */
export const ROUTING_SETTINGS: readonly string[] = ["defaultBackend", "backends"];

/** The declared `refactorLsp.refactor.*` settings (package.json): no other key of `refactor` is sent. */
export const REFACTOR_SETTINGS: readonly string[] = [
  "temperature",
  "scope",
  "editFormat",
  "hunksMinLines",
  "hunksForm",
  "timeoutS",
  "connectTimeoutS",
  "firstTokenTimeoutS",
  "idleTimeoutS",
  "maxRetries",
  "maxTokens",
  "contextChars",
  "maxRegionChars",
  "maxFileChars",
  "concurrency",
  "verify",
  "repairs",
  "preview",
];

/** `refactor`'s ceilings on what one refactor sends and may be billed for, and on how many a batch has
 *  in flight at once (a load on the user's backend and its rate limit): the server's COST_CEILINGS.
 *  An untrusted workspace may only lower them below the user's own values. */
export const REFACTOR_CEILINGS: readonly string[] = [
  "maxTokens",
  "contextChars",
  "maxRegionChars",
  "maxFileChars",
  "maxRetries",
  "concurrency",
  "repairs",
];

/** `maxTokens` 0 sizes the limit from the region, never below this (the server's MIN_AUTO_MAX_TOKENS):
 *  under a user's automatic limit, a workspace may fix one up to it. */
export const MIN_AUTO_MAX_TOKENS = 256;

/** Settings of this extension itself (which program runs): restricted too, never sent to the server. */
export const CLIENT_SETTINGS = ["server", "trace"] as const;

/** Every setting of package.json that a workspace must not choose unless trusted. */
export const RESTRICTED_SETTINGS: readonly string[] = [
  ...ROUTING_SETTINGS.map((key) => `refactorLsp.${key}`),
  "refactorLsp.server.command",
  "refactorLsp.server.args",
];

/** A setting's value from the user's own scopes (user, remote user, default), ignoring the workspace's. */
export type UserValue = (key: string) => unknown;

/** The value of a setting as its `inspect()` shows it, from the scopes the user alone controls. */
export function userScopeValue<T>(inspected: { defaultValue?: T; globalValue?: T } | undefined): T | undefined {
  return inspected?.globalValue ?? inspected?.defaultValue;
}

/** The `refactorLsp` section sent to the server: as VS Code gives it in a trusted workspace, rebuilt
 *  from declared settings (routing ones from the user's scopes, ceilings capped by them) in an untrusted one. */
export function sectionForServer(
  section: Record<string, unknown>,
  trusted: boolean,
  userValue: UserValue,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (trusted) {
    for (const [key, value] of Object.entries(section)) {
      if (!(CLIENT_SETTINGS as readonly string[]).includes(key)) out[key] = value;
    }
    return out;
  }
  for (const key of SERVER_SETTINGS) {
    let value = ROUTING_SETTINGS.includes(key) ? userValue(key) : section[key];
    if (key === "refactor") value = untrustedRefactor(value, userValue);
    if (key === "actions") value = untrustedActions(value, userValue);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** `refactor` from an untrusted workspace: its declared keys, each ceiling at most the user's own. */
function untrustedRefactor(refactor: unknown, userValue: UserValue): Record<string, unknown> | undefined {
  const given = isObject(refactor) ? refactor : {};
  const out: Record<string, unknown> = {};
  for (const key of REFACTOR_SETTINGS) {
    let value = REFACTOR_CEILINGS.includes(key)
      ? ceiling(key, given[key], userValue(`refactor.${key}`))
      : given[key];
    // The check keeps broken code out of the user's files: a workspace may turn it on, not off.
    if (key === "verify" && value === "off" && userValue("refactor.verify") !== "off") value = undefined;
    if (value !== undefined) out[key] = value;
  }
  return Object.keys(out).length ? out : undefined;
}

/** The value sent for a ceiling: the workspace's when it is a count no higher than the user's `mine`,
 *  else the user's own. With none of the user's (unset, null), nothing: the server then keeps the
 *  user's file or its default, which the extension cannot see, so no workspace value can be checked
 *  against it (a workspace's `null` would mean "unset" too, so it gets the user's value, not null). */
export function ceiling(key: string, workspace: unknown, mine: unknown): unknown {
  if (mine === undefined || mine === null) return undefined;
  return isCount(workspace) && isCount(mine) && !raises(key, workspace, mine) ? workspace : mine;
}

/** Would `value` raise the user's ceiling `mine`? As the server's `_raises`. */
export function raises(key: string, value: number, mine: number): boolean {
  if (key === "maxTokens" && mine === 0) return value > MIN_AUTO_MAX_TOKENS; // automatic: a cap up to its minimum
  if (key === "maxTokens" && value === 0) return true; // automatic: twice a large region can pass the user's cap
  return value > mine;
}

/** The server's own actions (lsp_server/config/schema.py `BUILTIN_ACTIONS`): a workspace may not redefine them. */
export const BUILTIN_ACTION_IDS: readonly string[] = [
  "type-hints",
  "docstrings",
  "simplify",
  "fix-diagnostics",
  "instruction-comment",
];

/** `actions` from an untrusted workspace, as the server holds an untrusted layer's: the user's own
 *  presets, then the workspace's added to them, never one with the id of a built-in or of the user's
 *  (its instruction would go to the backend under their title), never with `removesCode` (it turns off
 *  the guard against answers that delete the code), naming only a backend of the user's settings. */
function untrustedActions(actions: unknown, userValue: UserValue): unknown {
  if (!Array.isArray(actions)) return actions;
  const yours = Array.isArray(userValue("actions")) ? (userValue("actions") as unknown[]) : [];
  const taken = new Set([...BUILTIN_ACTION_IDS, ...yours.map((preset) => (isObject(preset) ? preset.id : undefined))]);
  const backends = userValue("backends");
  const named = new Set([...(isObject(backends) ? Object.keys(backends) : []), userValue("defaultBackend")]);
  const added = actions
    .filter((preset) => !isObject(preset) || !taken.has(preset.id))
    .map((preset) =>
      isObject(preset)
        ? Object.fromEntries(
            Object.entries(preset).filter(
              ([k, v]) => snake(k) !== "removes_code" && (snake(k) !== "backend" || named.has(v)),
            ),
          )
        : preset,
    );
  return [...yours, ...added];
}

/** A key as the server reads it (camelCase, kebab-case and snake_case are one key there). */
function snake(key: string): string {
  return key.replace(/(?<=[a-z0-9])([A-Z])/g, "_$1").toLowerCase().replace(/-/g, "_");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What the server accepts for a ceiling: a whole number, 0 or more (else it would use the layer below). */
function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
