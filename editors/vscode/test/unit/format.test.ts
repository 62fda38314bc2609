import assert from "node:assert/strict";
import { test } from "node:test";
import { RefactorStats, statsRows, statusText, statusTooltip } from "../../src/format";

const stats: RefactorStats = {
  backend: "local",
  model: "qwen",
  prediction: true,
  prediction_via: "prompt",
  scope: "block",
  latency_ms: 2100,
  ttft_ms: 310,
  completion_tokens: 412,
  prompt_tokens: 900,
  accepted_prediction_tokens: 370,
  rejected_prediction_tokens: 50,
  acceptance_rate: 370 / 420,
  tokens_per_s: 196.4,
  action: "rename data to content",
  applied: true,
  notes: [],
};

test("status text shows speed and acceptance", () => {
  assert.equal(statusText(stats), "$(zap) 196 tok/s · 88%");
});

test("status text without prediction or token counts", () => {
  assert.equal(
    statusText({ ...stats, prediction: false, acceptance_rate: null, tokens_per_s: null }),
    "$(zap) 2.10 s · no prediction",
  );
  assert.equal(statusText({ ...stats, applied: false }), "$(circle-slash) 196 tok/s · 88%");
});

test("tooltip lists every figure", () => {
  const tip = statusTooltip(stats);
  for (const part of [
    "**Last refactor**",
    "| Action | rename data to content |",
    "| Latency | 2.10 s |",
    "| Time to first token | 0.31 s |",
    "| Tokens | 412 (prompt 900) |",
    "| Speed | 196 tok/s |",
    "| Prediction | 88% accepted (370 accepted, 50 rejected) via prompt |",
    "| Backend | local (qwen) |",
    "| Applied | yes |",
  ]) {
    assert.ok(tip.includes(part), `${part} in ${tip}`);
  }
  assert.ok(statusTooltip({ ...stats, acceptance_rate: null }).includes("acceptance not reported"));
  assert.ok(statusTooltip({ ...stats, served_by: "openai" }).includes("| Served by | openai |"));
});

test("statistics rows, one per backend and mode", () => {
  const rows = statsRows({
    count: 3,
    backends: [
      {
        backend: "local",
        speedup: 2.5,
        modes: [
          { backend: "local", prediction: true, count: 2, latency_ms: 800, tokens_per_s: 300, acceptance_rate: 0.9 },
          { backend: "local", prediction: false, count: 1, latency_ms: 2000, tokens_per_s: 120, acceptance_rate: null },
        ],
      },
    ],
  });
  assert.deepEqual(
    rows.map((r) => [r.label, r.description]),
    [
      ["local · with prediction", "2 refactors · median 0.80 s · 300 tok/s · 90% accepted"],
      ["local · without prediction", "1 refactor · median 2.00 s · 120 tok/s"],
    ],
  );
  assert.equal(rows[0].detail, "speed-up from the prediction: 2.50×");
});
