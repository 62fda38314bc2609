// End-to-end test of the extension in real VS Code: code-server (VS Code 1.139 in a browser) driven
// by playwright-core in Debian's chromium, with the real language server (python -m lsp_server) and
// the loopback fake backend (lsp_server/testing/fake_backend.py). Nothing touches the real home directory.
//
// Workspace Trust is on, as for users: the main folder is trusted at VS Code's startup prompt; the
// last steps open an untrusted folder whose .vscode/settings.json and .refactor-lsp.toml point the
// user's backend at another host (a loopback listener that records every connection) and raise the
// user's refactor.maxTokens (a recording proxy in front of the fake backend shows what it was asked).
// Before them, Apply Clipboard with Prediction (refactorLsp.applySnippet) merges a lazy snippet from the
// clipboard into the function it names, and the batch steps (refactorLsp.refactorEach): one instruction for each of a dozen
// functions as ONE edit that one undo takes back, the selection's code action. Then the review steps (review:
// "preview"): the Refactor Preview lists each change of an answer with its checkbox, what is unticked is not
// applied, one undo takes back what was, and a kept subset that breaks the syntax is undone with a message
// saying why; and a folder with refactor.preview on, where every refactor is reviewed so, change by change.
//
//   bash scripts/setup-test-env.sh && npm run package && node test/e2e.mjs
//
// Environment: REFACTOR_LSP_PYTHON (a Python that imports lsp_server; default: the repo's .venv, else
// python3), VSIX (default: refactor-lsp.vsix), VSCODE_TEST_ENV (default: .test-env), E2E_KEEP=1 keeps
// the temp folder. Screenshots go to test-results/.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const EXT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const REPO = path.resolve(EXT, "../..");
const ENV_DIR = process.env.VSCODE_TEST_ENV || path.join(EXT, ".test-env");
const CODE_SERVER = path.join(ENV_DIR, "code-server/node_modules/.bin/code-server");
const VSIX = path.resolve(process.env.VSIX || path.join(EXT, "refactor-lsp.vsix"));
const RESULTS = path.join(EXT, "test-results");
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "refactor-lsp-vscode-e2e-"));
const WAIT = 30_000;

const SAMPLE = `"""A sample module for the VS Code end-to-end test."""


def load(path):
    data = open(path).read()
    return data.strip()


def shout(words):
    total = 0
    for word in words:
        total = total + len(word)
        print("word", word, "has", len(word), "letters")
        print("so far", total, "letters in", len(words), "words")
        print("and the longest is", max(words, key=len))
        print("and the shortest is", min(words, key=len))
    return total
`;
const RENAMED = SAMPLE.replace("data = open", "content = open").replace("return data.", "return content.");
// Apply Clipboard with Prediction: a snippet as a chat model writes it, lazy markers and all.
const LAZY_SHOUT = "def shout(words):\n    # ... existing code ...\n    return total * 2\n";
const norm = (text) => text.replace(/\s+$/, "");

// The batch steps: one instruction for each of a dozen functions (refactorLsp.refactorEach).
const fn = (n, name = "total") => `def f${n}(value):\n    ${name} = value + ${n}\n    return ${name}\n`;
const functions = (count, renamed = () => false) =>
  Array.from({ length: count }, (_, n) => fn(n, renamed(n) ? "result" : "total")).join("\n\n");
const TWELVE = `"""Twelve functions for the batch steps."""\n\n\n${functions(12)}`;
const TWELVE_RENAMED = TWELVE.replaceAll("total", "result");
const THREE = functions(3);
const RENAME_TOTAL = "rename total to result";

// The review steps: an answer of three changes, a blank line between each (so each is a change of its own).
const STEPS = `def steps():\n    print("one")\n\n    print("two")\n\n    print("three")\n`;
const STEPS_KEPT = STEPS.replace('print("one")', 'log("one")').replace('print("three")', 'log("three")');
// ... and one whose second change closes the bracket its first opens (the snippet the clipboard holds).
const BRACKETS = "def build(items):\n    data = None\n\n    size = 1\n\n    return data, size\n";
const BRACKETS_ANSWER = "def build(items):\n    data = dict(\n\n    size=1)\n\n    return data, size, len(items)\n";

/** A host a hostile repository points the backend at: counts every connection, keeps what it was sent,
 *  and answers HTTP 503 so a refactor routed here fails fast. */
async function startHostile() {
  const hostile = { connections: 0, received: "", url: "" };
  const server = net.createServer((socket) => {
    hostile.connections++;
    socket.on("error", () => {});
    socket.on("data", (chunk) => {
      hostile.received += chunk.toString("latin1");
      socket.end("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  hostile.url = `http://127.0.0.1:${server.address().port}/v1`;
  hostile.close = () => server.close();
  return hostile;
}

/** A loopback proxy in front of `target` that keeps every JSON request body it forwards (`requests`). */
async function startRecorder(target) {
  const recorder = { requests: [], url: "" };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      try {
        if (body.length) recorder.requests.push(JSON.parse(body.toString("utf8")));
      } catch {}
      const upstream = http.request(new URL(req.url, target), { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      });
      upstream.on("error", () => res.destroy());
      res.on("close", () => upstream.destroy()); // a cancelled refactor hangs up on the backend too
      upstream.end(body);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  recorder.url = `http://127.0.0.1:${server.address().port}${new URL(target).pathname}`;
  recorder.close = () => server.close();
  return recorder;
}
const USER_MAX_TOKENS = 2000;
const TRAP_LINK = "[Trust this folder](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22echo%20x%22%7D)";

// -- processes -----------------------------------------------------------------------------------
const children = [];
function start(command, args, options, name) {
  const child = spawn(command, args, { ...options, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const log = fs.createWriteStream(path.join(TMP, `${name}.log`));
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  children.push(child);
  return child;
}
function stopAll() {
  for (const child of children) {
    try {
      process.kill(-child.pid, "SIGTERM"); // its process group: code-server's extension host and our server too
    } catch {}
  }
}
async function freePort() {
  const server = net.createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  return port;
}
async function waitForHttp(url, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within ${ms} ms`);
}

function python() {
  const venv = path.join(REPO, ".venv/bin/python");
  const candidate = process.env.REFACTOR_LSP_PYTHON || (fs.existsSync(venv) ? venv : "python3");
  // An absolute path: code-server's extension host takes PATH from a login shell, not from us.
  return execFileSync(candidate, ["-c", "import sys, lsp_server; print(sys.executable)"], { encoding: "utf8" }).trim();
}

// -- the editor ----------------------------------------------------------------------------------
/** The editor's model text, line by line in position order (the DOM renders spaces as U+00A0). */
async function editorText(page) {
  return page.evaluate(() => {
    const lines = [...document.querySelectorAll(".editor-instance .view-lines .view-line")];
    return lines
      .map((el) => ({ top: parseFloat(el.style.top), text: el.textContent.replace(/\u00a0/g, " ") }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text)
      .join("\n");
  });
}
const statusItem = (page) => page.locator(".statusbar-item").filter({ has: page.locator('[aria-label^="refactor"], [aria-label^="last refactor"]') });
const toast = (page, text) => page.locator(".notification-toast").filter({ hasText: text });

async function palette(page, command) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: WAIT });
  await input.fill(`>${command}`);
  // The row that shows `command`, clicked: Enter would run the top row, which may be another command
  // sharing its words ("Refactor with Prediction: Each Definition in This File..." for "Refactor with Prediction...").
  const row = page.locator(".quick-input-widget .monaco-list-row").filter({ hasText: command }).first();
  await row.waitFor({ timeout: WAIT });
  await row.click();
}

/** The instruction input box of "Refactor with Prediction..." (its title, visible). */
async function instructionBox(page) {
  await page.locator(".quick-input-widget .quick-input-title").filter({ hasText: "Refactor with Prediction" }).waitFor({ timeout: WAIT });
}

async function openFile(page, name) {
  for (let attempt = 0; ; attempt++) {
    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible", timeout: WAIT });
    await input.fill(name);
    const row = page.locator(".quick-input-widget .monaco-list-row").filter({ hasText: name }).first();
    try {
      await row.waitFor({ timeout: 3000 }); // the file index may still be loading: retry
      await page.keyboard.press("Enter");
      await page.locator(".tab.active").filter({ hasText: name }).waitFor({ timeout: WAIT });
      return;
    } catch (error) {
      await page.keyboard.press("Escape");
      if (attempt >= 10) throw error;
    }
  }
}

/** VS Code's startup question for a folder it has not seen: "Do you trust the authors ...?". */
async function answerTrustPrompt(page, trust) {
  const dialog = page.locator(".monaco-dialog-box").filter({ hasText: "trust the authors" });
  await dialog.waitFor({ timeout: 60_000 });
  await dialog.getByRole("button", { name: trust ? "Yes, I trust the authors" : "No, I don't trust the authors" }).click();
  await dialog.waitFor({ state: "hidden", timeout: WAIT });
}
const restrictedMode = (page) => page.locator(".statusbar-item").filter({ hasText: "Restricted Mode" });

/** Records, from now on, every progress notification and status bar spinner shown (however brief). */
async function watchProgress(page) {
  await page.evaluate(() => {
    window.__seen = new Set();
    const look = () => {
      for (const el of document.querySelectorAll(".notification-toast"))
        if (el.querySelector(".monaco-progress-container")) window.__seen.add("toast:" + el.textContent);
      for (const el of document.querySelectorAll(".statusbar-item"))
        if (el.textContent.includes("refactor…")) window.__seen.add("status:" + el.textContent);
    };
    window.__observer?.disconnect();
    window.__observer = new MutationObserver(look);
    window.__observer.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  });
}
const seenProgress = (page) => page.evaluate(() => [...window.__seen]);

/** The Refactor Preview of an edit whose changes need confirmation (one change annotation per change):
 *  its panel, its change rows, and each row's title (VS Code's "label - description": the change's words,
 *  then the definition's), none ticked yet, as VS Code starts a change that needs confirmation. */
async function refactorPreview(page, shot) {
  const panel = page.locator(".bulk-edit-panel");
  const rows = panel.locator(".monaco-list-row").filter({ has: page.locator(".monaco-tl-contents.textedit") });
  await rows.first().waitFor({ timeout: WAIT });
  await page.screenshot({ path: path.join(RESULTS, `${shot}.png`) });
  const listed = await rows.evaluateAll((els) =>
    els.map((el) => ({ title: el.querySelector(".textedit > [title]")?.getAttribute("title"), checked: el.querySelector(".edit-checkbox")?.getAttribute("aria-checked") })),
  );
  if (listed.some((row) => row.checked !== "false")) throw new Error(`a change was ticked before the user chose: ${JSON.stringify(listed)}`);
  const row = (title) => rows.filter({ has: page.locator(`[title="${title}"]`) }).first();
  return { panel, rows, row, titles: listed.map((r) => r.title) };
}

/** Clicks a row's checkbox and waits until it reads `checked`. */
async function tick(row, what, checked) {
  await row.locator(".edit-checkbox").first().click();
  await until(`${what} ${checked ? "ticked" : "unticked"}`, async () => (await row.locator(".edit-checkbox").first().getAttribute("aria-checked")) === String(checked));
}

/** Applies what is ticked in the Refactor Preview, and waits for the panel to let go of its changes. */
async function applyPreview(page, preview, shot) {
  await page.screenshot({ path: path.join(RESULTS, `${shot}.png`) });
  await preview.panel.locator(".buttons .monaco-button").filter({ hasText: "Apply" }).first().click();
  await preview.rows.first().waitFor({ state: "hidden", timeout: WAIT });
}

/** The Refactor Preview: tick the changes titled in `accept`, apply, and return the titles listed. */
async function previewAccept(page, accept) {
  const preview = await refactorPreview(page, "refactor-preview");
  for (const title of accept) await tick(preview.row(title), title, true);
  await applyPreview(page, preview, "refactor-preview-chosen");
  return preview.titles;
}

/** The Refactor Preview, as a reviewer who keeps most of an answer: tick the file's row (every change
 *  in it), untick the changes titled in `drop`, apply; the titles listed. */
async function previewDrop(page, file, drop, shot) {
  const preview = await refactorPreview(page, shot);
  const fileRow = preview.panel.locator(".monaco-list-row").filter({ hasNot: page.locator(".textedit") }).filter({ hasText: file }).first();
  await tick(fileRow, file, true);
  const states = () => preview.rows.evaluateAll((els) => els.map((el) => el.querySelector(".edit-checkbox")?.getAttribute("aria-checked")));
  await until("every change ticked with its file", async () => (await states()).every((state) => state === "true") || (await states()));
  for (const title of drop) await tick(preview.row(title), title, false);
  await applyPreview(page, preview, `${shot}-chosen`);
  return preview.titles;
}

/** Every `workspace/applyEdit` the extension's client received, from its log (src/client.ts logs each one). */
function applyEditsReceived(userData) {
  const logs = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith("Refactor LSP.log")) logs.push(full);
    }
  };
  walk(path.join(userData, "logs"));
  return logs.flatMap((file) => fs.readFileSync(file, "utf8").split("\n")).filter((line) => line.includes("[info] workspace/applyEdit ")).length;
}

async function until(what, check, ms = WAIT) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    last = await check();
    if (last === true) return;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}

// -- the test ------------------------------------------------------------------------------------
async function main() {
  fs.mkdirSync(RESULTS, { recursive: true });
  const py = python();
  const home = path.join(TMP, "home");
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, ".config"),
    XDG_DATA_HOME: path.join(home, ".local/share"),
    XDG_STATE_HOME: path.join(home, ".local/state"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
    CODE_SERVER_CONFIG: path.join(TMP, "code-server.yaml"),
    PATH: `${path.join(ENV_DIR, "node/bin")}:${process.env.PATH}`,
    // No extension marketplace: loopback only (a closed port), so nothing looks up outside hosts.
    EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: "http://127.0.0.1:9/gallery", itemUrl: "http://127.0.0.1:9/item" }),
  };
  for (const key of Object.keys(env)) if (key.startsWith("VSCODE_")) delete env[key];
  for (const dir of [env.XDG_CONFIG_HOME, env.XDG_DATA_HOME, env.XDG_STATE_HOME, env.XDG_CACHE_HOME]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  fs.writeFileSync(env.CODE_SERVER_CONFIG, "auth: none\n");

  // The fake OpenAI backend on loopback: 20 ms a forward pass, drafting from the prediction.
  const backend = start(py, ["-m", "lsp_server.testing.fake_backend", "--kind", "openai", "--port", "0", "--step-ms", "20"], { env, cwd: REPO }, "fake-backend");
  const [line] = await Promise.race([
    once(backend.stdout, "data"),
    new Promise((_, reject) => setTimeout(() => reject(new Error("the fake backend did not start")), 15_000)),
  ]);
  const backendUrl = String(line).trim().split("\n")[0];
  const recorder = await startRecorder(backendUrl);

  const workspace = path.join(TMP, "project");
  fs.mkdirSync(workspace, { recursive: true });
  // The repository carries an `lsp_server/` package of its own: were the server started in the
  // workspace as `python -m lsp_server`, this would run instead of it (with the user's keys).
  const planted = path.join(TMP, "the-repository-package-ran.txt");
  fs.mkdirSync(path.join(workspace, "lsp_server"));
  for (const name of ["__init__.py", "__main__.py"]) {
    fs.writeFileSync(path.join(workspace, "lsp_server", name), `open(${JSON.stringify(planted)}, "w").write("ran")\nraise SystemExit(3)\n`);
  }
  const samplePath = path.join(workspace, "sample.py");
  fs.writeFileSync(samplePath, SAMPLE);
  const twelvePath = path.join(workspace, "twelve.py");
  fs.writeFileSync(twelvePath, TWELVE);
  const stepsPath = path.join(workspace, "steps.py");
  fs.writeFileSync(stepsPath, STEPS);
  const bracketsPath = path.join(workspace, "brackets.py");
  fs.writeFileSync(bracketsPath, BRACKETS);
  const previewProject = path.join(TMP, "preview-project");
  fs.mkdirSync(path.join(previewProject, ".vscode"), { recursive: true });
  fs.writeFileSync(path.join(previewProject, ".vscode/settings.json"), JSON.stringify({ "refactorLsp.refactor.preview": true }));
  const threePath = path.join(previewProject, "three.py");
  fs.writeFileSync(threePath, THREE);

  // A repository the user has not trusted: it points the user's backend `fake` at its own host, in
  // every way a folder can: the restricted setting itself (VS Code drops it), a dotted key reaching
  // inside it (VS Code lets it through), a claim of trust, and the folder's own .refactor-lsp.toml;
  // and it raises the user's token limit, under the declared key and the snake_case one the server also reads.
  const hostile = await startHostile();
  const untrusted = path.join(TMP, "untrusted-project");
  fs.mkdirSync(path.join(untrusted, ".vscode"), { recursive: true });
  fs.writeFileSync(path.join(untrusted, "sample.py"), SAMPLE);
  fs.writeFileSync(
    path.join(untrusted, ".vscode/settings.json"),
    JSON.stringify(
      {
        "refactorLsp.backends": { fake: { type: "openai", baseUrl: hostile.url, model: "fake-model" } },
        "refactorLsp.backends.fake.baseUrl": hostile.url,
        "refactorLsp.workspaceTrusted": true,
        "refactorLsp.trustedWorkspaces": [untrusted],
        "refactorLsp.refactor.maxTokens": 100000,
        "refactorLsp.refactor.max_tokens": 100000,
      },
      null,
      2,
    ),
  );
  // ... and a key whose name is a link that would type into the terminal, were the warning that quotes it clickable.
  fs.writeFileSync(
    path.join(untrusted, ".refactor-lsp.toml"),
    `"${TRAP_LINK}" = 1\ndefault_backend = "fake"\n\n[backends.fake]\ntype = "openai"\nbase_url = "${hostile.url}"\nmodel = "fake-model"\n`,
  );
  const userData = path.join(TMP, "user-data");
  const extensions = path.join(TMP, "extensions");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(
    path.join(userData, "User/settings.json"),
    JSON.stringify(
      {
        "refactorLsp.defaultBackend": "fake",
        // `always`: the prediction on every request, whatever the cost guard (pipeline/prediction_guard.py)
        // makes of this run's small answers (renames of two lines in three accept less than half of it),
        // so each step's message has its acceptance to show.
        "refactorLsp.backends": { fake: { type: "openai", baseUrl: recorder.url, model: "fake-model", prediction: "always" } },
        "refactorLsp.refactor.maxTokens": USER_MAX_TOKENS,
        "refactorLsp.actions": [{ id: "rename-total", title: "Rename total to result", instruction: RENAME_TOTAL }],
        "refactorLsp.trace.server": "messages",
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "workbench.welcomePage.walkthroughs.openOnInstall": false,
        "chat.disableAIFeatures": true,
        "chat.commandCenter.enabled": false,
        "security.workspace.trust.enabled": true,
        "security.workspace.trust.startupPrompt": "once",
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "extensions.ignoreRecommendations": true,
        "git.enabled": false,
        "editor.minimap.enabled": false,
        "editor.accessibilitySupport": "off",
        "files.autoSave": "off",
      },
      null,
      2,
    ),
  );

  // The server program is machine-overridable: in code-server (a remote window), Remote [Machine] settings.
  fs.mkdirSync(path.join(userData, "Machine"), { recursive: true });
  fs.writeFileSync(
    path.join(userData, "Machine/settings.json"),
    JSON.stringify({
      "refactorLsp.server.command": py,
      "refactorLsp.server.args": ["-m", "lsp_server", "--log-file", path.join(TMP, "server.log")],
    }),
  );
  const dirs = ["--user-data-dir", userData, "--extensions-dir", extensions];
  execFileSync(CODE_SERVER, [...dirs, "--install-extension", VSIX, "--force"], { env, stdio: "pipe" });
  const port = await freePort();
  start(
    CODE_SERVER,
    [...dirs, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check",
      "--disable-getting-started-override", "--ignore-last-opened", workspace],
    { env, cwd: workspace },
    "code-server",
  );
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);

  const browser = await chromium.launchPersistentContext(path.join(TMP, "chromium-profile"), {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    env, // the temp HOME and XDG_* folders: Chromium keeps crash reports and dconf there
    viewport: { width: 1400, height: 850 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
  let page = browser.pages()[0] ?? (await browser.newPage());
  const results = { passed: 0, failed: 0 };
  const step = async (name, body) => {
    const started = Date.now();
    try {
      await body();
      results.passed++;
      console.log(`ok - ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    } catch (error) {
      results.failed++;
      const shot = path.join(RESULTS, `failure-${name.replace(/\W+/g, "-")}.png`);
      await page.screenshot({ path: shot }).catch(() => {});
      console.log(`not ok - ${name}: ${error.stack || error}\n  screenshot: ${shot}`);
      throw error;
    }
  };

  try {
    await step("VS Code opens the workspace and the extension starts its server", async () => {
      await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
      await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
      await answerTrustPrompt(page, true);
      await statusItem(page).first().waitFor({ timeout: 60_000 });
      if (await restrictedMode(page).count()) throw new Error("the trusted folder opened in Restricted Mode");
      await openFile(page, "sample.py");
      await until("the sample in the editor", async () => (await editorText(page)).includes("def shout(words):") || (await editorText(page)));
    });

    await step("Refactor with Prediction... renames in the block at the cursor, with progress and stats", async () => {
      await page.locator(".editor-instance .view-line").filter({ hasText: "return" }).first().click(); // inside load()
      await watchProgress(page);
      await palette(page, "Refactor with Prediction...");
      const input = page.locator(".quick-input-widget input");
      await instructionBox(page);
      await input.fill("rename data to content");
      await page.keyboard.press("Enter");
      await until("the renamed code in the editor", async () => norm(await editorText(page)) === norm(RENAMED) || (await editorText(page)));
      const item = statusItem(page).first();
      await until("the speed in the status bar", async () => /^\d+ tok\/s · \d+% accepted$/.test((await item.innerText()).trim()) || (await item.innerText()));
      await toast(page, /refactor-lsp: refactor .* tok\/s · prediction \d+% accepted/).first().waitFor({ timeout: WAIT });
      const seen = await seenProgress(page);
      if (!seen.some((s) => s.startsWith("toast:") && s.includes("Refactor with prediction: rename data to content"))) {
        throw new Error(`no progress notification was shown: ${JSON.stringify(seen)}`);
      }
      if (!seen.some((s) => s.startsWith("status:"))) throw new Error(`no spinner in the status bar: ${JSON.stringify(seen)}`);
      await page.keyboard.press("Control+S");
      await until("the file saved", () => fs.readFileSync(samplePath, "utf8") === RENAMED || fs.readFileSync(samplePath, "utf8"));
    });

    await step("the status bar tooltip has the refactor's figures", async () => {
      await statusItem(page).first().hover();
      const hover = page.locator(".workbench-hover, .monaco-hover").filter({ hasText: "Latency" }).first();
      await hover.waitFor({ timeout: WAIT });
      const text = await hover.innerText();
      for (const part of ["Last refactor", "Time to first token", "Tokens", "tok/s", "accepted", "rejected", "fake (fake-model)", "Applied"]) {
        if (!text.includes(part)) throw new Error(`tooltip lacks ${part}: ${text}`);
      }
      await page.screenshot({ path: path.join(RESULTS, "status-tooltip.png") });
      await page.mouse.move(700, 300);
    });

    await step("Ctrl+Alt+R starts a refactor; Escape cancels it and nothing changes", async () => {
      await page.locator(".editor-instance .view-line").filter({ hasText: "so far" }).first().click(); // inside shout()
      await page.mouse.move(10, 500); // no editor hover: Escape would close it first
      await page.keyboard.press("Control+Alt+R");
      const input = page.locator(".quick-input-widget input");
      await instructionBox(page);
      await input.fill("make it uppercase");
      await page.keyboard.press("Enter");
      await toast(page, /Refactor with prediction: make it uppercase: \d+\/\d+ chars/).first().waitFor({ timeout: WAIT });
      await statusItem(page).filter({ hasText: /refactor… \d+%/ }).first().waitFor({ timeout: WAIT });
      await page.screenshot({ path: path.join(RESULTS, "refactor-running.png") });
      await page.keyboard.press("Escape");
      await toast(page, /refactor-lsp: .*cancel.*nothing was applied/).first().waitFor({ timeout: WAIT });
      await until("the spinner gone", async () => /^\d+ tok\/s · \d+% accepted$/.test((await statusItem(page).first().innerText()).trim()));
      const text = await editorText(page);
      if (norm(text) !== norm(RENAMED)) throw new Error(`the cancelled refactor changed the text:\n${text}`);
    });

    await step("the progress notification's Cancel button cancels a refactor", async () => {
      await page.locator(".editor-instance .view-line").filter({ hasText: "so far" }).first().click();
      await palette(page, "Refactor with Prediction...");
      await instructionBox(page);
      await page.locator(".quick-input-widget input").fill("make it uppercase");
      await page.keyboard.press("Enter");
      const progress = toast(page, "Refactor with prediction: make it uppercase").first();
      await progress.waitFor({ timeout: WAIT });
      await progress.hover();
      await progress.getByRole("button", { name: "Cancel" }).click({ timeout: WAIT });
      await toast(page, "cancelled from the progress notification; nothing was applied").first().waitFor({ timeout: WAIT });
      const text = await editorText(page);
      if (norm(text) !== norm(RENAMED)) throw new Error(`the cancelled refactor changed the text:\n${text}`);
    });

    await step("Show Prediction Statistics lists the backend's medians", async () => {
      await palette(page, "Show Prediction Statistics");
      const row = page.locator(".quick-input-widget .monaco-list-row").filter({ hasText: "fake · with prediction" }).first();
      await row.waitFor({ timeout: WAIT });
      const text = await row.innerText();
      if (!/1 refactor · median [\d.]+ s · \d+ tok\/s · \d+% accepted/.test(text)) throw new Error(`stats row: ${text}`);
      await page.keyboard.press("Escape");
    });

    await step("Restart Server, then refactor again", async () => {
      await palette(page, "Refactor LSP: Restart Server");
      await new Promise((r) => setTimeout(r, 500));
      await page.locator(".editor-instance .view-line").filter({ hasText: "return content" }).first().click();
      await palette(page, "Refactor with Prediction...");
      await instructionBox(page);
      await page.locator(".quick-input-widget input").fill("rename content to text");
      await page.keyboard.press("Enter");
      const expected = norm(RENAMED.replaceAll("content", "text"));
      await until("the second rename", async () => norm(await editorText(page)) === expected || (await editorText(page)), 60_000);
      await until("the spinner gone", async () => /^\d+ tok\/s · \d+% accepted$/.test((await statusItem(page).first().innerText()).trim()));
      await page.screenshot({ path: path.join(RESULTS, "success.png") });
      await page.keyboard.press("Control+S"); // nothing unsaved when the window goes
    });

    await step("Apply Clipboard with Prediction (Ctrl+Alt+V): a lazy snippet merges into the function it names, as ONE edit; the code action offers it", async () => {
      const before = RENAMED.replaceAll("content", "text");
      await until("the sample as the steps above left it", async () => norm(await editorText(page)) === norm(before) || (await editorText(page)));
      // The code action reads the clipboard only when the menu is asked for: the lightbulb, on every cursor
      // move of the steps above, never made the browser refuse a read (an error notification each time).
      if (await toast(page, "Unable to read from the browser's clipboard").count()) {
        throw new Error("the clipboard was read without the user asking (the browser refused it)");
      }
      await browser.grantPermissions(["clipboard-read", "clipboard-write"], { origin: `http://127.0.0.1:${port}` });
      await page.evaluate((text) => navigator.clipboard.writeText(text), LAZY_SHOUT);
      await page.locator(".editor-instance .view-line").filter({ hasText: "return text" }).first().click(); // inside load(): the snippet names shout()
      await page.mouse.move(10, 500);
      // The code action, offered while the clipboard holds code.
      await page.keyboard.press("Control+.");
      const action = page.locator(".action-widget .monaco-list-row").filter({ hasText: "Apply Clipboard with Prediction" }).first();
      await action.waitFor({ timeout: WAIT });
      await page.screenshot({ path: path.join(RESULTS, "apply-code-action.png") });
      await page.keyboard.press("Escape");
      const asked = recorder.requests.length;
      const edits = applyEditsReceived(userData);
      await page.keyboard.press("Control+Alt+V");
      const expected = before.replace("    return total\n", "    return total * 2\n");
      await until("the snippet merged into shout()", async () => norm(await editorText(page)) === norm(expected) || (await editorText(page)));
      await toast(page, /refactor-lsp: apply [\d.]+ s .* tok\/s · prediction \d+% accepted/).first().waitFor({ timeout: WAIT });
      if (recorder.requests.length - asked !== 1) throw new Error(`${recorder.requests.length - asked} requests for one apply`);
      const prediction = recorder.requests.at(-1).prediction?.content ?? "";
      if (!prediction.startsWith("def shout(words):") || prediction.includes("def load")) {
        throw new Error(`the prediction was not the function the snippet names: ${JSON.stringify(prediction.slice(0, 200))}`);
      }
      await until("the applyEdit in the client's log", () => applyEditsReceived(userData) > edits);
      if (applyEditsReceived(userData) - edits !== 1) throw new Error(`${applyEditsReceived(userData) - edits} applyEdit requests for one apply`);
      await page.keyboard.press("Control+S");
      await until("the file saved", () => fs.readFileSync(samplePath, "utf8") === expected || fs.readFileSync(samplePath, "utf8"));
    });

    await step("Each Definition in This File (Ctrl+Alt+Shift+R): a dozen functions at once, ONE edit, one undo restores the file", async () => {
      await openFile(page, "twelve.py");
      await until("twelve.py in the editor", async () => (await editorText(page)).includes("def f0(value):") || (await editorText(page)));
      await page.locator(".editor-instance .view-line").filter({ hasText: "total = value + 1" }).first().click(); // no selection
      await page.mouse.move(10, 500);
      await watchProgress(page);
      const asked = recorder.requests.length;
      const edits = applyEditsReceived(userData);
      await page.keyboard.press("Control+Alt+Shift+R");
      await instructionBox(page);
      await page.locator(".quick-input-widget").filter({ hasText: "each definition in this file" }).waitFor({ timeout: WAIT });
      await page.locator(".quick-input-widget input").fill(RENAME_TOTAL);
      await page.keyboard.press("Enter");
      await toast(page, /refactor-lsp: 12 definitions: 12 applied · [\d.]+ s, \d+ at a time .* tok\/s together/).first().waitFor({ timeout: 60_000 });
      await page.keyboard.press("Control+S");
      await until("every function renamed, on disk", () => fs.readFileSync(twelvePath, "utf8") === TWELVE_RENAMED || fs.readFileSync(twelvePath, "utf8"));
      if (recorder.requests.length - asked !== 12) throw new Error(`${recorder.requests.length - asked} requests for 12 functions`);
      // ONE workspace/applyEdit for the twelve (the client's trace logs every request it receives).
      await until("the applyEdit in the client's log", () => applyEditsReceived(userData) > edits);
      if (applyEditsReceived(userData) - edits !== 1) throw new Error(`${applyEditsReceived(userData) - edits} applyEdit requests for one batch`);
      const seen = await seenProgress(page);
      if (!seen.some((s) => s.startsWith("toast:") && s.includes("Refactor with prediction: rename total to result, each of 12 definitions in the file"))) {
        throw new Error(`no batch progress notification was shown: ${JSON.stringify(seen)}`);
      }
      if (!seen.some((s) => /^status:.*refactor… \d+\/12 · \d+%/.test(s))) throw new Error(`no batch spinner in the status bar: ${JSON.stringify(seen)}`);
      const item = statusItem(page).first();
      await until("the batch's figures in the status bar", async () => /^12\/12 · \d+ tok\/s together · \d+% accepted$/.test((await item.innerText()).trim()) || (await item.innerText()));
      await item.hover();
      const hover = page.locator(".workbench-hover, .monaco-hover").filter({ hasText: "Last batch" }).first();
      await hover.waitFor({ timeout: WAIT });
      const tip = await hover.innerText();
      for (const part of ["12: 12 applied", "at a time", "Latencies added up", "tok/s together"]) {
        if (!tip.includes(part)) throw new Error(`the batch tooltip lacks ${part}: ${tip}`);
      }
      await page.screenshot({ path: path.join(RESULTS, "batch-file.png") });
      await page.mouse.move(700, 300);
      // One undo takes the whole batch back.
      await page.locator(".editor-instance .view-line").filter({ hasText: "result = value + 1" }).first().click();
      await page.keyboard.press("Control+Z");
      await page.keyboard.press("Control+S");
      await until("one undo restored the file, on disk", () => fs.readFileSync(twelvePath, "utf8") === TWELVE || fs.readFileSync(twelvePath, "utf8"));
    });

    await step("a selection over three functions offers the code action for each of them; Ctrl+Alt+Shift+R on a selection", async () => {
      await page.locator(".editor-instance .view-line").filter({ hasText: "total = value + 2" }).first().click();
      await page.locator(".editor-instance .view-line").filter({ hasText: "total = value + 4" }).first().click({ modifiers: ["Shift"] });
      await page.keyboard.press("Control+."); // the code-action menu, asked for this selection
      const title = "Refactor with prediction: Rename total to result, each of the 3 definitions in the selection";
      const action = page.locator(".action-widget .monaco-list-row").filter({ hasText: title }).first();
      await action.waitFor({ timeout: WAIT });
      await page.screenshot({ path: path.join(RESULTS, "batch-selection-action.png") });
      await action.click();
      await toast(page, /refactor-lsp: 3 definitions: 3 applied/).first().waitFor({ timeout: WAIT });
      await page.keyboard.press("Control+S");
      const expected = `"""Twelve functions for the batch steps."""\n\n\n${functions(12, (n) => n >= 2 && n <= 4)}`;
      await until("f2, f3 and f4 renamed, on disk", () => fs.readFileSync(twelvePath, "utf8") === expected || fs.readFileSync(twelvePath, "utf8"));
      // The same key with a selection: each definition in the selection (f5 and f6).
      await page.locator(".editor-instance .view-line").filter({ hasText: "def f5(value)" }).first().click();
      await page.locator(".editor-instance .view-line").filter({ hasText: "total = value + 6" }).first().click({ modifiers: ["Shift"] });
      await page.keyboard.press("Control+Alt+Shift+R");
      await page.locator(".quick-input-widget").filter({ hasText: "each definition in the selection" }).waitFor({ timeout: WAIT });
      await page.locator(".quick-input-widget input").fill(RENAME_TOTAL);
      await page.keyboard.press("Enter");
      await toast(page, /refactor-lsp: 2 definitions: 2 applied/).first().waitFor({ timeout: WAIT });
      await page.keyboard.press("Control+S");
      const more = `"""Twelve functions for the batch steps."""\n\n\n${functions(12, (n) => n >= 2 && n <= 6)}`;
      await until("f5 and f6 renamed too, on disk", () => fs.readFileSync(twelvePath, "utf8") === more || fs.readFileSync(twelvePath, "utf8"));
    });

    await step("Refactor with Prediction (Review)...: the Refactor Preview lists the answer's three changes; one unticked, the file holds the other two; one undo takes both back", async () => {
      await openFile(page, "steps.py");
      await until("steps.py in the editor", async () => norm(await editorText(page)) === norm(STEPS) || (await editorText(page)));
      await page.locator(".editor-instance .view-line").filter({ hasText: 'print("two")' }).first().click();
      const edits = applyEditsReceived(userData);
      await palette(page, "Refactor with Prediction (Review)...");
      await page.locator(".quick-input-widget .quick-input-title").filter({ hasText: "Refactor with Prediction (Review)" }).waitFor({ timeout: WAIT });
      await page.locator(".quick-input-widget input").fill("rename print to log");
      await page.keyboard.press("Enter");
      const titles = await previewDrop(page, "steps.py", ["line 4: `print` → `log`"], "review-preview");
      const expected = [2, 4, 6].map((line) => `line ${line}: \`print\` → \`log\``);
      if (JSON.stringify(titles) !== JSON.stringify(expected)) throw new Error(`the preview's changes: ${JSON.stringify(titles)}`);
      await until("the first and last changes in the editor, not the second", async () => norm(await editorText(page)) === norm(STEPS_KEPT) || (await editorText(page)));
      await toast(page, /refactor-lsp: refactor .*kept 2 of 3 changes/).first().waitFor({ timeout: WAIT });
      await until("one applyEdit for the review", () => applyEditsReceived(userData) - edits === 1 || applyEditsReceived(userData) - edits);
      // The statistics remember how much of the backend's answer was kept.
      await palette(page, "Show Prediction Statistics");
      const kept = page.locator(".quick-input-widget .monaco-list-row").filter({ hasText: "fake · reviewed:" }).first();
      await kept.waitFor({ timeout: WAIT });
      if (!(await kept.innerText()).includes("67% of changes kept · 2 of 3, in 1 review")) throw new Error(`the kept row: ${await kept.innerText()}`);
      await page.keyboard.press("Escape");
      await page.keyboard.press("Control+S");
      await until("the two kept changes, on disk", () => fs.readFileSync(stepsPath, "utf8") === STEPS_KEPT || fs.readFileSync(stepsPath, "utf8"));
      // One undo takes back everything the preview applied.
      await page.locator(".editor-instance .view-line").filter({ hasText: 'print("two")' }).first().click();
      await page.keyboard.press("Control+Z");
      await until("one undo restored the file", async () => norm(await editorText(page)) === norm(STEPS) || (await editorText(page)));
      await page.keyboard.press("Control+S");
      await until("one undo restored the file, on disk", () => fs.readFileSync(stepsPath, "utf8") === STEPS || fs.readFileSync(stepsPath, "utf8"));
    });

    await step("Apply Clipboard with Prediction (Review): a kept subset that leaves a bracket open is undone, the file as it was, and the message says why", async () => {
      await openFile(page, "brackets.py");
      await until("brackets.py in the editor", async () => norm(await editorText(page)) === norm(BRACKETS) || (await editorText(page)));
      await page.evaluate((text) => navigator.clipboard.writeText(text), BRACKETS_ANSWER);
      await page.locator(".editor-instance .view-line").filter({ hasText: "size = 1" }).first().click();
      await palette(page, "Apply Clipboard with Prediction (Review)");
      // Change 2 closes the bracket change 1 opens: keeping 1 and 3 without it leaves an error.
      const titles = await previewDrop(page, "brackets.py", ["line 4: `size = 1` → `size=1)`"], "review-brackets");
      if (titles.length !== 3) throw new Error(`the preview's changes: ${JSON.stringify(titles)}`);
      const message = toast(page, /keeping changes 1 and 3 without change 2 leaves an error: '\(' was never closed at line 2;.*what the preview applied was undone/).first();
      await message.waitFor({ timeout: WAIT });
      await page.screenshot({ path: path.join(RESULTS, "review-refused.png") });
      await until("the file as it was in the editor", async () => norm(await editorText(page)) === norm(BRACKETS) || (await editorText(page)));
      await page.keyboard.press("Control+S");
      await until("the file as it was, on disk", () => fs.readFileSync(bracketsPath, "utf8") === BRACKETS || fs.readFileSync(bracketsPath, "utf8"));
    });

    await step("with refactor.preview on, the Refactor Preview lists each definition's change; one left unticked stays as it was", async () => {
      // A folder whose settings turn the preview on (set before VS Code opens it: a settings file written
      // while it runs takes effect only once its file watcher notices).
      await page.close();
      page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(previewProject)}`);
      await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
      await answerTrustPrompt(page, true);
      await statusItem(page).first().waitFor({ timeout: 60_000 });
      await openFile(page, "three.py");
      await until("three.py in the editor", async () => (await editorText(page)).includes("def f2(value):") || (await editorText(page)));
      await page.locator(".editor-instance .view-line").filter({ hasText: "total = value + 1" }).first().click();
      await palette(page, "Refactor with Prediction: Each Definition in This File...");
      await instructionBox(page);
      await page.locator(".quick-input-widget input").fill(RENAME_TOTAL);
      await page.keyboard.press("Enter");
      // Each change titled with its words, then its definition's.
      const labels = [[0, "2-3", "1-3"], [1, "7-8", "6-8"], [2, "12-13", "11-13"]].map(
        ([n, change, definition]) => `lines ${change}: \`total\` → \`result\` - function \`f${n}\` (lines ${definition})`,
      );
      const listed = await previewAccept(page, [labels[0], labels[2]]);
      if (JSON.stringify(listed) !== JSON.stringify(labels)) throw new Error(`the preview's changes: ${JSON.stringify(listed)}`);
      await page.keyboard.press("Control+S");
      const expected = functions(3, (n) => n !== 1);
      await until("f0 and f2 renamed, f1 as it was, on disk", () => fs.readFileSync(threePath, "utf8") === expected || fs.readFileSync(threePath, "utf8"));
    });

    await step("in an untrusted folder, its settings cannot send code elsewhere: the user's backend refactors", async () => {
      await page.close();
      page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(untrusted)}`);
      await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
      await answerTrustPrompt(page, false);
      await restrictedMode(page).first().waitFor({ timeout: WAIT });
      await statusItem(page).first().waitFor({ timeout: 60_000 });
      await openFile(page, "sample.py");
      await until("the sample in the editor", async () => (await editorText(page)).includes("def shout(words):") || (await editorText(page)));
      await page.locator(".editor-instance .view-line").filter({ hasText: "return" }).first().click(); // inside load()
      const asked = recorder.requests.length;
      await palette(page, "Refactor with Prediction...");
      await instructionBox(page);
      await page.locator(".quick-input-widget input").fill("rename data to content");
      await page.keyboard.press("Enter");
      const reached = async () => {
        await new Promise((r) => setTimeout(r, 300)); // let the request's bytes arrive, to show them
        return new Error(`the untrusted folder's host got ${hostile.connections} connection(s):\n${hostile.received.slice(0, 600)}`);
      };
      await until("the renamed code in the editor", async () => {
        if (hostile.connections) throw await reached();
        return norm(await editorText(page)) === norm(RENAMED) || (await editorText(page));
      });
      await toast(page, /refactor-lsp: refactor .* tok\/s · prediction \d+% accepted/).first().waitFor({ timeout: WAIT });
      // The server said what it ignored (the folder's .refactor-lsp.toml), and nothing reached that host.
      await toast(page, "ignored backends.fake.base_url").first().waitFor({ timeout: WAIT });
      // The key it quotes is text, not a link that runs a command (in the notification list, where
      // every notification stays: a toast may be gone by now).
      await palette(page, "Notifications: Show Notifications");
      const quoted = page.locator(".notifications-center .monaco-list-row").filter({ hasText: "is not a known setting" }).first();
      await quoted.waitFor({ timeout: WAIT });
      await page.screenshot({ path: path.join(RESULTS, "repository-text-not-a-link.png") });
      if (!(await quoted.innerText()).includes("Trust this folder")) throw new Error(`the key is not quoted: ${await quoted.innerText()}`);
      const message = quoted.locator(".notification-list-item-message");
      if ((await message.count()) !== 1) throw new Error("the notification's message element is not where this test looks for links");
      const links = await message.locator("a").evaluateAll((els) => els.map((el) => el.getAttribute("href") ?? el.textContent));
      if (links.length) throw new Error(`the repository's text became a link in the notification: ${JSON.stringify(links)}`);
      await palette(page, "Notifications: Hide Notifications");
      if (hostile.connections) throw await reached();
      // The folder's maxTokens (100000) did not raise the user's (USER_MAX_TOKENS).
      const limits = recorder.requests.slice(asked).map((r) => r.max_tokens ?? r.max_completion_tokens);
      if (!limits.length || limits.some((n) => !(n <= USER_MAX_TOKENS))) {
        throw new Error(`the untrusted folder's maxTokens reached the backend: max_tokens ${JSON.stringify(limits)}`);
      }
      await page.screenshot({ path: path.join(RESULTS, "untrusted.png") });
      await page.keyboard.press("Control+Z");
      await until("the edit undone", async () => norm(await editorText(page)) === norm(SAMPLE) || (await editorText(page)));
    });

    await step("the control: once the user trusts that folder, its settings do route (so the step above can fail)", async () => {
      await palette(page, "Workspaces: Manage Workspace Trust");
      const trustButton = page.locator(".workspace-trust-editor .monaco-button").filter({ hasText: /^Trust( Folder)?$/ }).first();
      await trustButton.click({ timeout: WAIT });
      await until("Restricted Mode gone", async () => (await restrictedMode(page).count()) === 0);
      const modal = page.locator(".monaco-modal-editor-block"); // the trust editor opens as a modal editor
      if (await modal.count()) await palette(page, "View: Close Editor");
      await modal.first().waitFor({ state: "hidden", timeout: WAIT });
      await openFile(page, "sample.py");
      await page.locator(".editor-instance .view-line").filter({ hasText: "return" }).first().click();
      await palette(page, "Refactor with Prediction...");
      await instructionBox(page);
      await page.locator(".quick-input-widget input").fill("rename data to content");
      await page.keyboard.press("Enter");
      // A connection comes before its bytes: wait for the request line, not only the connection.
      await until("a request line from the folder's host", async () => hostile.received.includes("\n"));
      if (!/POST \/v1\/chat\/completions/.test(hostile.received)) throw new Error(`not a refactor request: ${hostile.received.slice(0, 300)}`);
      // ... with the folder's maxTokens, which the untrusted step kept out.
      await until("the folder's max_tokens in that request", async () => /"max_tokens":\s*100000\b/.test(hostile.received) || hostile.received.slice(-300));
    });

    await step("the server never ran from the workspace: the repository's own lsp_server package never ran", async () => {
      if (fs.existsSync(planted)) throw new Error("python -m lsp_server imported the workspace's lsp_server/ package");
    });
  } finally {
    hostile.close();
    recorder.close();
    console.log(`vscode e2e: ${results.passed} passed, ${results.failed} failed`);
    if (results.failed) {
      for (const name of ["server.log", "code-server.log", "fake-backend.log"]) {
        const file = path.join(TMP, name);
        if (fs.existsSync(file)) console.log(`--- ${name} (tail)\n${fs.readFileSync(file, "utf8").slice(-3000)}`);
      }
    }
    await browser.close().catch(() => {});
  }
}

let code = 0;
try {
  await main();
} catch (error) {
  console.error(`e2e failed: ${error.stack || error}`);
  code = 1;
} finally {
  stopAll();
  if (process.env.E2E_KEEP) console.log(`kept ${TMP}`);
  else fs.rmSync(TMP, { recursive: true, force: true, maxRetries: 3 });
}
process.exit(code);
