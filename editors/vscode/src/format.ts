// Pure text for the status bar and the statistics view (no `vscode` import: unit-tested with node --test).

// The wire shapes: lsp_server/server/wire.py is their typed source.

/** The `refactorLsp/stats` notification's params (and a `refactorLsp.refactor` reply's `stats`). */
export interface RefactorStats {
  uri?: string;
  backend: string;
  model: string;
  prediction: boolean;
  prediction_via?: string;
  scope?: string;
  latency_ms: number;
  ttft_ms?: number | null;
  completion_tokens?: number | null;
  prompt_tokens?: number | null;
  accepted_prediction_tokens?: number | null;
  rejected_prediction_tokens?: number | null;
  acceptance_rate?: number | null;
  tokens_per_s?: number | null;
  output_chars?: number;
  predicted_chars?: number;
  action?: string;
  served_by?: string;
  notes?: string[];
  /** What read the answer before the edit (`python`, `brackets`, `blocks`, `not checked`, `off`). */
  checked?: string;
  /** A repair: what the check found in the answer, and whether the repaired answer applied (null: none asked). */
  repair_problem?: string;
  repaired?: boolean | null;
  repair_ms?: number | null;
  applied?: boolean | null;
  /** A reviewed refactor (the Refactor Preview, change by change): its answer's changes, and how many were kept. */
  changes?: number | null;
  changes_kept?: number | null;
  /** The server's one-line text: `refactor 2.1 s · 412 tok · 196 tok/s · prediction 88% accepted (...)`. */
  summary: string;
  /** The server's short text for a status bar: `196 tok/s · 88% accepted`, or `0.42 s · no prediction`. */
  status_text: string;
  /** A batch's record only (`refactorLsp.refactorEach`): its totals and every definition's outcome. */
  batch?: BatchRecord;
}

/** `batch` of a batch's stats record (lsp_server/pipeline/batch_stats.py `batch_record`). */
export interface BatchRecord {
  totals: {
    targets: number;
    /** how many definitions ended in each outcome (`applied`, `refused`, `stale`, ...), those that occur */
    outcomes: Record<string, number>;
    concurrency: number;
    wall_ms: number;
    /** the definitions' latencies added up: what each waited while the others ran */
    latency_sum_ms: number;
  };
  targets: BatchTarget[];
}

export interface BatchTarget {
  file: string;
  definition: string;
  kind: string;
  lines: [number, number];
  outcome: string;
  reason: string | null;
}

/** The `refactorLsp/progress` notification's params: a running refactor's live figures. */
export interface RefactorProgress {
  token: string;
  uri: string;
  percentage: number;
  generated_chars: number;
  predicted_chars: number;
  elapsed_s: number;
  tokens_per_s: number | null;
  /** The `$/progress` report's text, for display only: the figures are the fields above. */
  message: string;
  /** A batch's progress only: definitions finished (however they ended), and how many in all. */
  done?: number;
  total?: number;
}

/** One mode of one backend in the `refactorLsp.showStats` reply. */
export interface ModeSummary {
  backend: string;
  prediction: boolean;
  count: number;
  latency_ms: number | null;
  tokens_per_s: number | null;
  acceptance_rate: number | null;
}

/** One backend and action in the `refactorLsp.showStats` reply's `kept`: how much of its reviewed answers people kept. */
export interface KeptSummary {
  backend: string;
  action: string;
  reviews: number;
  changes: number;
  kept: number;
}

export interface StatsReply {
  count: number;
  backends: { backend: string; speedup: number | null; modes: ModeSummary[] }[];
  kept?: KeptSummary[];
}

const percent = (rate: number): string => `${Math.round(rate * 100)}%`;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
const present = <T>(value: T | null | undefined): value is T => value !== null && value !== undefined;

/** `$(zap) 196 tok/s · 88% accepted`: the server's `status_text`, with an icon for whether it was applied. */
export function statusText(stats: RefactorStats): string {
  return `$(${stats.applied === false ? "circle-slash" : "zap"}) ${stats.status_text}`;
}

/** `42% · 180 tok/s`: a running refactor's percentage and live speed, from the progress fields; a
 *  batch's starts with the definitions done, `3/12 · 42% · 310 tok/s` (its rate: the running ones together). */
export function progressText(progress: RefactorProgress): string {
  const parts = [`${progress.percentage}%`];
  if (present(progress.total) && present(progress.done)) parts.unshift(`${progress.done}/${progress.total}`);
  if (present(progress.tokens_per_s)) parts.push(`${Math.round(progress.tokens_per_s)} tok/s`);
  return parts.join(" · ");
}

/** Markdown for the status bar item's tooltip: every figure of the last refactor (or batch). */
export function statusTooltip(stats: RefactorStats): string {
  const rows: [string, string][] = [];
  const batch = stats.batch;
  // What the server quotes (an action's title, names of backends, models, definitions, reasons) as text.
  const md = markdownText;
  if (stats.action) rows.push(["Action", md(stats.action)]);
  if (batch) {
    const { totals } = batch;
    const outcomes = Object.entries(totals.outcomes).map(([name, n]) => `${n} ${name}`);
    rows.push(["Definitions", `${totals.targets}: ${outcomes.join(", ")}`]);
    rows.push(["Wall time", `${seconds(totals.wall_ms)}, ${Math.min(totals.concurrency, totals.targets)} at a time`]);
    if (totals.latency_sum_ms) rows.push(["Latencies added up", seconds(totals.latency_sum_ms)]);
  } else {
    rows.push(["Latency", seconds(stats.latency_ms)]);
  }
  if (present(stats.ttft_ms)) rows.push(["Time to first token", seconds(stats.ttft_ms)]);
  if (present(stats.completion_tokens)) {
    const prompt = present(stats.prompt_tokens) ? ` (prompt ${stats.prompt_tokens})` : "";
    rows.push(["Tokens", `${stats.completion_tokens}${prompt}`]);
  }
  if (present(stats.tokens_per_s)) {
    rows.push(["Speed", `${stats.tokens_per_s.toFixed(0)} tok/s${batch ? " together" : ""}`]);
  }
  if (!stats.prediction) {
    rows.push(["Prediction", "not sent"]);
  } else if (present(stats.acceptance_rate)) {
    const via = stats.prediction_via ? ` via ${md(stats.prediction_via)}` : "";
    rows.push([
      "Prediction",
      `${percent(stats.acceptance_rate)} accepted (${stats.accepted_prediction_tokens ?? 0} accepted, ` +
        `${stats.rejected_prediction_tokens ?? 0} rejected)${via}`,
    ]);
  } else {
    rows.push(["Prediction", "sent (acceptance not reported by the backend)"]);
  }
  rows.push(["Backend", `${md(stats.backend)} (${md(stats.model)})`]);
  if (stats.served_by && stats.served_by !== stats.backend) rows.push(["Served by", md(stats.served_by)]);
  if (stats.scope) rows.push(["Scope", md(stats.scope)]);
  if (batch) {
    const applied = stats.applied === true ? "every definition" : stats.applied === false ? "none" : "some";
    rows.push(["Applied", applied]);
    const failed = batch.targets.filter((t) => !SUCCEEDED.includes(t.outcome));
    for (const target of failed.slice(0, LISTED_FAILURES)) {
      const reason = target.reason ? `: ${md(target.reason)}` : "";
      rows.push([`Not applied: ${md(target.definition)}`, `${md(target.outcome)}${reason}`]);
    }
    if (failed.length > LISTED_FAILURES) rows.push(["Not applied", `and ${failed.length - LISTED_FAILURES} more`]);
  } else {
    rows.push(["Applied", stats.applied === true ? "yes" : stats.applied === false ? "no" : "unknown"]);
  }
  if (present(stats.changes) && present(stats.changes_kept)) {
    rows.push(["Kept", `${stats.changes_kept} of ${stats.changes} change${stats.changes === 1 ? "" : "s"} (reviewed)`]);
  }
  if (present(stats.repaired)) {
    const took = present(stats.repair_ms) ? `, +${seconds(stats.repair_ms)}` : "";
    rows.push([stats.repaired ? "Repaired" : "Repair failed", `${md(stats.repair_problem ?? "")}${took}`]);
  }
  if (stats.checked) rows.push(["Checked", md(stats.checked)]);
  if (stats.notes?.length) rows.push(["Notes", stats.notes.map(md).join("; ")]);
  const cell = (text: string): string => text.replace(/\|/g, "\\|");
  const table = rows.map(([k, v]) => `| ${cell(k)} | ${cell(v)} |`).join("\n");
  const title = batch ? "Last batch" : "Last refactor";
  return `**${title}**\n\n| | |\n|---|---|\n${table}\n\nClick for the statistics of all refactors.`;
}

/** `text` (the server's, quoting a model, a backend, a repository's names) as markdown that shows it as
 *  it is: its markdown punctuation escaped, so no link, image or emphasis comes of it (`:` and `.`: no
 *  autolinked URL either). A table cell's `|` is the table's to escape. */
export function markdownText(text: string): string {
  return text.replace(/[\\`*_{}[\]()!<>~&:.]/g, "\\$&");
}

/** A batch definition's outcomes that count as done (lsp_server/pipeline/batch.py `SUCCEEDED`). */
const SUCCEEDED = ["applied", "edit", "unchanged"];
const LISTED_FAILURES = 5; // in the tooltip; the final message lists the first ones too

/** Quick pick rows for `refactorLsp.showStats`: one per backend and mode; then, for the answers people
 *  reviewed change by change, one per backend and action with the share of the changes they kept. */
export function statsRows(reply: StatsReply): { label: string; description: string; detail?: string }[] {
  const kept = (reply.kept ?? []).map((k) => ({
    label: `${k.backend} · reviewed: ${k.action || "refactor"}`,
    description:
      `${percent(k.changes ? k.kept / k.changes : 0)} of changes kept · ${k.kept} of ${k.changes}, ` +
      `in ${k.reviews} review${k.reviews === 1 ? "" : "s"}`,
  }));
  return [...speedRows(reply), ...kept];
}

function speedRows(reply: StatsReply): { label: string; description: string; detail?: string }[] {
  return reply.backends.flatMap((backend) =>
    backend.modes.map((mode) => {
      const parts = [`${mode.count} refactor${mode.count === 1 ? "" : "s"}`];
      if (present(mode.latency_ms)) parts.push(`median ${seconds(mode.latency_ms)}`);
      if (present(mode.tokens_per_s)) parts.push(`${mode.tokens_per_s.toFixed(0)} tok/s`);
      if (present(mode.acceptance_rate)) parts.push(`${percent(mode.acceptance_rate)} accepted`);
      return {
        label: `${backend.backend} · ${mode.prediction ? "with prediction" : "without prediction"}`,
        description: parts.join(" · "),
        detail: present(backend.speedup) ? `speed-up from the prediction: ${backend.speedup.toFixed(2)}×` : undefined,
      };
    }),
  );
}
