import assert from "node:assert/strict";
import { test } from "node:test";
import { progressText, RefactorStats, statsRows, statusText, statusTooltip } from "../../src/format";

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
  summary: "refactor 2.1 s · 412 tok · 196 tok/s · prediction 88% accepted (370 accepted, 50 rejected)",
  status_text: "196 tok/s · 88% accepted",
};

test("status text is the server's status_text, with an icon for whether it was applied", () => {
  assert.equal(statusText(stats), "$(zap) 196 tok/s · 88% accepted");
  assert.equal(statusText({ ...stats, applied: false }), "$(circle-slash) 196 tok/s · 88% accepted");
  // Never rebuilt from the fields: a text unlike them is shown as the server made it.
  assert.equal(
    statusText({ ...stats, prediction: false, tokens_per_s: null, status_text: "2.10 s · no prediction" }),
    "$(zap) 2.10 s · no prediction",
  );
  assert.equal(statusText({ ...stats, status_text: "1 tok/s · 2% accepted" }), "$(zap) 1 tok/s · 2% accepted");
});

test("progress text reads the fields, never the message", () => {
  const progress = {
    token: "refactor-lsp/1",
    uri: "file:///a.py",
    percentage: 42,
    generated_chars: 120,
    predicted_chars: 285,
    elapsed_s: 0.6,
    tokens_per_s: 180.4,
    message: "7/9 chars · 999 tok/s on fake",
  };
  assert.equal(progressText(progress), "42% · 180 tok/s");
  assert.equal(progressText({ ...progress, tokens_per_s: null }), "42%");
});

test("a batch's progress leads with the definitions done", () => {
  const progress = {
    token: "refactor-lsp/2",
    uri: "file:///a.py",
    percentage: 40,
    generated_chars: 900,
    predicted_chars: 2400,
    elapsed_s: 1.5,
    tokens_per_s: 310.2,
    message: "3 of 12 done · running f3, f4 · 999 tok/s together on fake",
    done: 3,
    total: 12,
  };
  assert.equal(progressText(progress), "3/12 · 40% · 310 tok/s");
  assert.equal(progressText({ ...progress, done: 0, tokens_per_s: null }), "0/12 · 40%");
});

/** A batch's record as lsp_server/pipeline/batch_stats.py `batch_record` makes it (12 definitions, one refused). */
const batchStats: RefactorStats = {
  ...stats,
  scope: "each definition",
  latency_ms: 4200,
  ttft_ms: null,
  tokens_per_s: 310.4,
  applied: null,
  summary: "12 definitions: 11 applied, 1 refused · 4.2 s, 4 at a time (their latencies add up to 15.9 s) · ...",
  status_text: "11/12 · 310 tok/s together · 88% accepted",
  batch: {
    totals: {
      targets: 12,
      outcomes: { applied: 11, refused: 1 },
      concurrency: 4,
      wall_ms: 4200,
      latency_sum_ms: 15_900,
    },
    targets: [
      { file: "file:///a.py", definition: "f0", kind: "function", lines: [4, 6], outcome: "applied", reason: null },
      {
        file: "file:///a.py",
        definition: "f3",
        kind: "function",
        lines: [19, 21],
        outcome: "refused",
        reason: "the model's answer was cut off | at the token limit",
      },
    ],
  },
};

test("a batch's tooltip: its totals, wall time against the latencies added up, what was not applied", () => {
  const tip = statusTooltip(batchStats);
  for (const part of [
    "**Last batch**",
    "| Definitions | 12: 11 applied, 1 refused |",
    "| Wall time | 4.20 s, 4 at a time |",
    "| Latencies added up | 15.9 s |",
    "| Speed | 310 tok/s together |",
    "| Applied | some |",
    "| Not applied: f3 | refused: the model's answer was cut off \\| at the token limit |",
  ]) {
    assert.ok(tip.includes(part), `${part} in ${tip}`);
  }
  assert.ok(!tip.includes("| Latency |") && !tip.includes("Not applied: f0"), tip);
  assert.ok(statusTooltip({ ...batchStats, applied: true }).includes("| Applied | every definition |"));
  assert.equal(statusText(batchStats), "$(zap) 11/12 · 310 tok/s together · 88% accepted");
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

test("a repaired refactor: the status bar says so (the server's status_text) and the tooltip says what was mended", () => {
  const repaired: RefactorStats = {
    ...stats,
    checked: "python",
    repaired: true,
    repair_problem: "'(' was never closed at line 12",
    repair_ms: 412,
    status_text: "196 tok/s · 88% accepted · repaired",
  };
  assert.equal(statusText(repaired), "$(zap) 196 tok/s · 88% accepted · repaired");
  const tip = statusTooltip(repaired);
  assert.ok(tip.includes("| Repaired | '\\(' was never closed at line 12, +0.41 s |"), tip);
  assert.ok(tip.includes("| Checked | python |"));
  assert.ok(statusTooltip({ ...repaired, repaired: false, applied: false }).includes("| Repair failed |"));
  assert.ok(!statusTooltip(stats).includes("Repair"));
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

test("a reviewed refactor: the tooltip says how many of its changes were kept; an unreviewed one says nothing of it", () => {
  const reviewed = { ...stats, changes: 3, changes_kept: 2, summary: `${stats.summary} · kept 2 of 3 changes` };
  assert.ok(statusTooltip(reviewed).includes("| Kept | 2 of 3 changes (reviewed) |"));
  assert.ok(statusTooltip({ ...reviewed, changes: 1, changes_kept: 1 }).includes("| Kept | 1 of 1 change (reviewed) |"));
  assert.ok(!statusTooltip(stats).includes("Kept"));
  assert.ok(!statusTooltip({ ...stats, changes: null, changes_kept: null }).includes("Kept"));
});

test("statistics rows: after the speeds, how much of each backend's reviewed answers people kept, per action", () => {
  const rows = statsRows({
    count: 14,
    backends: [{ backend: "cloud", speedup: null, modes: [{ backend: "cloud", prediction: true, count: 14, latency_ms: 900, tokens_per_s: 200, acceptance_rate: 0.8 }] }],
    kept: [
      { backend: "cloud", action: "add type hints", reviews: 12, changes: 50, kept: 41 },
      { backend: "cloud", action: "", reviews: 1, changes: 3, kept: 2 },
    ],
  });
  assert.deepEqual(
    rows.map((r) => [r.label, r.description]),
    [
      ["cloud · with prediction", "14 refactors · median 0.90 s · 200 tok/s · 80% accepted"],
      ["cloud · reviewed: add type hints", "82% of changes kept · 41 of 50, in 12 reviews"],
      ["cloud · reviewed: refactor", "67% of changes kept · 2 of 3, in 1 review"],
    ],
  );
});
