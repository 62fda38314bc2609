// Bundles the extension into out/extension.js (vscode-languageclient included, `vscode` external),
// and the unit tests into out/test/ (`vscode` there is test/unit/vscode-stub.ts, the language client
// test/unit/languageclient-stub.ts: no editor needed).
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const extension = {
  entryPoints: ["src/extension.ts"],
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  outfile: "out/extension.js",
  external: ["vscode"],
  minify: production,
  sourcemap: !production,
  sourcesContent: false,
  logLevel: "warning",
};
const tests = {
  entryPoints: ["test/unit/*.test.ts"],
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  outdir: "out/test",
  outExtension: { ".js": ".cjs" },
  alias: { vscode: "./test/unit/vscode-stub.ts", "vscode-languageclient/node": "./test/unit/languageclient-stub.ts" },
  logLevel: "warning",
};

if (watch) {
  await (await esbuild.context(extension)).watch();
} else {
  await esbuild.build(extension);
  if (!production) await esbuild.build(tests);
}
