export type ReviewState = "draft" | "in_review" | "changes_requested" | "approved" | "published" | "archived";

export type ReviewEvent =
  | { type: "submit"; by: string }
  | { type: "request_changes"; by: string; comment: string }
  | { type: "approve"; by: string }
  | { type: "publish"; by: string; at: Date }
  | { type: "archive"; by: string };

export interface HistoryEntry {
  from: ReviewState;
  to: ReviewState;
  event: ReviewEvent["type"];
  by: string;
  at: Date;
  comment?: string;
}

export class InvalidTransitionError extends Error {
  constructor(
    readonly state: ReviewState,
    readonly event: ReviewEvent["type"],
  ) {
    super(`cannot ${event} a document that is ${state}`);
    this.name = "InvalidTransitionError";
  }
}

const TRANSITIONS: Record<ReviewState, Partial<Record<ReviewEvent["type"], ReviewState>>> = {
  draft: { submit: "in_review", archive: "archived" },
  in_review: { request_changes: "changes_requested", approve: "approved", archive: "archived" },
  changes_requested: { submit: "in_review", archive: "archived" },
  approved: { publish: "published", request_changes: "changes_requested", archive: "archived" },
  published: { archive: "archived" },
  archived: {},
};

export type Listener = (entry: HistoryEntry) => void;

export class ReviewWorkflow {
  private cur: ReviewState;
  private readonly hist: HistoryEntry[] = [];
  private readonly listeners = new Set<Listener>();
  private approvals = new Set<string>();

  constructor(
    readonly documentId: string,
    readonly author: string,
    private readonly requiredApprovals = 1,
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.cur = "draft";
  }

  get state(): ReviewState {
    return this.cur;
  }

  get history(): readonly HistoryEntry[] {
    return this.hist;
  }

  can(event: ReviewEvent["type"]): boolean {
    return TRANSITIONS[this.cur][event] !== undefined;
  }

  onTransition(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  dispatch(event: ReviewEvent): ReviewState {
    const next = TRANSITIONS[this.cur][event.type];
    if (next === undefined) {
      throw new InvalidTransitionError(this.cur, event.type);
    }
    if (event.type === "approve") {
      if (event.by === this.author) {
        throw new Error("authors cannot approve their own documents");
      }
      this.approvals.add(event.by);
      if (this.approvals.size < this.requiredApprovals) {
        this.record(this.cur, event);
        return this.cur;
      }
    }
    if (event.type === "submit" || event.type === "request_changes") {
      this.approvals = new Set();
    }
    this.record(next, event);
    return this.cur;
  }

  private record(to: ReviewState, event: ReviewEvent): void {
    const entry: HistoryEntry = {
      from: this.cur,
      to,
      event: event.type,
      by: event.by,
      at: event.type === "publish" ? event.at : this.clock(),
      comment: event.type === "request_changes" ? event.comment : undefined,
    };
    this.cur = to;
    this.hist.push(entry);
    for (const listener of this.listeners) {
      listener(entry);
    }
  }

  lastChangedBy(): string | undefined {
    return this.hist.length > 0 ? this.hist[this.hist.length - 1].by : undefined;
  }
}

export function restore(documentId: string, author: string, entries: HistoryEntry[]): ReviewWorkflow {
  const workflow = new ReviewWorkflow(documentId, author);
  for (const entry of entries) {
    const event = { type: entry.event, by: entry.by, at: entry.at, comment: entry.comment ?? "" } as ReviewEvent;
    workflow.dispatch(event);
  }
  return workflow;
}
