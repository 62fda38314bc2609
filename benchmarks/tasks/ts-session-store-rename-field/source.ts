import { randomBytes, timingSafeEqual } from "node:crypto";

export interface Session {
  id: string;
  userId: string;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
  data: Record<string, unknown>;
  ip?: string;
  userAgent?: string;
}

export interface SessionStoreOptions {
  /** Idle time after which a session expires, in milliseconds. */
  idleTimeoutMs: number;
  /** A session never lives longer than this, however active it is. */
  absoluteTimeoutMs: number;
  /** Sessions kept at most; the least recently seen go first. */
  maxSessions: number;
  /** Sessions one user may hold at once; the oldest go first. */
  maxPerUser: number;
  now?: () => number;
}

export type SessionEvent = "created" | "touched" | "expired" | "evicted" | "destroyed";
export type SessionListener = (event: SessionEvent, session: Session) => void;

const DEFAULTS: SessionStoreOptions = {
  idleTimeoutMs: 30 * 60 * 1000,
  absoluteTimeoutMs: 12 * 60 * 60 * 1000,
  maxSessions: 10_000,
  maxPerUser: 5,
};

function newId(): string {
  return randomBytes(24).toString("base64url");
}

function sameId(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Sessions in memory, for a single process: idle and absolute expiry, a cap on sessions in all and
 * per user, and events for auditing. A Map keeps insertion order, which we use as recency order by
 * deleting and re-inserting a session whenever it is seen.
 */
export class SessionStore {
  private readonly options: SessionStoreOptions;
  private readonly cache = new Map<string, Session>();
  private readonly byUser = new Map<string, Set<string>>();
  private readonly listeners = new Set<SessionListener>();
  private readonly now: () => number;
  private sweeps = 0;

  constructor(options: Partial<SessionStoreOptions> = {}) {
    this.options = { ...DEFAULTS, ...options };
    if (this.options.idleTimeoutMs <= 0 || this.options.absoluteTimeoutMs <= 0) {
      throw new RangeError("session timeouts must be positive");
    }
    if (this.options.maxSessions < 1 || this.options.maxPerUser < 1) {
      throw new RangeError("session limits must be at least 1");
    }
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.sweepIfDue();
  }

  /** Start a session for a user who has just signed in. */
  create(userId: string, data: Record<string, unknown> = {}, meta: { ip?: string; userAgent?: string } = {}): Session {
    if (!userId) {
      throw new TypeError("a session needs a user id");
    }
    const now = this.now();
    const session: Session = {
      id: newId(),
      userId,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: Math.min(now + this.options.idleTimeoutMs, now + this.options.absoluteTimeoutMs),
      data: { ...data },
      ...meta,
    };
    this.enforceUserLimit(userId);
    this.cache.set(session.id, session);
    this.userIds(userId).add(session.id);
    this.enforceTotalLimit();
    this.emit("created", session);
    return session;
  }

  /**
   * The session for an id the client sent, if it is still valid; seeing it slides its idle expiry
   * forward (never past the absolute limit) and makes it the most recently used.
   */
  touch(id: string): Session | undefined {
    const session = this.lookup(id);
    if (!session) {
      return undefined;
    }
    const now = this.now();
    session.lastSeenAt = now;
    session.expiresAt = Math.min(now + this.options.idleTimeoutMs, session.createdAt + this.options.absoluteTimeoutMs);
    this.cache.delete(session.id);
    this.cache.set(session.id, session);
    this.emit("touched", session);
    return session;
  }

  /** The session without touching it (for admin pages: looking must not keep it alive). */
  peek(id: string): Session | undefined {
    return this.lookup(id);
  }

  update(id: string, patch: Record<string, unknown>): Session | undefined {
    const session = this.touch(id);
    if (!session) {
      return undefined;
    }
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined) {
        delete session.data[key];
      } else {
        session.data[key] = value;
      }
    }
    return session;
  }

  /** Sign out: the session ends now. */
  destroy(id: string): boolean {
    const session = this.lookup(id);
    if (!session) {
      return false;
    }
    this.remove(session, "destroyed");
    return true;
  }

  /** Sign out everywhere: every session of the user ends, except `keep` (the one asking). */
  destroyAllFor(userId: string, keep?: string): number {
    const ids = [...(this.byUser.get(userId) ?? [])];
    let ended = 0;
    for (const id of ids) {
      if (keep !== undefined && sameId(id, keep)) {
        continue;
      }
      const session = this.lookup(id);
      if (session) {
        this.remove(session, "destroyed");
        ended += 1;
      }
    }
    return ended;
  }

  sessionsOf(userId: string): Session[] {
    const sessions: Session[] = [];
    for (const id of this.byUser.get(userId) ?? []) {
      const session = this.lookup(id);
      if (session) {
        sessions.push(session);
      }
    }
    return sessions.sort((a, b) => b.lastSeenAt - a.lastSeenAt);
  }

  /** Drop every expired session; returns how many are left. */
  sweep(): number {
    const now = this.now();
    for (const session of [...this.cache.values()]) {
      if (session.expiresAt <= now) {
        this.remove(session, "expired");
      }
    }
    this.sweeps += 1;
    return this.cache.size;
  }

  on(listener: SessionListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** What a restart needs to keep people signed in: the live sessions, oldest first. */
  toJSON(): { version: 1; sessions: Session[] } {
    this.sweep();
    return { version: 1, sessions: [...this.cache.values()].map((session) => ({ ...session, data: { ...session.data } })) };
  }

  static fromJSON(json: unknown, options: Partial<SessionStoreOptions> = {}): SessionStore {
    const store = new SessionStore(options);
    if (typeof json !== "object" || json === null || (json as { version?: unknown }).version !== 1) {
      throw new TypeError("not a saved session store (version 1)");
    }
    const now = store.now();
    for (const raw of (json as { sessions: Session[] }).sessions) {
      if (typeof raw.id !== "string" || typeof raw.userId !== "string" || raw.expiresAt <= now) {
        continue;
      }
      store.cache.set(raw.id, { ...raw, data: { ...raw.data } });
      store.userIds(raw.userId).add(raw.id);
    }
    store.enforceTotalLimit();
    return store;
  }

  stats(): { sessions: number; users: number; sweeps: number; oldestAgeMs: number | null } {
    const now = this.now();
    let oldest: number | null = null;
    for (const session of this.cache.values()) {
      oldest = oldest === null ? session.createdAt : Math.min(oldest, session.createdAt);
    }
    return {
      sessions: this.sweepIfDue(),
      users: this.byUser.size,
      sweeps: this.sweeps,
      oldestAgeMs: oldest === null ? null : now - oldest,
    };
  }

  private lookup(id: string): Session | undefined {
    if (typeof id !== "string" || id.length < 16) {
      return undefined;
    }
    const session = this.cache.get(id);
    if (!session) {
      return undefined;
    }
    if (session.expiresAt <= this.now()) {
      this.remove(session, "expired");
      return undefined;
    }
    return session;
  }

  private remove(session: Session, event: SessionEvent): void {
    this.cache.delete(session.id);
    const ids = this.byUser.get(session.userId);
    if (ids) {
      ids.delete(session.id);
      if (ids.size === 0) {
        this.byUser.delete(session.userId);
      }
    }
    this.emit(event, session);
  }

  private userIds(userId: string): Set<string> {
    let ids = this.byUser.get(userId);
    if (!ids) {
      ids = new Set();
      this.byUser.set(userId, ids);
    }
    return ids;
  }

  private enforceUserLimit(userId: string): void {
    const sessions = this.sessionsOf(userId);
    // sessionsOf sorts the most recent first: the ones past the limit are the oldest.
    for (const session of sessions.slice(this.options.maxPerUser - 1)) {
      this.remove(session, "evicted");
    }
  }

  private enforceTotalLimit(): void {
    const excess = this.cache.size - this.options.maxSessions;
    if (excess <= 0) {
      return;
    }
    let evicted = 0;
    for (const session of this.cache.values()) {
      if (evicted >= excess) {
        break;
      }
      this.remove(session, "evicted");
      evicted += 1;
    }
  }

  private sweepIfDue(): number {
    // A full sweep costs a pass over every session: do it at most once per idle timeout's tenth.
    const every = Math.max(1000, this.options.idleTimeoutMs / 10);
    if (this.now() - this.lastSweepAt >= every) {
      this.lastSweepAt = this.now();
      return this.sweep();
    }
    return this.cache.size;
  }

  private lastSweepAt = 0;

  private emit(event: SessionEvent, session: Session): void {
    for (const listener of this.listeners) {
      try {
        listener(event, session);
      } catch (error) {
        // An audit hook that throws must not sign anyone out or keep anyone in.
        console.error(`session listener failed on ${event}:`, error);
      }
    }
  }
}

export function cookieFor(session: Session, secure = true): string {
  const maxAge = Math.max(0, Math.floor((session.expiresAt - Date.now()) / 1000));
  const parts = [`sid=${session.id}`, "Path=/", "HttpOnly", "SameSite=Lax", `Max-Age=${maxAge}`];
  if (secure) {
    parts.push("Secure");
  }
  return parts.join("; ");
}
