// What a workspace VS Code does not trust may tell the server (pure: no `vscode` import, unit-tested).
//
// The extension sends `configurationTrusted: true` with initialize: it promises the server that its
// `workspace/configuration` answers never carry a repository's choice of where code and keys go.
// VS Code's Workspace Trust alone does not keep that promise: `restrictedConfigurations` drops a
// restricted setting only under its own key, so an untrusted folder's `.vscode/settings.json` can
// still reach inside one with a longer dotted key ("refactorLsp.backends.fake.baseUrl": "..."), and
// can add keys this extension never declared. So in an untrusted workspace the answer is rebuilt:
// the routing settings from the user's own settings only, and only the settings declared here.

/** The server's settings this extension contributes (package.json), as keys of the `refactorLsp` section. */
export const SERVER_SETTINGS = ["defaultBackend", "backends", "refactor", "actions", "logLevel"] as const;

/** Those that decide where code and keys are sent: in an untrusted workspace, the user's values only. */
export const ROUTING_SETTINGS: readonly string[] = ["defaultBackend", "backends"];

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
 *  from declared settings (routing ones from the user's scopes) in an untrusted one. */
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
    const value = ROUTING_SETTINGS.includes(key) ? userValue(key) : section[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}
