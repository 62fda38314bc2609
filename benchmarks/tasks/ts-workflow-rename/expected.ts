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
  private currentState: ReviewState;
  private readonly transitionLog: HistoryEntry[] = [];
  private readonly listeners = new Set<Listener>();
  private approvals = new Set<string>();

  constructor(
    readonly documentId: string,
    readonly author: string,
    private readonly requiredApprovals = 1,
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.currentState = "draft";
  }

  get state(): ReviewState {
    return this.currentState;
  }

  get history(): readonly HistoryEntry[] {
    return this.transitionLog;
  }

  can(event: ReviewEvent["type"]): boolean {
    return TRANSITIONS[this.currentState][event] !== undefined;
  }

  onTransition(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  dispatch(event: ReviewEvent): ReviewState {
    const next = TRANSITIONS[this.currentState][event.type];
    if (next === undefined) {
      throw new InvalidTransitionError(this.currentState, event.type);
    }
    if (event.type === "approve") {
      if (event.by === this.author) {
        throw new Error("authors cannot approve their own documents");
      }
      this.approvals.add(event.by);
      if (this.approvals.size < this.requiredApprovals) {
        this.record(this.currentState, event);
        return this.currentState;
      }
    }
    if (event.type === "submit" || event.type === "request_changes") {
      this.approvals = new Set();
    }
    this.record(next, event);
    return this.currentState;
  }

  private record(to: ReviewState, event: ReviewEvent): void {
    const entry: HistoryEntry = {
      from: this.currentState,
      to,
      event: event.type,
      by: event.by,
      at: event.type === "publish" ? event.at : this.clock(),
      comment: event.type === "request_changes" ? event.comment : undefined,
    };
    this.currentState = to;
    this.transitionLog.push(entry);
    for (const listener of this.listeners) {
      listener(entry);
    }
  }

  lastChangedBy(): string | undefined {
    return this.transitionLog.length > 0 ? this.transitionLog[this.transitionLog.length - 1].by : undefined;
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
