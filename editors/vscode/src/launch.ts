// How the server program is started (pure: no `vscode` import, unit-tested).
//
// Never from the workspace: the program comes from your own settings only (package.json gives
// `server.*` the `machine` scope, and only your scopes are read), a bare name is looked up on PATH
// alone (Windows would try the current folder first), and the server starts in the extension's own
// folder with PYTHONSAFEPATH set, so `python -m lsp_server` cannot import a repository's `lsp_server/`
// package, which would run with your API keys in its environment.
import * as path from "path";

/** The `refactorLsp.server` settings, from your own scopes (user, remote machine). */
export interface ServerSetting {
  command?: string;
  args?: string[];
}

export interface Launch {
  command: string; // absolute
  args: string[];
  cwd: string;
  env: Record<string, string | undefined>;
}

export interface Host {
  home: string;
  folder: string; // the extension's own folder: where the server starts
  env: Record<string, string | undefined>;
  platform: string;
  isExecutable: (file: string) => boolean;
}

export const DEFAULT_COMMAND = "refactor-lsp";

/** The server's command line, folder and environment; or why it cannot start (`missing`). */
export function serverLaunch(setting: ServerSetting, host: Host): Launch | { missing: string } {
  const home = (s: string): string => (s === "~" || s.startsWith("~/") ? host.home + s.slice(1) : s);
  const given = home(setting.command || DEFAULT_COMMAND);
  const command = resolve(given, host);
  if (!command) {
    const where = /[\\/]/.test(given) ? "" : " on PATH";
    return {
      missing:
        `cannot find the language server \`${given}\`${where}. Install it from a checkout of refactor-lsp ` +
        "(`pip install -e /path/to/refactor-lsp`; it is not on PyPI), or set `refactorLsp.server.command` " +
        "in your user settings to its absolute path.",
    };
  }
  const args = (setting.args ?? []).map(home);
  return { command, args, cwd: host.folder, env: { ...host.env, PYTHONSAFEPATH: "1" } };
}

/** The absolute path of `command`: as given when absolute, else the first match on PATH (with PATHEXT
 *  on Windows); a relative path with a folder in it is refused (relative to what: the workspace?). */
function resolve(command: string, host: Host): string | undefined {
  const p = host.platform === "win32" ? path.win32 : path.posix;
  const suffixes = host.platform === "win32" ? ["", ...(host.env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";")] : [""];
  const found = (candidate: string): string | undefined =>
    suffixes.map((ext) => candidate + ext).find((file) => host.isExecutable(file));
  if (p.isAbsolute(command)) return found(command);
  if (/[\\/]/.test(command)) return undefined;
  const dirs = (host.env.PATH ?? host.env.Path ?? "").split(p.delimiter).filter((dir) => p.isAbsolute(dir));
  for (const dir of dirs) {
    const file = found(p.join(dir, command));
    if (file) return file;
  }
  return undefined;
}
